"""Tamper evidence: the lock pins each file apart from the manifest, so a replaced DLL
with a hand-edited manifest hash is caught by `verify --lock`; an entry script without
its bootstrap lines is caught by verify; `verify dist` checks every bundle in it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, make_workspace, run_cli


@pytest.fixture()
def packed(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> Workspace:
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    assert run_cli(capsys, "pack", workspace.spec)[0] == 0
    return workspace


def replace_dll_and_manifest_hash(bundle: Path) -> str:
    manifest_path = bundle / "cudnn" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entry = manifest["files"][0]
    forged = b"MZ not the DLL the lock pinned"
    (bundle / entry["path"]).write_bytes(forged)
    entry["sha256"] = hashlib.sha256(forged).hexdigest()
    entry["size"] = len(forged)
    manifest_path.write_text(json.dumps(manifest))
    return str(entry["path"])


def test_a_replaced_dll_with_a_forged_manifest_hash_differs_from_the_lock(
        packed: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    lock = packed.root / "app.spec.lock"
    assert run_cli(capsys, "verify", packed.dist, "--lock", lock)[0] == 0
    replaced = replace_dll_and_manifest_hash(packed.dist)
    assert run_cli(capsys, "verify", packed.dist)[0] == 0  # the manifest alone is fooled
    code, out, _ = run_cli(capsys, "verify", packed.dist, "--lock", lock)
    assert code == 1
    assert f"not as locked: {replaced} (its sha256 differs from the lock)" in out
    code, out, _ = run_cli(capsys, "verify", packed.dist, "--lock", lock, "--json")
    assert code == 1 and json.loads(out)["not_as_locked"]
    code, out, _ = run_cli(capsys, "doctor", packed.dist, "--lock", lock)
    assert code == 1 and "not as the lock pins it" in out


def test_an_entry_script_without_its_bootstrap_lines_fails_verify(
        packed: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    entry = packed.dist / "main.py"
    lines = entry.read_text().splitlines(keepends=True)
    entry.write_text("".join(line for line in lines if "_bundler_" not in line))
    code, out, _ = run_cli(capsys, "verify", packed.dist)
    assert code == 1
    assert "changed: main.py (the lines that load the bootstrap are gone)" in out
    code, out, _ = run_cli(capsys, "doctor", packed.dist)
    assert code == 1


def test_verify_of_a_folder_of_bundles_checks_each(
        packed: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    second = packed.root / "dist" / "app2"
    # Its own copies: linked through the runtime store, a change to one would be a
    # change to both (and verify would report it in both).
    assert run_cli(capsys, "pack", packed.spec, "--out", second, "--copy")[0] == 0
    code, out, _ = run_cli(capsys, "verify", packed.root / "dist")
    assert code == 0 and out.count("ok: ") == 2
    (second / "cudnn" / "cudnn64_8.dll").write_bytes(b"tampered")
    code, out, _ = run_cli(capsys, "verify", packed.root / "dist")
    assert code == 1 and "changed: cudnn/cudnn64_8.dll" in out and out.count("ok: ") == 1
    code, _, err = run_cli(capsys, "verify", packed.root / "dist", "--lock",
                           packed.root / "app.spec.lock")
    assert code == 2 and "holds 2 bundles" in err


def test_verify_with_a_lock_that_is_not_there_is_one_line(
        packed: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "verify", packed.dist, "--lock", packed.root / "nope.lock")
    assert code == 2 and "no such lock file" in err


def test_doctor_of_a_folder_of_bundles_checks_each(
        packed: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    second = packed.root / "dist" / "app2"
    assert run_cli(capsys, "pack", packed.spec, "--out", second, "--copy")[0] == 0
    (second / "cudnn" / "cudnn64_8.dll").write_bytes(b"tampered")
    dist = packed.root / "dist"
    code, out, _ = run_cli(capsys, "doctor", dist)
    assert code == 1, out
    assert str(packed.dist) in out and str(second) in out
    assert "changed since pack: cudnn/cudnn64_8.dll" in out
    code, out, _ = run_cli(capsys, "doctor", dist, "--json")
    reports = json.loads(out)
    assert code == 1 and [(r["app"], r["ok"]) for r in reports] == [
        (str(packed.dist), True), (str(second), False)]
    code, _, err = run_cli(capsys, "doctor", dist, "--lock", packed.root / "app.spec.lock")
    assert code == 2 and "holds 2 bundles" in err


def test_the_verify_hint_fits_the_kind_of_file_changed(
        packed: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """A changed licence text is an edit: no antivirus is blamed; a changed DLL may be
    one's doing, and verify and doctor say so."""
    licence = next((packed.dist / "cudnn").glob("*.txt"))
    original = licence.read_bytes()
    licence.write_bytes(original + b"edited\n")
    code, _, err = run_cli(capsys, "verify", packed.dist)
    assert code == 1 and "antivirus" not in err
    assert "hint: re-run `bundler pack`: a file of the bundle was edited" in err
    code, out, _ = run_cli(capsys, "doctor", packed.dist)
    assert code == 1 and "antivirus" not in out, out
    licence.write_bytes(original)
    added = packed.dist / "cudnn" / "notes.dll"   # put there: no antivirus adds files
    added.write_bytes(b"MZ")
    code, _, err = run_cli(capsys, "verify", packed.dist)
    assert code == 1 and "hint: remove what pack did not put in the runtime folder" in err
    code, out, _ = run_cli(capsys, "doctor", packed.dist)
    assert code == 1 and "remove what pack did not put" in out and "antivirus" not in out
    added.unlink()
    (packed.dist / "cudnn" / "cudnn64_8.dll").write_bytes(b"MZ quarantined stub")
    code, _, err = run_cli(capsys, "verify", packed.dist)
    assert code == 1 and "an antivirus may have quarantined or altered a DLL" in err
