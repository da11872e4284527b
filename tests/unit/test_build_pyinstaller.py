"""The PyInstaller builder's logic: the build's environment, foreign copies, and
refusals. Real Windows builds run under Wine (test_pyinstaller_wine.py); the
refusals made by the wrapper spec are the same everywhere, so they run with
this machine's PyInstaller."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bundler.errors import BuildError, RefusedError
from bundler.pack.builders.pyinstaller import (
    build_environment,
    build_pyinstaller_app,
    foreign_copies,
    freeze,
    require_pyinstaller,
)
from bundler.pack.spec import load_spec
from bundler.recipe.load import find_recipe

RUNTIME = frozenset({"cudnn64_8.dll", "cudart64_101.dll"})


def folder_with(tmp_path: Path, name: str, *files: str) -> str:
    folder = tmp_path / name
    folder.mkdir()
    for file in files:
        (folder / file).write_bytes(b"MZ")
    return str(folder)


def own_spec_project(tmp_path: Path, pyinstaller_spec: str) -> tuple[Path, Path]:
    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "cudnn64_8.dll").write_bytes(b"MZ stand-in")
    (tmp_path / "p.spec").write_text(pyinstaller_spec)
    (tmp_path / "app.spec").write_text(
        '[app]\nname = "x"\nbuilder = "pyinstaller"\npyinstaller_spec = "p.spec"\n'
        '[runtime]\nrecipe = "cudnn-8.0.3.33-cuda10.1-win-x64"\n')
    staging = tmp_path / "staging"
    staging.mkdir()
    return tmp_path / "app.spec", staging


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
    assert 'pip install "pyinstaller>=6"' in caught.value.hint


def test_building_for_another_platform_is_refused(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    spec, staging = own_spec_project(tmp_path, "raise SystemExit('must not run')\n")
    monkeypatch.setattr("sysconfig.get_platform", lambda: "linux-x86_64")
    with pytest.raises(RefusedError) as caught:
        loaded = load_spec(spec)
        build_pyinstaller_app(loaded, find_recipe(loaded.recipe, loaded.folder), staging,
                              tmp_path / "dist")
    assert "linux-x86_64" in caught.value.message and "win-amd64" in caught.value.message
    assert "64-bit Windows Python" in caught.value.hint


def test_onefile_is_refused_with_its_cost(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "app.spec").write_text(
        '[app]\nname = "x"\nbuilder = "pyinstaller"\nscript = "main.py"\nonefile = true\n'
        '[runtime]\nrecipe = "cudnn-8.0.3.33-cuda10.1-win-x64"\n')
    staging = tmp_path / "staging"
    staging.mkdir()
    with pytest.raises(RefusedError) as caught:
        freeze(load_spec(tmp_path / "app.spec"), staging, RUNTIME)
    assert "onefile" in caught.value.message
    assert "temporary folder on every start" in caught.value.hint
    assert not (tmp_path / "build").exists()  # refused before anything was built


# The wrapper spec's own logic is the same on every platform: these two run the
# build machine's PyInstaller (a test dependency) and stop before an app is made.

def test_onefile_exe_in_own_spec_is_refused(tmp_path: Path) -> None:
    spec, staging = own_spec_project(tmp_path, (
        "a = Analysis(['main.py'])\npyz = PYZ(a.pure)\n"
        "exe = EXE(pyz, a.scripts, a.binaries, a.datas, name='one')\n"))
    with pytest.raises(RefusedError) as caught:
        freeze(load_spec(spec), staging, RUNTIME)
    assert "EXE 'one' is a onefile build" in caught.value.message
    assert "exclude_binaries=True" in caught.value.hint
    assert not [p for p in staging.rglob("*") if p.is_file()]  # stopped before the EXE


def test_runtime_dll_brought_by_own_spec_is_refused(tmp_path: Path) -> None:
    spec, staging = own_spec_project(tmp_path, (
        "a = Analysis(['main.py'], datas=[('cudnn64_8.dll', 'vendor')])\npyz = PYZ(a.pure)\n"
        "exe = EXE(pyz, a.scripts, [], exclude_binaries=True, name='app')\n"
        "coll = COLLECT(exe, a.binaries, a.datas, name='app')\n"))
    with pytest.raises(BuildError) as caught:
        freeze(load_spec(spec), staging, RUNTIME)
    assert "collected _internal/vendor/cudnn64_8.dll itself" in caught.value.message
    assert "binaries/datas" in caught.value.hint


def test_the_wrapper_spec_and_log_are_where_the_docs_say(tmp_path: Path) -> None:
    """docs/pyinstaller.md: the wrapper is build/bundler-<name>/bundler.spec, the log
    beside it."""
    spec, staging = own_spec_project(tmp_path, "raise SystemExit(3)\n")
    with pytest.raises(BuildError):
        freeze(load_spec(spec), staging, RUNTIME)
    work = tmp_path / "build" / "bundler-x"
    assert (work / "bundler.spec").is_file() and (work / "pyinstaller.log").is_file()


def test_pyinstaller_that_cannot_be_started_is_said_so(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The system refusing to start PyInstaller (Wine's CreateProcess 'Internal error',
    a missing interpreter) is named as such, not as "a file bundler needed"."""
    from bundler.pack.builders import pyinstaller

    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(22, "Internal error")

    monkeypatch.setattr(pyinstaller.subprocess, "Popen", refused)
    plan = pyinstaller.BuildPlan(work=tmp_path, app_spec=tmp_path / "ocr.spec",
                                 wrapper=tmp_path / "wrapper.spec",
                                 layout=tmp_path / "layout.json", log=tmp_path / "log.txt",
                                 cwd=tmp_path, bootstrap_sha256="")
    spec = type("S", (), {"name": "ocr"})()
    with pytest.raises(BuildError) as caught:
        pyinstaller._run_pyinstaller(spec, plan, tmp_path / "dist", {}, [])  # type: ignore[arg-type]
    assert caught.value.message.startswith(f"{tmp_path / 'ocr.spec'}: PyInstaller could not "
                                           "be started ("), caught.value.message
