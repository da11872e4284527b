"""`bundler pack --zip PATH` never writes through a link, and a file name no zip can
hold is refused in one line (issue 28, item 6): PATH as a symbolic link to a file
outside dist/ was written through (`--out` refuses links); an app file whose name is not
UTF-8 (a Linux name of raw bytes) made the pack fail with exit 3."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, run_cli
from tests.linux.test_linux_bundle import APP, RECIPE, _cudnn_pair


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


@pytest.mark.skipif(os.name == "nt", reason="symbolic links as POSIX makes them")
@pytest.mark.parametrize("target", ["a-zip", "nothing"])
def test_a_zip_path_that_is_a_link_is_refused_and_not_written_through(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        target: str) -> None:
    outside = tmp_path / "outside.zip"
    if target == "a-zip":
        code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", outside)
        assert code == 0, err
    before = outside.read_bytes() if outside.exists() else None
    link = workspace.dist.parent / "app.zip"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", link)
    assert code == 2, err
    assert err.startswith(f"bundler: error: {link}: ") and "link" in err, err
    assert (outside.read_bytes() if outside.exists() else None) == before
    assert link.is_symlink()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names of raw bytes")
@pytest.mark.parametrize("zipped", [False, True], ids=["folder", "zip"])
def test_a_windows_bundle_refuses_an_app_file_name_that_is_not_utf8(
        workspace: Workspace, capsys: pytest.CaptureFixture[str], zipped: bool) -> None:
    """No Windows name holds raw bytes: refused naming the app's file, zip or not."""
    app = workspace.spec.parent / "app"
    raw = os.path.join(os.fsencode(app), b"data-\xff\xfe.bin")
    with open(raw, "wb") as out:
        out.write(b"payload")
    zip_option = ["--zip", workspace.dist.parent / "app.zip"] if zipped else []
    code, _, err = run_cli(capsys, "pack", workspace.spec, *zip_option)
    assert code == 2, err
    assert "Windows cannot hold this name in the bundle: it is not valid UTF-8 (raw bytes, " \
        "shown as 'data-\\xff\\xfe.bin')" in err and "\nhint: " in err, err
    assert "internal error" not in err and not workspace.dist.exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="names of raw bytes")
def test_a_linux_bundle_with_a_name_that_is_not_utf8_is_not_zipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Linux holds such a name, so the bundle itself may carry it; a zip cannot."""
    _cudnn_pair(tmp_path / "nvidia" / "cudnn" / "lib", tmp_path / "decoys")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(APP)
    with open(os.path.join(os.fsencode(tmp_path / "app"), b"data-\xff.bin"), "wb") as out:
        out.write(b"payload")
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n'
                    '[runtime]\nrecipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec, "--zip", tmp_path / "dist" / "app.zip")
    assert code == 2, err
    assert err.startswith("bundler: error: app/data-\\xff.bin: a file name that is not "
                          "UTF-8"), err
    assert not (tmp_path / "dist" / "app.zip").exists()
