"""The store is this user's, or it is not used (issue 42, item 1; docs/store.md, "Where it
is"): every folder and file below its root owned by the user running bundler and
writable by no one else, no links in it; the store's key readable by that user only;
and `cache prune` never forgets a registration a pack is making.

An attack (#7): with `objects/` alone mode 777, another user (uid 1234) planted a
correct object; the next pack hard-linked it into the bundle (a DLL of theirs, which they
then rewrote). Tests that plant another user's files need root (os.chown)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

import bundler.pack.store.upkeep as upkeep
from bundler.formats.manifest import find_manifest
from bundler.pack.store.store import Store
from tests.harness.packing import Workspace, make_workspace, run_cli

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX owners and modes")
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="planting another user's file needs root (os.chown)")
OTHER_UID = 1234
NOT_USED = ": not used"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("BUNDLER_STORE", str(tmp_path / "store"))
    return Store(tmp_path / "store", bytes.fromhex(os.environ["BUNDLER_STORE_KEY"]))


@pytest.fixture
def packed(tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> Workspace:
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    code, _, err = run_cli(capsys, "pack", str(workspace.spec))
    assert code == 0, err
    return workspace


def _runtime_files(workspace: Workspace) -> list[Path]:
    found = find_manifest(workspace.dist)
    return [found.root / entry.path for entry in found.manifest.files]


def _plant_foreign(store: Store, workspace: Workspace) -> Path:
    """Another user's copy of a bundle file, put in the store as its object (the right
    bytes under the right name: only its owner gives it away)."""
    shipped = _runtime_files(workspace)[0]
    data = shipped.read_bytes()
    target = store.object_path(hashlib.sha256(data).hexdigest())
    target.unlink()
    target.write_bytes(data)
    os.chown(target, OTHER_UID, OTHER_UID)
    return target


def _objects_open(store: Store) -> Path:
    (store.root / "objects").chmod(0o777)
    return store.root / "objects"


def _fresh_open(store: Store) -> Path:
    (store.root / "fresh").chmod(0o777)
    return store.root / "fresh"


def _record_open(store: Store) -> Path:
    record = next((store.root / "sources").iterdir())
    record.chmod(0o666)
    return record


def _a_link(store: Store) -> Path:
    link = store.root / "sources" / ("0" * 64)
    link.symlink_to("/etc/hostname")
    return link


@as_root
@pytest.mark.parametrize("opened, why", [
    (_objects_open, "writable by other users"),
    (lambda store: None, f"another user's (uid {OTHER_UID})"),
], ids=["objects-mode-777", "object-of-another-user"])
def test_another_users_object_is_never_linked_into_a_bundle(
        packed: Workspace, store: Store, capsys: pytest.CaptureFixture[str],
        opened: Callable[[Store], Path | None], why: str) -> None:
    """The attack as found: the bundle is removed, the pack takes nothing from the
    store (said once), and every runtime file of the new bundle is this user's."""
    planted = _plant_foreign(store, packed)
    culprit = opened(store) or planted
    shutil.rmtree(packed.dist)
    code, out, err = run_cli(capsys, "pack", packed.spec, "--recheck")
    assert code == 0, err
    said = f"{store.root}: the runtime store holds {culprit}, which is {why}{NOT_USED}"
    assert (out + err).count(said) == 1, out + err
    assert (out + err).count(NOT_USED) == 1
    for path in _runtime_files(packed):
        facts = path.stat()
        assert facts.st_uid == os.getuid(), path
        assert facts.st_ino != planted.stat().st_ino


@pytest.mark.parametrize("opened, why", [
    (_fresh_open, "writable by other users"), (_record_open, "writable by other users"),
    (_a_link, "a link (bundler puts none in its store"),
], ids=["fresh-mode-777", "record-mode-666", "a-link"])
def test_a_store_entry_others_can_write_turns_the_store_off(
        packed: Workspace, store: Store, capsys: pytest.CaptureFixture[str],
        opened: Callable[[Store], Path], why: str) -> None:
    culprit = opened(store)
    code, out, err = run_cli(capsys, "pack", packed.spec)
    assert code == 0, err
    said = f"{store.root}: the runtime store holds {culprit}, which is {why}"
    assert (out + err).count(said) == 1 and (out + err).count(NOT_USED) == 1, out + err
    assert "up to date" not in out   # fresh/ is not read either
    code, _, err = run_cli(capsys, "cache")
    assert code == 2 and said in err


def _key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("BUNDLER_STORE_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "bundler" / "store-key"


@pytest.mark.parametrize("mode, folder_mode, why", [
    (0o644, 0o700, "readable or writable by other users"),
    (0o600, 0o777, "in a folder other users can write"),
], ids=["key-0644", "key-folder-0777"])
def test_a_store_key_others_can_read_is_not_used(
        packed: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], mode: int, folder_mode: int, why: str) -> None:
    """Whoever read the key can seal records the store then believes."""
    key = _key_file(tmp_path, monkeypatch)
    key.parent.mkdir(parents=True)
    key.write_text("ab" * 32 + "\n")
    key.chmod(mode)
    key.parent.chmod(folder_mode)
    code, out, err = run_cli(capsys, "pack", packed.spec)
    assert code == 0, err
    said = f"{key}: the runtime store's key is {why}"
    assert (out + err).count(said) == 1 and "packing without it" in out + err, out + err
    code, _, err = run_cli(capsys, "cache")
    assert code == 2 and said in err


def test_under_a_umask_of_002_the_store_and_key_stay_the_users_alone(
        tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Many Linux distributions give users a umask of 002: the folders and files the
    store makes must still be writable by no one else, or the next pack refuses the
    store it made itself."""
    key = _key_file(tmp_path, monkeypatch)
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    was = os.umask(0o002)
    try:
        for _ in range(2):
            code, out, err = run_cli(capsys, "pack", workspace.spec, "--recheck")
            assert code == 0 and NOT_USED not in out + err, out + err
    finally:
        os.umask(was)
    assert "from the store" in out, out
    for path in [store.root, *store.root.rglob("*")]:
        assert not path.lstat().st_mode & (stat.S_IWGRP | stat.S_IWOTH), path
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700


def test_prune_leaves_a_registration_being_written(
        packed: Workspace, store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    """#24: a registration is a temporary file until it is renamed into place; prune
    took it for a damaged one and deleted it under the pack. A killed pack's is debris."""
    locks = store.root / "locks"
    writing = locks / f".{next(locks.iterdir()).name}.abc123"
    writing.write_bytes(b"")
    killed = locks / ".killed.xyz789"
    killed.write_bytes(b"{")
    os.utime(killed, (1.0, 1.0))
    code, out, err = run_cli(capsys, "cache", "prune")
    assert code == 0, err
    assert writing.exists() and not killed.exists()
    assert "pins" in out and "gone" not in out


def test_prune_never_forgets_a_lock_registered_while_it_looks(
        packed: Workspace, store: Store, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A lock missing when prune looks (a pack swapping it in) whose pack registers it
    just after: the registration the pack made stays."""
    lock = packed.spec.with_name("app.spec.lock")
    kept = lock.read_bytes()
    lock.unlink()
    looked = []

    def racing(path: Path) -> bool:
        if path == lock and not looked:   # the pack puts its lock in place and registers
            looked.append(path)
            lock.write_bytes(kept)
            store.register_lock(lock, "r")
            return False
        return path.is_file()

    monkeypatch.setattr(upkeep, "lock_exists", racing)
    code, _, err = run_cli(capsys, "cache", "prune")
    assert code == 0 and looked, err
    assert [found.resolve() for _, found, _ in store.registered_locks()] == [lock.resolve()]
