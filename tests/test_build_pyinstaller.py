"""Pure logic of the PyInstaller builder: the build's environment, foreign copies,
refusals that come before any build. The builds themselves run under Wine
(test_pyinstaller_wine.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bundler.build_pyinstaller import (
    build_environment,
    build_pyinstaller_app,
    foreign_copies,
    require_pyinstaller,
)
from bundler.errors import BuildError, RefusedError
from bundler.spec import load_spec

RUNTIME = frozenset({"cudnn64_8.dll", "cudart64_101.dll"})


def folder_with(tmp_path: Path, name: str, *files: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    for file in files:
        (folder / file).write_bytes(b"MZ")
    return str(folder)


def test_build_environment_hides_cuda_folders_and_cuda_path(tmp_path: Path) -> None:
    tools = folder_with(tmp_path, "tools", "git.exe", "zlib1.dll")
    decoy = folder_with(tmp_path, "decoy", "CUDNN64_8.DLL")           # a runtime DLL
    other_cuda = folder_with(tmp_path, "cuda11", "cublas64_11.dll")   # any CUDA library
    toolkit = tmp_path / "toolkit"
    toolkit.mkdir()
    libnvvp = folder_with(toolkit, "libnvvp", "readme.txt")           # under CUDA_PATH
    environ = {"PATH": os.pathsep.join([tools, decoy, str(tmp_path / "gone"), other_cuda,
                                        libnvvp, ""]),
               "CUDA_PATH": str(toolkit), "CUDA_PATH_V10_1": str(toolkit), "HOME": "h"}
    before = dict(environ)

    env, dropped = build_environment(environ, RUNTIME)

    assert env["PATH"].split(os.pathsep) == [tools, str(tmp_path / "gone"), ""]
    assert dropped == [decoy, other_cuda, libnvvp]
    assert "CUDA_PATH" not in env and "CUDA_PATH_V10_1" not in env
    assert env["HOME"] == "h"
    assert environ == before  # the user's own environment is not changed


def test_foreign_copies_are_found_anywhere_in_the_app(tmp_path: Path) -> None:
    (tmp_path / "_internal" / "pkg").mkdir(parents=True)
    (tmp_path / "_internal" / "pkg" / "CudNN64_8.dll").write_bytes(b"MZ")
    (tmp_path / "_internal" / "python311.dll").write_bytes(b"MZ")
    assert foreign_copies(tmp_path, RUNTIME) == ["_internal/pkg/CudNN64_8.dll"]


def test_missing_pyinstaller_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PyInstaller", None)  # as if it were not installed
    with pytest.raises(BuildError) as caught:
        require_pyinstaller()
    assert "PyInstaller is not installed" in caught.value.message
    assert "pip install bundler[pyinstaller]" in caught.value.hint


def test_onefile_is_refused_with_its_cost(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "app.spec").write_text(
        '[app]\nname = "x"\nbuilder = "pyinstaller"\nscript = "main.py"\nonefile = true\n'
        '[runtime]\nrecipe = "cudnn-8.0.3.33-cuda10.1-win-x64"\n')
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(RefusedError) as caught:
        build_pyinstaller_app(load_spec(tmp_path / "app.spec"), staging, tmp_path / "dist")
    assert "onefile" in caught.value.message
    assert "temporary folder on every start" in caught.value.hint
    assert not (tmp_path / "build").exists()  # refused before anything was built
