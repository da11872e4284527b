"""`bundler pack --zip PATH`: the finished bundle as a deterministic zip. Real packs of
the stand-in runtime; the zip is unzipped with Python's zipfile and verified."""

from __future__ import annotations

import hashlib
import json
import stat
import zipfile
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, run_cli, snapshot
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.winpython import to_windows_path
from tests.integration.test_pack_refusals import failing_replace


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_zip_unzips_to_a_bundle_that_verifies(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "out" / "app.zip"
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped)
    assert code == 0, err
    assert f"zip: {zipped}" in out
    with zipfile.ZipFile(zipped) as archive:
        names = archive.namelist()
        infos = archive.infolist()
        archive.extractall(tmp_path / "unzipped")
    assert names == sorted(names) and all(name.startswith("app/") for name in names)
    for info in infos:   # nothing of this machine or this moment in the zip
        assert info.date_time == (1980, 1, 1, 0, 0, 0) and info.extra == b""
        assert stat.S_IMODE(info.external_attr >> 16) in (0o644, 0o755)
        assert info.compress_type == (zipfile.ZIP_STORED if info.is_dir()
                                      else zipfile.ZIP_DEFLATED)
    unzipped = tmp_path / "unzipped" / "app"
    assert snapshot(unzipped) == snapshot(workspace.dist)   # the bundle, every file
    code, out, err = run_cli(capsys, "verify", unzipped, "--lock",
                             workspace.spec.with_name("app.spec.lock"))
    assert code == 0, out + err
    # and verify notices a file changed after unzipping: the check is real
    dll = unzipped / "cudnn" / "cudnn64_8.dll"
    dll.write_bytes(dll.read_bytes() + b"\0")
    assert run_cli(capsys, "verify", unzipped)[0] == 1


def test_the_same_inputs_give_the_same_zip_bytes(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "first.zip", tmp_path / "second.zip"
    assert run_cli(capsys, "pack", workspace.spec, "--zip", first)[0] == 0
    # packed again, into another folder of the same name, from the store this time
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--out", tmp_path / "b" / "app",
                           "--zip", second)
    assert code == 0, err
    assert first.read_bytes() == second.read_bytes()
    assert run_cli(capsys, "pack", workspace.spec, "--zip", second, "--copy")[0] == 0
    assert first.read_bytes() == second.read_bytes()
    assert stat.S_IMODE(first.stat().st_mode) == 0o644


def test_a_failed_pack_leaves_the_previous_zip_and_no_partial_one(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    assert run_cli(capsys, "pack", workspace.spec, "--zip", zipped)[0] == 0
    before = _sha(zipped)
    (workspace.root / "app" / "extra.py").write_text("print('new')\n")
    # The bundle cannot be swapped in (Windows: its DLLs are in use): the zip of the new
    # bundle was complete by then, and must not be published.
    failing_replace(monkeypatch, lambda src, dst: src.name.startswith(".app.staging-"))
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped)
    assert code == 2 and "previous bundle" in err
    assert _sha(zipped) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".app.zip")) == []
    monkeypatch.undo()
    assert run_cli(capsys, "pack", workspace.spec, "--zip", zipped)[0] == 0
    with zipfile.ZipFile(zipped) as archive:
        assert "app/extra.py" in archive.namelist()


def test_a_zip_path_that_would_lose_something_is_refused_before_packing(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", workspace.dist / "app.zip")
    assert code == 2 and "inside the bundle it holds" in err
    assert not workspace.dist.exists()
    before = snapshot(workspace.root)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", workspace.spec)
    assert code == 2 and "is not a zip; refusing to replace it" in err
    assert snapshot(workspace.root) == before   # the spec (a typo away) is still there


def test_the_unzipped_app_loads_its_own_cudnn_under_wine(
        workspace: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Unzipped elsewhere (no store, no dist/ beside it), the app still runs on its own
    runtime with a decoy cuDNN first on PATH."""
    zipped = tmp_path / "app.zip"
    assert run_cli(capsys, "pack", workspace.spec, "--zip", zipped)[0] == 0
    with zipfile.ZipFile(zipped) as archive:
        archive.extractall(tmp_path / "elsewhere")
    unzipped = tmp_path / "elsewhere" / "app"
    result = app_python.run([unzipped / "main.py"], path_dirs=[decoy_cudnn_dir], timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(next(line for line in result.stdout.splitlines()
                             if line.startswith("{")))
    assert loaded["version"] == 8003
    assert loaded["path"].lower() == to_windows_path(
        unzipped / "cudnn" / "cudnn64_8.dll").lower()
