"""`pack --zip` and links in the app folder (issue 28 item 6): a link that stays inside
the app ships as what it points to, in the folder and as a regular zip member (a bundle
never holds a link, so unzipping it anywhere gives files); a link leaving the app, a
dangling link or a loop is refused naming the user's link, and no zip is written."""

from __future__ import annotations

import os
import stat
import zipfile

import pytest

from tests.harness.packing import Workspace, run_cli

pytestmark = pytest.mark.skipif(os.name == "nt", reason="symbolic links as POSIX makes them")


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def test_a_link_inside_the_app_ships_as_the_file_it_points_to_in_the_zip_too(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    app = workspace.root / "app"
    (app / "models").mkdir()
    (app / "models" / "real.txt").write_text("inside")
    os.symlink("models/real.txt", app / "alias.txt")
    os.symlink("models", app / "linked-models", target_is_directory=True)
    zipped = workspace.root / "dist" / "app.zip"
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped)
    assert code == 0, err
    for relpath in ("alias.txt", "linked-models", "linked-models/real.txt"):
        assert not (workspace.dist / relpath).is_symlink(), relpath
    assert (workspace.dist / "alias.txt").read_text() == "inside"
    with zipfile.ZipFile(zipped) as archive:
        for name in ("app/alias.txt", "app/linked-models/real.txt"):
            mode = archive.getinfo(name).external_attr >> 16
            assert stat.S_ISREG(mode) and archive.read(name) == b"inside", name
        assert not [i.filename for i in archive.infolist()
                    if stat.S_ISLNK(i.external_attr >> 16)]


@pytest.mark.parametrize("points_to", ["outside", "nothing"])
def test_a_link_leaving_the_app_is_refused_and_no_zip_written(
        workspace: Workspace, capsys: pytest.CaptureFixture[str], points_to: str) -> None:
    app = workspace.root / "app"
    secret = workspace.root / "secret.txt"
    if points_to == "outside":
        secret.write_text("not for shipping")
    link = app / "notes.txt"
    os.symlink(secret, link)
    zipped = workspace.root / "dist" / "app.zip"
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped)
    assert code == 2, err
    assert err.startswith(f"bundler: error: {link}: is a symbolic link"), err
    assert "hint: bundler follows links only inside the app folder" in err
    assert not zipped.exists() and not workspace.dist.exists()
