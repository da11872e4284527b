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


def _strip_bundle_record(lock: Path) -> bytes:
    data = json.loads(lock.read_text())
    del data["bundle"]
    lock.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return lock.read_bytes()


def test_a_lock_without_its_bundle_record_does_not_pin_the_bundle(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """#12: deleting the record switched the manifest and entry pins off: an emptied
    load order passed verify --lock and doctor --lock. Refused (exit 2) unless the user
    says the lock predates the record; then the caveat is said by both."""
    bundle = own_copy(workspace.dist, tmp_path)
    _edit_manifest(bundle, load_order=[])
    lock = tmp_path / "app.spec.lock"
    lock.write_bytes(_lock_path(workspace).read_bytes())
    _strip_bundle_record(lock)
    for command in ("verify", "doctor"):
        code, _, err = run_cli(capsys, command, bundle, "--lock", lock)
        assert code == 2, (command, err)
        assert f"{lock}: the lock has no bundle record, so it does not pin the manifest" \
            in err and "--lock-predates-record" in err
    code, out, _ = run_cli(capsys, "verify", workspace.dist, "--lock", lock,
                           "--lock-predates-record")
    assert code == 0 and "pins the runtime files only" in out
    code, out, _ = run_cli(capsys, "doctor", workspace.dist, "--lock", lock,
                           "--lock-predates-record")
    assert "pins the runtime files only" in out, out


def test_a_bundle_record_edited_down_pins_what_it_left_out_as_not_locked(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bundle = own_copy(workspace.dist, tmp_path)
    _edit_manifest(bundle, load_order=[])
    lock = tmp_path / "app.spec.lock"
    data = json.loads(_lock_path(workspace).read_text())
    data["bundle"] = {}
    lock.write_text(json.dumps(data))
    (verify_code, verify_out), (doctor_code, doctor_out) = _both(capsys, bundle, lock)
    assert verify_code == 1 and doctor_code == 1
    for relpath in ("cudnn/manifest.json", "main.py"):
        assert f"not as locked: {relpath} (the lock's bundle record does not pin it)" \
            in verify_out
        assert relpath in doctor_out


def test_pack_locked_never_keeps_a_lock_without_its_bundle_record(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """--locked writes nothing: a lock that pins less than the pack found is refused,
    left as it was; a pack without --locked adds the record (said)."""
    lock = _lock_path(workspace)
    older = _strip_bundle_record(lock)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--locked")
    assert code == 2 and "--locked, but the lock has no bundle record" in err, err
    assert lock.read_bytes() == older
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0 and "the manifest and entry script pinned" in out
    assert "bundle" in json.loads(lock.read_text())
    code, _, _ = run_cli(capsys, "verify", workspace.dist, "--lock", lock)
    assert code == 0


def test_a_manifest_that_is_a_link_to_an_outside_copy_fails_plain_verify_and_doctor(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """#23: the manifest is the bundle's own file: a link to a copy elsewhere (which may
    say anything: here an empty load order) is a finding, and nothing is checked
    against what it says."""
    bundle = own_copy(workspace.dist, tmp_path)
    manifest = bundle / "cudnn" / "manifest.json"
    outside = tmp_path / "outside.json"
    data = json.loads(manifest.read_text())
    data["load_order"] = []
    outside.write_text(json.dumps(data, indent=2, sort_keys=True))
    manifest.unlink()
    manifest.symlink_to(outside)
    code, out, err = run_cli(capsys, "verify", bundle)
    assert code == 1, out + err
    assert f"changed: cudnn/manifest.json (a link to {outside}: the manifest" in out, out
    code, out, _ = run_cli(capsys, "doctor", bundle)
    assert code == 1 and "cudnn/manifest.json (a link to" in out, out
