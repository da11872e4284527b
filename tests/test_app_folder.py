"""The app folder as the folder builder copies it: outputs never copy outputs, and
symbolic links are followed only inside the app folder (links that leave it, dangling
links and loops are refused, naming the link)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.packing import Workspace, make_workspace, run_cli


@pytest.fixture()
def workspace(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
              standin_framework: Path) -> Workspace:
    return make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": standin_zip, "cuda": standin_toolkit})


def files_below(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_an_app_folder_of_dot_does_not_copy_earlier_bundles(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    spec = workspace.spec
    spec.write_text(spec.read_text().replace('path = "app"', 'path = "."')
                    .replace('entry = "main.py"', 'entry = "app/main.py"'))
    for out in ("one", "two", "three"):
        code, _, err = run_cli(capsys, "pack", spec, "--out", workspace.root / "dist" / out)
        assert code == 0, err
    one, three = (files_below(workspace.root / "dist" / n) for n in ("one", "three"))
    # no bundle inside a bundle (the lock beside the spec exists from the second on)
    assert sorted({*one, "app.spec.lock"}) == three
    assert not any(name.startswith("dist/") for name in three)


def test_an_output_inside_the_app_is_not_copied_into_the_next(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    app = workspace.root / "app"
    for out in ("out1", "out2"):
        code, _, err = run_cli(capsys, "pack", workspace.spec, "--out", app / out)
        assert code == 0, err
    assert not (app / "out2" / "out1").exists()
    assert files_below(app / "out1") == files_below(app / "out2")


@pytest.mark.parametrize("make_link, named", [
    (lambda app, outside: os.symlink(outside / "secret.txt", app / "notes.txt"),
     "outside the app folder"),
    (lambda app, outside: os.symlink(outside, app / "data", target_is_directory=True),
     "outside the app folder"),
    (lambda app, outside: os.symlink(app, app / "sub" / "loop", target_is_directory=True),
     "a folder that holds it"),
    (lambda app, outside: os.symlink(app / "sub" / "b", app / "sub" / "a") or
     os.symlink(app / "sub" / "a", app / "sub" / "b"), "loop or points to nothing"),
    (lambda app, outside: os.symlink(app / "gone.txt", app / "dangling.txt"),
     "loop or points to nothing"),
], ids=["file-outside", "folder-outside", "loop-to-parent", "loop-of-two", "dangling"])
def test_symbolic_links_leaving_the_app_or_looping_are_refused(
        workspace: Workspace, capsys: pytest.CaptureFixture[str], make_link, named: str
        ) -> None:
    app, outside = workspace.root / "app", workspace.root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not for shipping")
    (app / "sub").mkdir()
    make_link(app, outside)
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2, err
    assert named in err and str(app) in err and "Traceback" not in err
    assert not (workspace.root / "dist").exists() or not any(
        (workspace.root / "dist").iterdir())


def test_a_link_inside_the_app_is_shipped_as_the_file_it_points_to(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    app = workspace.root / "app"
    (app / "real.txt").write_text("inside")
    os.symlink(app / "real.txt", app / "alias.txt")
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert (workspace.dist / "alias.txt").read_text() == "inside"
