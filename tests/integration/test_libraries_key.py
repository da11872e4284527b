"""`libraries` in every public format of the diagnosis commands, with `dlls` kept as a
deprecated alias of the same value until 1.0 (docs/formats.md); the spec's `[scan]
libraries`, with `dlls` its deprecated alias (docs/spec-format.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bundler.pack.spec import load_spec
from tests.harness.packing import SEED, Workspace, run_cli

SHARED_LIBRARY = Path("/lib/x86_64-linux-gnu/libz.so.1")


@pytest.fixture
def workspace(packed_workspace: Workspace) -> Workspace:
    return packed_workspace


def _both(data: dict) -> list:
    assert data["libraries"] == data["dlls"], "dlls is an alias of libraries"
    return data["libraries"]


def test_doctor_of_a_bundle_says_libraries(workspace: Workspace,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "doctor", workspace.dist, "--json")
    assert code in (0, 1), err
    names = {d["facts"]["name"] for d in _both(json.loads(out))}
    assert "cudnn64_8.dll" in names
    second = workspace.root / "dist" / "app2"
    assert run_cli(capsys, "pack", workspace.spec, "--out", second)[0] == 0
    code, out, _ = run_cli(capsys, "doctor", workspace.root / "dist", "--json")
    reports = json.loads(out)   # a folder of bundles: one report each
    assert len(reports) == 2 and all(_both(report) for report in reports)


@pytest.mark.skipif(not SHARED_LIBRARY.is_file(), reason="needs a Linux shared library")
def test_inspect_says_libraries(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(SHARED_LIBRARY, tmp_path / SHARED_LIBRARY.name)
    code, out, err = run_cli(capsys, "inspect", tmp_path, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert [d["name"] for d in _both(report)] == [SHARED_LIBRARY.name]
    assert report["schema"] == 2 and set(report) == {   # the keys docs/formats.md names
        "schema", "path", "kind", "size", "sha256", "members", "libraries", "dlls",
        "matches"}


def test_this_machines_doctor_report_has_libraries(capsys: pytest.CaptureFixture[str]) -> None:
    """Every platform's machine report is the versioned view: `libraries`, and `dlls`
    beside it, the same value (its deprecated alias)."""
    code, out, err = run_cli(capsys, "doctor", "--json")
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["schema"] == 2
    _both(report)


def _spec(tmp_path: Path, scan: str) -> Path:
    (tmp_path / "app").mkdir(exist_ok=True)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\n\n[runtime]\n'
                    f'recipe = "{SEED}"\n\n[scan]\n{scan}\n')
    return spec


@pytest.mark.parametrize("key", ["libraries", "dlls"])
def test_the_spec_names_libraries_by_either_key(tmp_path: Path, key: str) -> None:
    spec = load_spec(_spec(tmp_path, f'{key} = ["cusolver64_10.dll"]'))
    assert spec.scan.dlls == ("cusolver64_10.dll",)


def test_a_spec_giving_both_keys_is_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, 'libraries = ["a.dll"]\ndlls = ["b.dll"]')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2
    assert f"{spec}: [scan] gives both libraries and dlls" in err
    assert "hint: keep libraries only" in err
