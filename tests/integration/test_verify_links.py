"""verify and doctor never follow a link out of the bundle (issue 28, item 5).

A bundle is regular files in folders. A runtime library replaced by a link chain to an
identical file elsewhere is a finding (it hashed "ok" against the manifest and the
lock); links added to the runtime folder — to a folder, to nothing, to themselves — are
listed, never entered; a file of another size than the manifest's is reported without
being read (a 200 GB sparse replacement was hashed whole)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bundler.diagnose import verify as verify_module
from tests.harness.packing import Workspace, make_workspace, run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink") or os.name == "nt",
                                reason="symbolic links as POSIX makes them")


@pytest.fixture()
def packed(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> Workspace:
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    assert run_cli(capsys, "pack", workspace.spec)[0] == 0
    return workspace


def _verify(capsys: pytest.CaptureFixture[str], workspace: Workspace,
            *extra: object) -> tuple[int, dict]:
    code, out, err = run_cli(capsys, "verify", workspace.dist, "--json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)


def _a_dll(workspace: Workspace) -> Path:
    return sorted((workspace.dist / "cudnn").glob("*.dll"))[0]


def test_a_library_replaced_by_a_link_chain_to_the_same_bytes_is_a_finding(
        packed: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dll = _a_dll(packed)
    outside = tmp_path / "elsewhere" / dll.name
    outside.parent.mkdir()
    shutil.copyfile(dll, outside)   # the very same bytes
    (tmp_path / "hop").symlink_to(outside)
    dll.unlink()
    dll.symlink_to(tmp_path / "hop")
    relpath = dll.relative_to(packed.dist).as_posix()
    lock = packed.spec.with_name("app.spec.lock")
    code, report = _verify(capsys, packed, "--lock", lock)
    assert code == 1
    assert f"{relpath} (a link to {tmp_path / 'hop'})" in report["changed"]
    assert f"{relpath} (a link to {tmp_path / 'hop'})" in report["not_as_locked"]
    code, out, _ = run_cli(capsys, "doctor", packed.dist, "--lock", lock)
    assert code == 1 and relpath in out


def test_a_runtime_folder_replaced_by_a_link_is_a_finding(
        packed: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runtime = packed.dist / "cudnn"
    moved = tmp_path / "moved-runtime"
    shutil.copytree(runtime, moved)
    shutil.rmtree(runtime)
    runtime.symlink_to(moved)
    code, out, err = run_cli(capsys, "verify", packed.dist)
    assert code == 1, err
    assert f"changed: cudnn/ (a link to {moved}: not walked)" in out
    assert "cudnn/cudnn64_8.dll" not in out   # one line for the folder


@pytest.mark.parametrize("planted, says", [
    ("loop", "a link loop"), ("dangling", "a link to nothing"), ("root", "a link to /"),
    ("file", "a link to ")])
def test_links_added_to_the_runtime_folder_are_listed_not_entered(
        packed: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        planted: str, says: str) -> None:
    added = packed.dist / "cudnn" / "extra"
    if planted == "loop":
        added.symlink_to(added)
    elif planted == "dangling":
        added.symlink_to(tmp_path / "gone")
    elif planted == "root":
        added.symlink_to("/")
    else:
        (tmp_path / "secret.txt").write_text("outside")
        added.symlink_to(tmp_path / "secret.txt")
    code, report = _verify(capsys, packed)
    assert code == 1
    assert [u for u in report["unexpected"] if u.startswith("cudnn/extra")] == [
        next(u for u in report["unexpected"] if u.startswith(f"cudnn/extra ({says}"))]
    assert not any(u.startswith("cudnn/extra/") for u in report["unexpected"])  # not entered
    code, out, _ = run_cli(capsys, "doctor", packed.dist)
    assert code == 1 and "cudnn/extra" in out


def test_a_file_of_another_size_is_reported_without_being_hashed(
        packed: Workspace, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A sparse file in a DLL's place (1 GiB here; the attack used 200 GB): its size
    differs from the manifest's, so it is changed at once, never read. (The real hash
    runs for every other file; the test only records which files it was asked to read.)"""
    dll = _a_dll(packed)
    dll.unlink()
    with open(dll, "wb") as sparse:
        sparse.truncate(1 << 30)
    hashed: list[Path] = []
    real = verify_module.sha256_file

    def recording(path: Path, description: str = "") -> str:
        hashed.append(Path(path))
        return real(path, description)

    monkeypatch.setattr(verify_module, "sha256_file", recording)
    code, report = _verify(capsys, packed, "--lock", packed.spec.with_name("app.spec.lock"))
    assert code == 1
    assert dll.relative_to(packed.dist).as_posix() in report["changed"]
    assert dll not in hashed and len(hashed) > 3


def test_an_entry_script_replaced_by_a_link_is_not_read(
        packed: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same text outside the bundle: what the link reaches is not the bundle's."""
    entry = packed.dist / "main.py"
    outside = tmp_path / "main-copy.py"
    shutil.copyfile(entry, outside)
    entry.unlink()
    entry.symlink_to(outside)
    code, report = _verify(capsys, packed)
    assert code == 1 and f"main.py (a link to {outside})" in report["changed"]
