"""`bundler pack --zip PATH` replaces only a zip it wrote of the same bundle.

An existing zip at PATH may be the user's own: NVIDIA's cuDNN archive the spec packs
from (login-only to download again), or any other archive. Replacing it would lose it
after a pack that otherwise succeeded. Real packs of the stand-in runtime."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, make_workspace, run_cli, snapshot


@pytest.fixture
def workspace(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
              standin_framework: Path) -> Workspace:
    """A workspace whose cuDNN archive is its own copy (a test may name it as --zip)."""
    archive = tmp_path / "ws" / "downloads" / standin_zip.name
    archive.parent.mkdir(parents=True)
    shutil.copy(standin_zip, archive)
    return make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": archive, "cuda": standin_toolkit})


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_input_archive_is_never_replaced_by_the_zip(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    archive = workspace.root / "downloads" / next(
        (workspace.root / "downloads").iterdir()).name
    before = snapshot(workspace.root)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", archive)
    assert code == 2, "the pack's own cuDNN archive was replaced by the bundle's zip"
    assert "not a zip bundler wrote" in err and "hint:" in err
    assert snapshot(workspace.root) == before   # nothing packed, the archive as it was


def test_another_zip_is_refused_and_an_earlier_zip_of_the_bundle_replaced(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    theirs = tmp_path / "app.zip"
    with zipfile.ZipFile(theirs, "w") as archive:   # the user's own zip, same name
        archive.writestr("app/readme.txt", "mine")
    mine = _sha(theirs)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", theirs)
    assert code == 2 and "not a zip bundler wrote" in err
    assert _sha(theirs) == mine
    ours = tmp_path / "out" / "app.zip"
    assert run_cli(capsys, "pack", workspace.spec, "--zip", ours)[0] == 0
    first = _sha(ours)
    (workspace.root / "app" / "extra.py").write_text("print('new')\n")
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", ours)
    assert code == 0, err   # a zip bundler wrote of this bundle: replaced
    assert _sha(ours) != first
    with zipfile.ZipFile(ours) as archive:
        assert "app/extra.py" in archive.namelist()


def test_a_windows_bundle_zips_the_same_whichever_machine_packs_it(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Windows bundle's permissions are what Windows reports (0755 for .exe, .bat, .cmd
    and .com, 0644 for the rest), not this machine's: a Linux checkout's executable bit
    (git keeps it) would otherwise give other bytes than a pack on Windows."""
    app = workspace.root / "app"
    (app / "run.cmd").write_text("@python main.py %*\r\n")
    (app / "run.cmd").chmod(0o644)        # as a zip or a Windows copy brings it
    first, second = tmp_path / "first" / "app.zip", tmp_path / "second" / "app.zip"
    assert run_cli(capsys, "pack", workspace.spec, "--zip", first)[0] == 0
    (app / "main.py").chmod(0o755)        # as a Linux checkout of a script brings it
    (app / "run.cmd").chmod(0o755)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", second)
    assert code == 0, err
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as archive:
        modes = {info.filename: info.external_attr >> 16 & 0o777
                 for info in archive.infolist()}
    assert modes["app/run.cmd"] == 0o755 and modes["app/main.py"] == 0o644


def test_a_zip_in_the_app_folder_is_not_shipped_by_the_next_pack(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """An app folder of "." holds dist/: `--zip dist/app.zip` puts the zip in the app
    folder, and the next pack must not copy it into the bundle (a zip inside the zip,
    one level deeper each pack, and never the same bytes twice)."""
    spec = workspace.spec
    spec.write_text(spec.read_text().replace('path = "app"', 'path = "."')
                    .replace('entry = "main.py"', 'entry = "app/main.py"'))
    zipped = workspace.root / "dist" / "app.zip"
    assert run_cli(capsys, "pack", spec, "--zip", zipped)[0] == 0
    first = zipped.read_bytes()
    code, out, err = run_cli(capsys, "pack", spec, "--zip", zipped)
    assert code == 0, err
    assert "not copied from the app folder: dist/app.zip (a zip bundler made" in out
    assert not (workspace.dist / "dist" / "app.zip").exists()
    # The lock (in the app folder of ".") was written by the first pack, so the second
    # bundle holds it; a third pack, with nothing changed, gives the second's bytes.
    second = zipped.read_bytes()
    assert run_cli(capsys, "pack", spec, "--zip", zipped)[0] == 0
    assert zipped.read_bytes() == second and len(second) < 2 * len(first)
    with zipfile.ZipFile(zipped) as archive:
        assert not [name for name in archive.namelist()
                    if name.endswith("/app.zip") or "/.app.zip." in name]



def _zip_of_a_newer_version(path: Path) -> Path:
    """A zip whose central directory asks for extract version 7.0: zipfile raises
    NotImplementedError (not BadZipFile) on opening it."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data/readme.txt", "an app's own archive")
    raw = bytearray(path.read_bytes())
    central = raw.index(b"PK\x01\x02")
    raw[central + 6:central + 8] = (70).to_bytes(2, "little")   # version needed
    path.write_bytes(bytes(raw))
    with pytest.raises(NotImplementedError):
        zipfile.ZipFile(path)
    return path


def test_a_zip_zipfile_cannot_open_is_app_content_and_never_replaced(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours = _zip_of_a_newer_version(workspace.root / "app" / "assets.zip")
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err   # looked at (is it a bundle's zip?) and copied, not a crash
    assert (workspace.dist / "assets.zip").read_bytes() == ours.read_bytes()
    before = _sha(ours)
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", ours)
    assert code == 2 and "not a zip bundler wrote" in err, err
    assert _sha(ours) == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_as_zip_path_is_refused_not_waited_on(
        workspace: Workspace, tmp_path: Path) -> None:
    from tests.integration.test_hostile_files import make_fifo, refused_fifo

    fifo = make_fifo(tmp_path / "app.zip")
    refused_fifo(fifo, "pack", workspace.spec, "--zip", fifo)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and not workspace.dist.exists()
