"""The store proves what it hands out: attacks by someone who can write the store (a CI
cache restored from another branch) but not the inputs or the store's key, and the
store as a cache that may fail without failing a pack (docs/store.md, "What a store
writer can and cannot do").
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from bundler.formats.manifest import find_manifest
from bundler.pack.pipeline import PackResult, pack
from bundler.pack.spec import load_spec
from bundler.pack.store.seal import seal
from bundler.pack.store.store import Store, open_store
from tests.harness.packing import Workspace, make_workspace, run_cli
from tests.harness.winenv.paths import RECIPES

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("BUNDLER_STORE", str(tmp_path / "store"))
    found = open_store(os.environ)
    assert found is not None
    return found


def _workspace(root: Path, standin_zip: Path, toolkit: Path, framework: Path,
               extra_runtime: str = "", recipe: str = SEED) -> Workspace:
    """A workspace with its own copies of the zip and the toolkit (tests change them)."""
    root.mkdir(parents=True)
    (root / standin_zip.name).write_bytes(standin_zip.read_bytes())
    own_toolkit = root / "toolkit"
    (own_toolkit / "bin").mkdir(parents=True)
    for dll in (toolkit / "bin").iterdir():
        (own_toolkit / "bin" / dll.name).write_bytes(dll.read_bytes())
    return make_workspace(root / "ws", framework, {"cudnn": root / standin_zip.name,
                                                   "cuda": own_toolkit},
                          recipe=recipe, extra_runtime=extra_runtime)


def _pack(workspace: Workspace, **options: Any) -> PackResult:
    return pack(load_spec(workspace.spec), **options)


def _shipped(result: PackResult) -> dict[str, bytes]:
    found = find_manifest(result.out)
    return {e.name: (found.root / e.path).read_bytes() for e in found.manifest.files}


def _records(store: Store) -> list[Path]:
    return sorted((store.root / "sources").iterdir())


@pytest.fixture
def packed(tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path) -> tuple[Workspace, PackResult]:
    workspace = _workspace(tmp_path / "one", standin_zip, standin_toolkit, standin_framework)
    return workspace, _pack(workspace)


def _forge(store: Store, record: Path, change: Any, key: bytes = b"") -> None:
    """Rewrite a record's body with `change`; seal it with `key` (the attacker's guess)
    or keep the old seal."""
    data = json.loads(record.read_text())
    body = data["body"]
    change(body)
    if key:
        data = seal(key, "source", record.name, body)
    else:
        data["body"] = body
    record.write_text(json.dumps(data))


def _plant(store: Store, data: bytes) -> str:
    """Put chosen bytes into the store as a proper object (content-addressed)."""
    import hashlib

    sha = hashlib.sha256(data).hexdigest()
    path = store.object_path(sha)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return sha


@pytest.mark.parametrize("source", ["cuda", "cudnn"])
def test_a_forged_record_never_ships_a_chosen_file(
        packed: tuple[Workspace, PackResult], store: Store, source: str) -> None:
    """A changed DLL planted as an object and a record pointing a member at it: the
    seal does not verify (the attacker has no key), the input is read again."""
    workspace, first = packed
    good = _shipped(first)
    evil = _plant(store, b"MZ evil bytes of the attacker's choosing")
    member = "bin/cudart64_101.dll" if source == "cuda" else "bin/cudnn64_8.dll"
    for record in _records(store):
        _forge(store, record, lambda body: body["members"].__setitem__(member, evil)
               if member in body["members"] else None, key=b"\0" * 32)
    shutil.rmtree(first.out)   # nothing to take but the store's (or the inputs') files
    again = _pack(workspace)
    assert _shipped(again) == good
    assert again.origin.files.get("read", 0) > 0


def test_a_record_sealed_with_the_key_still_cannot_swap_a_zips_members(
        packed: tuple[Workspace, PackResult], store: Store) -> None:
    """Even with the key (a leaked CI secret), a record naming other objects for a zip's
    members than the ones its central directory describes (CRC-32, size) is not taken:
    the record is dropped and the zip read."""
    workspace, first = packed
    good = _shipped(first)
    key = bytes.fromhex(os.environ["BUNDLER_STORE_KEY"])

    def swap(body: dict) -> None:
        members = body["members"]
        if "bin/cudnn64_8.dll" in members:
            a, b = "bin/cudnn64_8.dll", "bin/cudnn_ops_infer64_8.dll"
            members[a], members[b] = members[b], members[a]

    for record in _records(store):
        _forge(store, record, swap, key=key)
    shutil.rmtree(first.out)
    again = _pack(workspace)
    assert _shipped(again) == good
    assert again.origin.files.get("read", 0) > 0


def test_a_forged_signature_verdict_is_not_believed(
        tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path, standin_runtime: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A verdict "signed by NVIDIA Corporation" written for an unsigned stand-in, under a
    recipe that requires the signature: refused as not signed, never recorded verified."""
    recipe = tmp_path / "strict.toml"
    recipe.write_text((RECIPES / f"{SEED}.toml").read_text()
                      .replace("signature_optional = true\n", ""))
    workspace = _workspace(tmp_path / "one", standin_zip, standin_toolkit, standin_framework,
                           extra_runtime="allow_unsigned = []", recipe=recipe.as_posix())
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2 and "not signed" in err
    forged = {"status": "ok", "signer": "NVIDIA Corporation", "root": "forged",
              "signed_at": "2020-08-01T00:00:00Z"}
    for path in (store.root / "objects").glob("*/*") if (store.root / "objects").is_dir() \
            else []:
        path.unlink()
    # The attacker writes a verdict for every stand-in's sha256, under every trust key
    # the pack might use (any key: the seal is what they cannot make).
    from bundler.pack.signatures import trust_key
    from bundler.recipe.load import find_recipe

    loaded = find_recipe(recipe.as_posix(), tmp_path)
    trust = loaded.signers["NVIDIA Corporation"]
    (store.root / "signatures").mkdir(parents=True, exist_ok=True)
    for dll in _standin_hashes(standin_runtime.dir):
        (store.root / "signatures" / dll).write_text(json.dumps(
            {trust_key(trust): {"body": forged, "seal": "0" * 64}}))
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--json")
    assert code == 2 and "not signed" in err


def _standin_hashes(folder: Path) -> list[str]:
    import hashlib

    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.glob("cudnn*.dll")]


def test_a_toolkit_file_changed_with_its_mtime_put_back_is_read_again(
        packed: tuple[Workspace, PackResult], store: Store) -> None:
    workspace, first = packed
    toolkit = Path(load_spec(workspace.spec).sources["cuda"])
    dll = toolkit / "bin" / "cudart64_101.dll"
    before = dll.stat()
    data = bytearray(dll.read_bytes())
    data[-4:] = b"EVIL"   # past the PE's end: still loads, other bytes
    dll.write_bytes(bytes(data))
    os.utime(dll, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = _pack(workspace, update_lock=True)
    assert _shipped(again)["cudart64_101.dll"] == bytes(data)
    assert again.origin.files.get("read", 0) >= 1


def test_a_zip_changed_in_place_under_the_same_directory_is_not_vouched_for(
        packed: tuple[Workspace, PackResult], store: Store,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Member bytes changed in place, central directory (CRCs) kept, mtime put back: a
    warm pack must not pin the old zip's sha256 for it; reading it finds the damage."""
    workspace, _ = packed
    archive = Path(load_spec(workspace.spec).sources["cudnn"])
    before = archive.stat()
    data = bytearray(archive.read_bytes())
    data[200:204] = bytes(b ^ 0xFF for b in data[200:204])   # inside the first member
    archive.write_bytes(bytes(data))
    os.utime(archive, ns=(before.st_atime_ns, before.st_mtime_ns))
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--update-lock")
    assert code == 2 and "CRC" in err, err


def test_a_store_that_cannot_be_filled_does_not_fail_the_pack(
        tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = _workspace(tmp_path / "one", standin_zip, standin_toolkit, standin_framework)
    store.root.mkdir(parents=True, exist_ok=True)   # opened: its folders are made
    for folder in ("objects", "sources", "tmp", "locks"):
        shutil.rmtree(store.root / folder, ignore_errors=True)
        (store.root / folder).write_text("not a folder: any write below it fails\n")
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert err.count("warning: the runtime store") == 2   # its files, its note of the lock
    assert "the bundle and lock are complete" in err
    assert (workspace.root / "dist" / "app" / "cudnn" / "manifest.json").is_file()


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
def test_a_store_others_can_write_is_not_used(
        tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = _workspace(tmp_path / "one", standin_zip, standin_toolkit, standin_framework)
    store.root.mkdir(parents=True, exist_ok=True)
    store.root.chmod(0o777)
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert err.count(f"{store.root}: the runtime store is writable by other users: not "
                     "used") == 1   # said once
    assert not any((store.root / "objects").iterdir())
    store.root.chmod(stat.S_IRWXU)


def test_the_store_and_wheel_cache_follow_the_platforms_cache_folder(tmp_path: Path) -> None:
    from bundler.pack.sources.fetch import cache_root
    from bundler.pack.store.store import store_root
    from bundler.support.user_dirs import user_cache_dir, user_config_dir

    xdg = {"XDG_CACHE_HOME": str(tmp_path / "c"), "XDG_CONFIG_HOME": str(tmp_path / "k")}
    assert user_cache_dir(xdg, "linux") == tmp_path / "c" / "bundler"
    assert user_config_dir(xdg, "linux") == tmp_path / "k" / "bundler"
    assert user_cache_dir({"XDG_CACHE_HOME": "relative"}, "linux") == \
        Path(os.path.expanduser("~/.cache/bundler"))   # the XDG rule: relative is ignored
    windows = {"LOCALAPPDATA": str(tmp_path / "L"), "APPDATA": str(tmp_path / "R")}
    assert user_cache_dir(windows, "win32") == tmp_path / "L" / "bundler" / "Cache"
    assert user_config_dir(windows, "win32") == tmp_path / "R" / "bundler"
    assert user_cache_dir({}, "darwin") == Path(os.path.expanduser("~/Library/Caches/bundler"))
    if os.name != "nt" and os.uname().sysname == "Linux":
        assert store_root(xdg) == tmp_path / "c" / "bundler" / "store"
        assert cache_root(xdg) == tmp_path / "c" / "bundler" / "wheels"
    assert store_root({"BUNDLER_STORE": "off"}) is None


def _object(store: Store, folder: Path, data: bytes, used_at: float) -> str:
    import hashlib

    path = folder / hashlib.sha256(data).hexdigest()
    path.write_bytes(data)
    store.add(path, path.name)
    os.utime(store.root / "used" / path.name, (used_at, used_at))
    return path.name


def test_the_size_cap_removes_the_least_recently_used_first(tmp_path: Path,
                                                            store: Store) -> None:
    from bundler.pack.store.store import SourceRecord
    from bundler.pack.store.upkeep import size_cap, trim

    folder = tmp_path / "files"
    folder.mkdir()
    old, middle, recent, mine = (_object(store, folder, bytes([n]) * 1000, when)
                                 for n, when in ((1, 1e9), (2, 2e9), (3, 3e9), (4, 1.0)))
    store.remember("f" * 64, SourceRecord("i" * 64, {"bin/old.dll": old}))
    removed = trim(store, 2500, keep=frozenset({mine}))   # 4000 bytes in all
    assert removed == [old, middle]   # oldest use first; this pack's file stays though oldest
    assert {p.name for p in store.all_objects()} == {recent, mine}
    assert store.record("f" * 64) is None   # a record naming a removed file goes too
    assert size_cap({}) == 20 << 30 and size_cap({"BUNDLER_STORE_MAX": "500M"}) == 500 << 20
    assert size_cap({"BUNDLER_STORE_MAX": "0"}) == 0 and trim(store, 0, frozenset()) == []


def test_a_pack_holds_the_store_to_its_cap(
        packed: tuple[Workspace, PackResult], store: Store, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    workspace, first = packed
    stale = store.root / "objects" / "00" / ("0" * 64)
    stale.parent.mkdir(exist_ok=True)
    stale.write_bytes(b"x" * 4096)
    os.utime(stale, (1.0, 1.0))
    monkeypatch.setenv("BUNDLER_STORE_MAX", "1K")
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert not stale.exists()
    shipped = {e.sha256 for e in first.manifest.files}
    assert shipped <= {p.name for p in store.all_objects()}   # this pack's files stay
    monkeypatch.setenv("BUNDLER_STORE_MAX", "lots")
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0 and "BUNDLER_STORE_MAX='lots' is not a size" in err


def test_debris_of_killed_packs_is_counted_and_pruned(
        packed: tuple[Workspace, PackResult], store: Store,
        capsys: pytest.CaptureFixture[str]) -> None:
    killed = store.root / "tmp" / "add-killed"
    killed.mkdir(parents=True)
    (killed / ("a" * 64)).write_bytes(b"y" * 3000)
    os.utime(killed, (1.0, 1.0))
    running = store.root / "tmp" / "add-running"
    running.mkdir()
    code, out, _ = run_cli(capsys, "cache")
    assert code == 0 and "left by killed packs: 2.9 KiB in tmp/" in out, out
    code, out, _ = run_cli(capsys, "cache", "prune")
    assert code == 0 and not killed.exists() and running.exists()


def test_a_full_disk_while_copying_from_the_store_names_the_bundle(
        packed: tuple[Workspace, PackResult], store: Store, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    import bundler.pack.store.store as store_module

    workspace, first = packed
    shutil.rmtree(first.out)

    def full(*_: Any, **__: Any) -> None:   # as the OS may say it: naming the store's file
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(store.objects))

    class FullDisk:   # only the store module's copies hit the full disk
        copyfile = staticmethod(full)

        def __getattr__(self, name: str) -> Any:
            return getattr(shutil, name)

    monkeypatch.setattr(store_module, "shutil", FullDisk())
    monkeypatch.setattr(store_module, "_copy_open", full)   # place's copy from the store
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--copy")
    assert code == 2 and "the disk is full" in err, err
    assert str(store.root) not in err.split("the disk is full")[0], err
