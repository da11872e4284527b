"""The app folder as the folder builder copies it: outputs never copy outputs, but
only outputs are left out, each named in the pack summary; and symbolic links are
followed only inside the app folder (links that leave it, dangling links and loops are
refused, naming the link)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, make_workspace, run_cli


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
    # no bundle inside a bundle, and neither the spec nor its lock (bundler's own data)
    assert one == three and not {"app.spec", "app.spec.lock"} & set(three)
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


# Files of the app whose names only look like what packs leave, or that hold a file
# named like the bootstrap: the app's own, shipped as they are.
LOOKALIKES = [".env.new-prod", "conf/.db.old-backup", "conf/.settings.staging-eu",
              "plugins/y/_cudnn_bootstrap.py",
              "conf/.app.swap.json", ".app.old-notes", "plugins/x/_cudnn_bootstrap.py",
              "plugins/x/cudnn/manifest.json"]


def test_app_files_named_like_pack_debris_or_a_bootstrap_are_shipped(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    app = workspace.root / "app"
    for relpath in LOOKALIKES:
        (app / relpath).parent.mkdir(parents=True, exist_ok=True)
        (app / relpath).write_text(f"the app's own {relpath}\n")
    (app / "__pycache__").mkdir()
    (app / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--json")
    assert code == 0, err
    for relpath in LOOKALIKES:
        assert (workspace.dist / relpath).read_text() == f"the app's own {relpath}\n", relpath
    # what was left out is named, with why: here only the bytecode cache
    assert json.loads(out)["skipped_from_app"] == [
        {"path": "__pycache__", "why": "Python bytecode (Python writes it again)"}]
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--recheck")   # in full
    assert code == 0, err
    assert "not copied from the app folder: __pycache__ (Python bytecode" in out


def test_earlier_bundles_left_out_of_an_app_folder_of_dot_are_named(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    spec = workspace.spec
    spec.write_text(spec.read_text().replace('path = "app"', 'path = "."')
                    .replace('entry = "main.py"', 'entry = "app/main.py"'))
    code, _, err = run_cli(capsys, "pack", spec, "--out", workspace.root / "dist" / "one")
    assert code == 0, err
    code, out, err = run_cli(capsys, "pack", spec, "--out", workspace.root / "dist" / "two",
                             "--json")
    assert code == 0, err
    skipped = {item["path"]: item["why"] for item in json.loads(out)["skipped_from_app"]}
    assert skipped["dist/one"].startswith("a bundle bundler made")
    assert skipped[".app.spec.lock.pack-lock"].startswith("left by a pack")
    assert skipped["dist/.two.pack-lock"].startswith("left by a pack")
    assert not any((workspace.root / "dist" / "two" / "dist").iterdir())


# 249 characters of folders, then a file: 269 in all, past Windows' 260 (MAX_PATH)
LONG = "/".join(["a-folder-name-of-49-characters-for-a-long-path-ok"] * 5) + "/a-20-character-name"


@pytest.mark.parametrize("names, runtime_dir, named, rule", [
    (["CON.txt"], "", "CON.txt", "'CON' is a device name Windows reserves"),
    (["lib/aux.py"], "", "lib/aux.py", "'aux' is a device name Windows reserves"),
    (["trail."], "", "trail.", "ends in a dot or a space"),
    (["conf/trail "], "", "conf/trail ", "ends in a dot or a space"),
    (["what?.txt"], "", "what?.txt", "which Windows does not allow"),
    (["invoice\u202eexe.pdf"], "", "invoice\u202eexe.pdf", "bidirectional control U+202E"),
    ([LONG], "", LONG, "it is 269 characters long"),
    (["lib/a.dll", "lib/A.dll"], "", "lib/", "differs from it only in case"),
    (["MAIN.py"], "", "MAIN.py", "differs from it only in case"),
    (["_CUDNN_BOOTSTRAP.PY"], "", "_CUDNN_BOOTSTRAP.PY", "bundler writes the bootstrap"),
    (["_cudnn_bootstrap.py"], "", "_cudnn_bootstrap.py", "bundler writes the bootstrap"),
    (["Cudnn"], "", "Cudnn", "the runtime folder 'cudnn'"),
    (["LIB/x.txt"], 'dir = "lib/cudnn"', "LIB", "the runtime folder 'lib'"),
], ids=["reserved", "reserved-in-subfolder", "trailing-dot", "trailing-space",
        "forbidden-character", "bidi-control", "path-too-long", "case-twins",
        "twin-of-the-entry", "twin-of-the-bootstrap", "the-bootstrap-itself",
        "twin-of-the-runtime-folder", "twin-of-a-runtime-parent"])
def test_names_windows_cannot_hold_are_refused_naming_the_file(
        workspace: Workspace, capsys: pytest.CaptureFixture[str], names: list[str],
        runtime_dir: str, named: str, rule: str) -> None:
    app = workspace.root / "app"
    for relpath in names:
        (app / relpath).parent.mkdir(parents=True, exist_ok=True)
        (app / relpath).write_text("the app's own\n")
    if runtime_dir:
        spec = workspace.spec
        spec.write_text(spec.read_text().replace("[runtime]\n", f"[runtime]\n{runtime_dir}\n"))
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2, err
    assert f"{app / named}" in err and rule in err and "hint: " in err, err
    assert "Traceback" not in err
    assert not (workspace.root / "dist").exists() or not any(
        (workspace.root / "dist").iterdir())
