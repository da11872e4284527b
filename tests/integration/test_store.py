"""The runtime store and the reuse of earlier reads: a warm pack inflates nothing, a
damaged store entry never reaches a bundle, links are shared only where asked, and the
store stays whole under concurrent packs. (Loading linked bundles under Wine:
test_pack_windows.py.)"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bundler.formats.manifest import find_manifest
from bundler.pack.pipeline import PackResult, pack
from bundler.pack.spec import load_spec
from bundler.pack.store.store import Store
from tests.harness.packing import (
    Workspace,
    central_directory_offset,
    make_workspace,
    run_cli,
    snapshot,
    times_read,
)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("BUNDLER_STORE", str(tmp_path / "store"))
    return Store(tmp_path / "store", bytes.fromhex(os.environ["BUNDLER_STORE_KEY"]))


def _workspace(root: Path, standin_zip: Path, standin_toolkit: Path, framework: Path,
               name: str = "app") -> Workspace:
    """A workspace with its own copy of the zip (so reads of it can be counted)."""
    root.mkdir(parents=True)
    source = root / standin_zip.name
    source.write_bytes(standin_zip.read_bytes())
    workspace = make_workspace(root / "ws", framework, {"cudnn": source,
                                                        "cuda": standin_toolkit})
    if name != "app":
        text = workspace.spec.read_text().replace('name = "app"', f'name = "{name}"')
        workspace.spec.write_text(text)
    return workspace


def _pack(workspace: Workspace, **options: Any) -> PackResult:
    return pack(load_spec(workspace.spec), **options)


def _runtime_files(result: PackResult) -> dict[str, Path]:
    found = find_manifest(result.out)
    return {e.name: found.root / e.path for e in found.manifest.files}


def _member_bytes_read(reads: list[tuple[int, int]], archive: Path) -> int:
    """Bytes of the zip's members (not its central directory) that were read."""
    return sum(times_read(reads, archive.stat().st_size)[:central_directory_offset(archive)])


@pytest.fixture
def packed(tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path) -> tuple[Workspace, PackResult]:
    workspace = _workspace(tmp_path / "one", standin_zip, standin_toolkit, standin_framework)
    return workspace, _pack(workspace)


def test_a_cold_pack_fills_the_store_and_links_the_bundle_to_it(
        packed: tuple[Workspace, PackResult], store: Store) -> None:
    _, result = packed
    assert result.origin.files == {"read": len(result.manifest.files)}
    for entry, path in zip(result.manifest.files, _runtime_files(result).values()):
        stored = store.object_path(entry.sha256)
        assert os.path.samefile(stored, path)
        assert not stored.stat().st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def test_a_warm_repack_inflates_nothing(packed: tuple[Workspace, PackResult],
                                        zip_reads: Any) -> None:
    workspace, first = packed
    (workspace.root / "app" / "main.py").write_text("print('changed')\n")  # the app changed
    archive = Path(load_spec(workspace.spec).sources["cudnn"])
    reads = zip_reads(archive)
    again = _pack(workspace)
    assert again.origin.files == {"store": len(first.manifest.files)}
    assert _member_bytes_read(reads, archive) == 0
    assert again.manifest.files == first.manifest.files
    assert workspace.spec.with_name("app.spec.lock").read_bytes()  # the lock still matches


def test_a_second_app_with_the_same_runtime_unpacks_no_input(
        packed: tuple[Workspace, PackResult], tmp_path: Path, standin_zip: Path,
        standin_toolkit: Path, standin_framework: Path, zip_reads: Any) -> None:
    """Its own copy of the zip (another file than the one the store's record proved) is
    hashed once to prove it is the same input, and not unpacked; the same file again
    is not read at all."""
    _, first = packed
    other = _workspace(tmp_path / "two", standin_zip, standin_toolkit, standin_framework,
                       name="other")
    archive = Path(load_spec(other.spec).sources["cudnn"])
    reads = zip_reads(archive)
    second = _pack(other)
    members = times_read(reads, archive.stat().st_size)[:central_directory_offset(archive)]
    assert set(members) == {1}   # hashed whole, once
    reads.clear()
    _pack(other)
    assert _member_bytes_read(reads, archive) == 0
    assert second.origin.files == {"store": len(first.manifest.files)}
    ours, theirs = _runtime_files(first), _runtime_files(second)
    assert all(os.path.samefile(ours[name], theirs[name]) for name in ours)


@pytest.mark.parametrize("damage", ["truncate", "flip a byte, keep the mtime"])
def test_a_damaged_store_entry_never_reaches_a_bundle(
        packed: tuple[Workspace, PackResult], store: Store, damage: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    workspace, first = packed
    entry = next(e for e in first.manifest.files if e.name == "cudnn64_8.dll")
    stored = store.object_path(entry.sha256)
    stored.chmod(0o644)
    before = stored.stat()
    data = bytearray(stored.read_bytes())
    if damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    os.utime(stored, ns=(before.st_atime_ns, before.st_mtime_ns))
    again = _pack(workspace)
    assert again.origin.files["read"] >= 1   # the zip was read again
    code, out, _ = run_cli(capsys, "verify", again.out)
    assert code == 0, out
    assert store.checked_object(entry.sha256) is not None   # and the entry mended


def test_without_a_store_a_repack_takes_the_previous_bundles_files(
        packed: tuple[Workspace, PackResult], monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, first = packed
    inodes = {name: path.stat().st_ino for name, path in _runtime_files(first).items()}
    monkeypatch.setenv("BUNDLER_STORE", "off")
    again = _pack(workspace)
    assert again.origin.files == {"previous": len(first.manifest.files)}
    assert {n: p.stat().st_ino for n, p in _runtime_files(again).items()} == inodes


def test_an_edited_previous_file_is_not_taken(
        packed: tuple[Workspace, PackResult], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    workspace, first = packed
    monkeypatch.setenv("BUNDLER_STORE", "off")
    shim = _runtime_files(first)["cudnn64_8.dll"]
    shim.chmod(0o644)
    data = bytearray(shim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shim.write_bytes(bytes(data))
    again = _pack(workspace)
    assert again.origin.files.get("read", 0) >= 1
    assert run_cli(capsys, "verify", again.out)[0] == 0


def test_copy_gives_the_bundle_its_own_files(
        tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path) -> None:
    workspace = _workspace(tmp_path / "one", standin_zip, standin_toolkit, standin_framework)
    for attempt in ("cold", "warm"):
        result = _pack(workspace, copy=True)
        files = _runtime_files(result)
        assert all(path.stat().st_nlink == 1 for path in files.values()), attempt
        for entry in result.manifest.files:  # the store is still filled, apart
            assert store.object_path(entry.sha256).is_file()
            assert not os.path.samefile(store.object_path(entry.sha256), files[entry.name])
    assert result.origin.files == {"store": len(result.manifest.files)}
    assert result.origin.copied == len(result.manifest.files)


def test_concurrent_packs_fill_the_same_entries(
        tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path) -> None:
    """Two processes pack two apps with one runtime into an empty store at once."""
    workspaces = [_workspace(tmp_path / name, standin_zip, standin_toolkit,
                             standin_framework, name=name) for name in ("left", "right")]
    env = {**os.environ, "BUNDLER_STORE": str(store.root)}
    children = [subprocess.Popen([sys.executable, "-m", "bundler", "pack", "--json",
                                  str(w.spec)], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for w in workspaces]
    outputs = [child.communicate(timeout=300) for child in children]
    assert [child.returncode for child in children] == [0, 0], outputs
    files = json.loads(outputs[0][0])["files"]
    for entry in files:
        assert store.checked_object(entry["sha256"]) is not None
    assert len(list(store.all_objects())) == len({e["sha256"] for e in files})
    assert not list((store.root / "tmp").glob("*/*"))


def test_cache_shows_and_prunes_what_no_lock_pins(
        packed: tuple[Workspace, PackResult], store: Store,
        capsys: pytest.CaptureFixture[str]) -> None:
    workspace, first = packed
    count = len({e.sha256 for e in first.manifest.files})
    code, out, _ = run_cli(capsys, "cache", "--json")
    report = json.loads(out)
    assert code == 0 and report["objects"] == count and report["unpinned"] == []
    assert report["locks"][0]["lock"] == str(workspace.spec.with_name("app.spec.lock"))
    workspace.spec.with_name("app.spec.lock").unlink()
    before = snapshot(store.root)
    code, out, _ = run_cli(capsys, "cache", "prune", "--dry-run")
    assert code == 0 and f"would remove: {count} file(s)" in out
    assert snapshot(store.root) == before
    code, out, _ = run_cli(capsys, "cache", "prune")
    assert code == 0 and f"removed: {count} file(s)" in out
    assert list(store.all_objects()) == []
    assert all(path.is_file() for path in _runtime_files(first).values())  # bundle intact


def test_prune_keeps_what_a_lock_pins(packed: tuple[Workspace, PackResult], store: Store,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    _, first = packed
    stray = store.object_path("0" * 64)
    stray.parent.mkdir(parents=True, exist_ok=True)
    stray.write_bytes(b"left by a pack whose lock is gone")
    assert run_cli(capsys, "cache", "prune")[0] == 0
    assert not stray.exists()
    assert all(store.object_path(e.sha256).is_file() for e in first.manifest.files)


def test_pack_summary_says_where_the_runtime_came_from(
        packed: tuple[Workspace, PackResult], capsys: pytest.CaptureFixture[str]) -> None:
    workspace, first = packed
    code, out, _ = run_cli(capsys, "pack", workspace.spec)
    assert code == 0
    assert f"runtime: {len(first.manifest.files)} file(s) from the store (linked)" in out
