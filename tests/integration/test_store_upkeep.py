"""Store upkeep never changes a bundle, and nothing put where the store's key or size
cap should be hangs or crashes bundler (issue 28, items 4 and 6).

A bundle's runtime files are hard links to the store's objects: one inode. Evicting an
object (the size cap, `cache prune`) must unlink it without touching that inode's mode,
or every bundle linking it changes: other users lose read access, and the file becomes
writable through every link."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.formats.manifest import find_manifest
from bundler.pack.store.store import Store
from bundler.pack.store.upkeep import size_cap, trim
from tests.harness.packing import Workspace, make_workspace, run_cli
from tests.integration.test_hostile_files import make_fifo, needs_fifo, run_bounded


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


def _bundle_files(workspace: Workspace) -> list[Path]:
    found = find_manifest(workspace.dist)
    return [found.root / entry.path for entry in found.manifest.files]


def _modes(paths: list[Path]) -> dict[Path, int]:
    return {path: stat.S_IMODE(path.stat().st_mode) for path in paths}


def _readable_by_another_user(files: list[Path]) -> str:
    """What a second user (`nobody`) gets reading each file: "" if all were read, else
    the error. The child enters the runtime folder as root, then drops to `nobody`:
    the pytest temp folders above it are private to root, the bundle's own are not."""
    import pwd  # POSIX only; the caller runs this as root

    nobody = pwd.getpwnam("nobody")
    script = (f"import os, sys\nos.chdir(sys.argv[1])\nos.setgid({nobody.pw_gid})\n"
              f"os.setuid({nobody.pw_uid})\n"
              "for name in sys.argv[2:]:\n    open(name, 'rb').read(1)\n")
    done = subprocess.run([sys.executable, "-c", script, str(files[0].parent),
                           *(f.name for f in files)], capture_output=True, text=True,
                          check=False, timeout=60)
    return "" if done.returncode == 0 else done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("how", ["size-cap", "prune"])
def test_evicting_an_object_leaves_the_bundles_file_as_it_was(
        packed: Workspace, store: Store, capsys: pytest.CaptureFixture[str],
        how: str) -> None:
    files = _bundle_files(packed)
    before = _modes(files)
    assert all(not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
               for mode in before.values())
    if how == "size-cap":
        assert trim(store, 1, frozenset())
    else:
        packed.spec.with_name("app.spec.lock").unlink()   # nothing pins them now
        code, out, err = run_cli(capsys, "cache", "prune")
        assert code == 0 and "removed:" in out, err
    assert list(store.all_objects()) == []
    assert _modes(files) == before   # not made 0600 (unreadable to others), not writable
    if os.getuid() == 0:
        assert _readable_by_another_user(files) == ""


def test_a_store_folder_made_read_only_is_still_evicted_without_a_chmod_of_the_file(
        packed: Workspace, store: Store) -> None:
    files = _bundle_files(packed)
    before = _modes(files)
    for folder in store.objects.iterdir():
        folder.chmod(0o555)
    assert trim(store, 1, frozenset())
    assert list(store.all_objects()) == [] and _modes(files) == before


@needs_fifo
@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "dangling-link"])
def test_a_key_file_that_is_not_a_file_is_passed_over_without_hanging(
        packed: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        planted: str) -> None:
    """The key file is the user's (not the store's): pack warns and packs without the
    store; `cache` refuses naming it (exit 2). Never a hang, a MemoryError or exit 3."""
    config = tmp_path / "config"
    key = config / "bundler" / "store-key"
    key.parent.mkdir(parents=True)
    if planted == "fifo":
        make_fifo(key)
    elif planted == "dev-zero":
        key.symlink_to("/dev/zero")
    else:
        key.symlink_to(tmp_path / "gone")
    monkeypatch.delenv("BUNDLER_STORE_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    done = run_bounded("pack", packed.spec)
    assert done.returncode == 0, done.stderr
    assert f"{key}: the runtime store's key is" in done.stdout + done.stderr
    assert "packing without it" in done.stdout + done.stderr
    assert not (tmp_path / "gone").exists()   # nothing written through the link
    for command in (("cache",), ("cache", "prune")):
        done = run_bounded(*command)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"bundler: error: {key}: "), done.stderr
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "1e400", "-1", "9" * 400, "1e3", "12Q"])
def test_a_size_cap_that_is_not_a_size_is_refused_in_one_line(
        packed: Workspace, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], value: str) -> None:
    monkeypatch.setenv("BUNDLER_STORE_MAX", value)
    code, _, err = run_cli(capsys, "cache")
    assert code == 2, err
    assert err.startswith(f"bundler: error: BUNDLER_STORE_MAX={value!r} is not a size"), err
    code, out, err = run_cli(capsys, "pack", packed.spec)   # the store is a cache: a warning
    assert code == 0 and "is not a size" in out + err, err


@pytest.mark.parametrize("value, size", [("20G", 20 << 30), ("1.5M", 3 << 19), ("0", 0),
                                         ("500kb", 500 << 10), (".5K", 512), ("7", 7)])
def test_sizes_the_cap_takes(value: str, size: int) -> None:
    assert size_cap({"BUNDLER_STORE_MAX": value}) == size


@needs_fifo
def test_a_fifo_where_a_stored_file_should_be_is_passed_over(
        packed: Workspace, store: Store) -> None:
    """Hashing opens what it hashes without blocking and refuses what is not a file:
    the pack reads the input again instead of waiting on the pipe."""
    first = next(iter(store.all_objects()))
    make_fifo(first)
    done = run_bounded("pack", packed.spec)
    assert done.returncode == 0, done.stderr
    assert any(path.is_file() for path in store.all_objects())
