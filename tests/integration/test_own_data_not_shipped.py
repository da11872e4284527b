"""bundler's own data never ships (issue 28 item 6): an app folder of "." holding the
spec and its lock, the spec's own cuDNN zip and CUDA toolkit, the runtime store
($BUNDLER_STORE=app/store), the download cache, bundler's PyInstaller work folder, an
earlier bundle and its zip in dist/ and a killed --zip's partial file: the bundle
carries none of them, the pack summary names each as left out, and the toolkit's DLLs
are not taken for the app's own copies (they are bundler's input)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.harness.packing import make_workspace, run_cli

OWN = {"app.spec": "the spec bundler packs from",
       "app.spec.lock": "the spec's lock",
       "cudnn.zip": "the input 'cudnn'",
       "cuda": "the input 'cuda'",
       "store": "bundler's runtime store",
       "cache": "bundler's download cache",
       "build/bundler-app": "bundler's PyInstaller work folder",
       ".app.zip.abcd1234.partial": "a zip bundler made"}


def test_nothing_of_bundlers_own_ships_from_an_app_folder_of_dot(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = make_workspace(tmp_path / "ws", standin_framework, {})
    app = workspace.root / "app"
    shutil.copy(standin_zip, app / "cudnn.zip")
    shutil.copytree(standin_toolkit, app / "cuda")
    spec = app / "app.spec"
    spec.write_text(workspace.spec.read_text().replace('path = "app"', 'path = "."').replace(
        "[sources]\n", '[sources]\ncudnn = "cudnn.zip"\ncuda = "cuda"\n'))
    workspace.spec.unlink()
    monkeypatch.setenv("BUNDLER_STORE", str(app / "store"))
    monkeypatch.setenv("BUNDLER_CACHE", str(app / "cache"))
    (app / "cache").mkdir()
    (app / "build" / "bundler-app").mkdir(parents=True)
    (app / "build" / "bundler-app" / "app.spec").write_text("# bundler's\n")
    (app / ".app.zip.abcd1234.partial").write_bytes(b"PK half a zip")
    dist = app / "dist" / "app"
    for again in ([], ["--recheck"]):   # the second finds the lock, store, first bundle
        code, out, err = run_cli(capsys, "pack", spec, "--json", "--zip",
                                 app / "dist" / "app.zip", *again)
        assert code == 0, err
    shipped = {p.relative_to(dist).as_posix() for p in dist.rglob("*")}
    for relpath in OWN:
        assert relpath not in shipped, relpath
    # dist/ and build/ stay as the empty folders they are once bundler's parts are out
    assert not [p for p in shipped if p.startswith(("store/", "cache/", "cuda/", "dist/",
                                                    "build/"))]
    skipped = {s["path"]: s["why"] for s in json.loads(out)["skipped_from_app"]}
    for relpath, why in OWN.items():
        assert why in skipped.get(relpath, ""), (relpath, skipped)
    assert (dist / "main.py").is_file() and (dist / "framework.dll").is_file()
