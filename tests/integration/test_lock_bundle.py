"""verify --lock pins what the bootstrap obeys: the manifest as a whole (load order,
versions, driver minimums, the bootstrap's hash) and the entry script, not only the
runtime files. Real packs of the stand-in runtime, through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, own_copy, run_cli


@pytest.fixture
def workspace(packed_workspace: Workspace) -> Workspace:
    return packed_workspace


def _lock_path(workspace: Workspace) -> Path:
    return workspace.spec.with_name("app.spec.lock")


def _edit_manifest(bundle: Path, **changes: object) -> None:
    path = bundle / "cudnn" / "manifest.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data, indent=2, sort_keys=True))


def _both(capsys: pytest.CaptureFixture[str], bundle: Path, lock: Path) -> list[tuple[int, str]]:
    """verify --lock and doctor --lock on the bundle: (exit code, stdout) of each."""
    return [run_cli(capsys, command, bundle, "--lock", lock)[:2]
            for command in ("verify", "doctor")]


def test_the_lock_records_the_manifest_and_the_entry_script(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    pins = json.loads(_lock_path(workspace).read_text())["bundle"]
    assert sorted(pins) == ["cudnn/manifest.json", "main.py"]
    code, out, _ = run_cli(capsys, "verify", workspace.dist, "--lock", _lock_path(workspace))
    assert code == 0 and "which also pins cudnn/manifest.json and main.py" in out


@pytest.mark.parametrize("changes", [{"load_order": []},
                                     {"versions": {"cuda": "10.1", "cudnn": "8.0.3.33",
                                                   "min_driver": "0.0"}}],
                         ids=["empty-load-order", "driver-minimum-lowered"])
def test_an_edited_manifest_fails_verify_and_doctor_with_the_lock(
        workspace: Workspace, tmp_path: Path, changes: dict,
        capsys: pytest.CaptureFixture[str]) -> None:
    bundle = own_copy(workspace.dist, tmp_path)
    _edit_manifest(bundle, **changes)
    # The manifest's own hashes cannot vouch for it: without the lock it passes.
    assert run_cli(capsys, "verify", bundle)[0] == 0
    (verify_code, verify_out), (doctor_code, doctor_out) = _both(
        capsys, bundle, _lock_path(workspace))
    assert verify_code == 1 and doctor_code == 1
    assert "not as locked: cudnn/manifest.json (its sha256 differs from the lock: the " \
           "manifest was edited after packing" in verify_out
    assert "cudnn/manifest.json" in doctor_out


def test_an_entry_script_loading_cudnn_above_the_bootstrap_fails_with_the_lock(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = own_copy(workspace.dist, tmp_path)
    entry = bundle / "main.py"
    entry.write_text('import ctypes\nctypes.WinDLL("cudnn64_8.dll")\n' + entry.read_text())
    assert run_cli(capsys, "verify", bundle)[0] == 0   # the bootstrap lines are still there
    (verify_code, verify_out), (doctor_code, doctor_out) = _both(
        capsys, bundle, _lock_path(workspace))
    assert verify_code == 1 and doctor_code == 1
    assert "not as locked: main.py (its sha256 differs from the lock: the entry script " \
           "was edited" in verify_out
    assert "main.py" in doctor_out


def test_an_app_edit_is_followed_by_the_lock_and_refused_under_locked(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    lock = _lock_path(workspace)
    before = lock.read_bytes()
    source = workspace.root / "app" / "main.py"
    source.write_text(source.read_text() + "\nprint('one more line')\n")
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    assert code == 2 and "bundle main.py changed" in err and lock.read_bytes() == before
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert "updated: bundle main.py changed" in out
    code, _, _ = run_cli(capsys, "verify", workspace.dist, "--lock", lock)
    assert code == 0


def test_a_lock_written_before_the_record_says_what_it_does_not_cover(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    lock = _lock_path(workspace)
    data = json.loads(lock.read_text())
    del data["bundle"]
    lock.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    older = lock.read_bytes()
    code, out, _ = run_cli(capsys, "verify", workspace.dist, "--lock", lock)
    assert code == 0 and "pins the runtime files only" in out
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    assert code == 0, err
    assert lock.read_bytes() == older   # --locked never rewrites a lock
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0 and "the manifest and entry script pinned" in out
    assert "bundle" in json.loads(lock.read_text())
