"""`bundler init` writes the spec for the app's platform (issue 40): from its GPU
libraries' headers (an ELF .so importing libcudnn.so.9: a linux-x64 recipe), else from
--platform, its requirements file or its scripts, and says which in its first line. An
app holding both platforms' GPU libraries is refused unless --platform says which; a
--platform its binaries contradict is refused. The stand-ins are built here (gcc, mingw:
tests/linux/test_linux_inspect_rows.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundler.support.toml_tables import tomllib
from tests.harness.packing import run_cli
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc
from tests.linux.test_linux_inspect_rows import gpu_dll, gpu_library

pytestmark = linux_with_gcc


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """One level below pytest's: init also searches the folder beside the spec's."""
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture(autouse=True)
def _no_cuda_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("CUDA_PATH"):
            monkeypatch.delenv(name)
    monkeypatch.delenv("BUNDLER_CACHE", raising=False)


def _app(root: Path, script: str = "print('hello')\n") -> Path:
    app = root / "app"
    app.mkdir(parents=True, exist_ok=True)
    (app / "main.py").write_text(script)
    return app


def _init(capsys: pytest.CaptureFixture[str], app: Path, *args: str
          ) -> tuple[int, str, str, dict]:
    code, out, err = run_cli(capsys, "init", str(app), *args)
    spec = app.parent / "app.spec"
    written = tomllib.loads(spec.read_text(encoding="utf-8")) if spec.is_file() else {}
    return code, out, err, written


def test_a_linux_app_gets_a_linux_recipe_from_its_elf_library(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path)
    gpu_library(app / "lib")
    code, out, err, spec = _init(capsys, app)
    assert code == 0, err
    assert out.splitlines()[0] == ("platform linux-x64, from lib/libframework.so (a Linux "
                                   "x86-64 library that imports libcudnn.so.9)")
    assert spec["runtime"]["recipe"].endswith("-cuda13-linux-x64")
    assert {"core", "cublas"} <= set(spec["runtime"]["components"])
    (tmp_path / "app.spec").rename(tmp_path / "first.spec")
    code, out, err, again = _init(capsys, app, "--platform", "linux-x64")   # agrees
    assert code == 0 and out.splitlines()[0].endswith("from lib/libframework.so (a Linux "
                                                      "x86-64 library that imports "
                                                      "libcudnn.so.9)"), err
    assert again["runtime"] == spec["runtime"]
    (tmp_path / "app.spec").unlink()
    (tmp_path / "first.spec").rename(tmp_path / "app.spec")
    text = (tmp_path / "app.spec").read_text()
    assert "# cublas: libcublas.so.13: imported by lib/libframework.so" in text
    # pack takes the spec as written: no platform refusal (offline: the wheels are missing)
    code, _, err = run_cli(capsys, "pack", str(tmp_path / "app.spec"), "--offline")
    assert "GPU binaries are" not in err


def test_a_windows_app_still_gets_a_windows_recipe_from_its_dll(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path)
    gpu_dll(app / "bin")
    code, out, err, spec = _init(capsys, app)
    assert code == 0, err
    assert out.splitlines()[0].startswith("platform win-x64, from bin/framework.dll (a "
                                          "Windows x64 DLL that imports ")
    assert spec["runtime"]["recipe"].endswith("-cuda13-win-x64")


def test_an_app_of_both_platforms_is_refused_unless_platform_says_which(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path)
    gpu_library(app / "lib")
    gpu_dll(app / "bin")
    code, out, err, spec = _init(capsys, app)
    assert code == 2 and not spec, out
    assert "bin/framework.dll (a Windows x64 DLL" in err
    assert "lib/libframework.so (a Linux x86-64 library that imports libcudnn.so.9)" in err
    assert "--platform win-x64 or --platform linux-x64" in err
    code, out, err, spec = _init(capsys, app, "--platform", "linux-x64")
    assert code == 0, err
    assert out.splitlines()[0].startswith("platform linux-x64, from --platform (the app "
                                          "also holds bin/framework.dll")
    assert spec["runtime"]["recipe"].endswith("-linux-x64")
    assert "app --platform linux-x64`" in " ".join(
        (tmp_path / "app.spec").read_text().replace("#", "").split())


def test_a_platform_the_binaries_contradict_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path)
    gpu_library(app / "lib")
    code, _, err, spec = _init(capsys, app, "--platform", "win-x64")
    assert code == 2 and not spec
    assert "--platform win-x64: the app's GPU binaries are Linux x86-64 ones, e.g. " \
        "lib/libframework.so" in err


@pytest.mark.parametrize("asked", ["linux-x64", "linux-x86_64"])
def test_an_app_without_binaries_takes_platform_from_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], asked: str) -> None:
    app = _app(tmp_path)
    code, out, err, spec = _init(capsys, app, "--platform", asked)
    assert code == 0, err
    assert out.splitlines()[0] == "platform linux-x64, from --platform"
    assert spec["runtime"]["recipe"] == "cudnn-9.19.0.56-cuda13-linux-x64"   # shipped
    assert "default recipe for linux-x64" in " ".join((tmp_path / "app.spec").read_text()
                                                      .replace("#", "").split())


def test_an_unknown_platform_is_bad_input(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err, spec = _init(capsys, _app(tmp_path), "--platform", "macos-arm64")
    assert code == 2 and not spec
    assert "--platform macos-arm64: no platform bundler knows has that name" in err
    assert "hint: use one of: win-x64, win-amd64, linux-x64, linux-x86_64" in err


def test_a_script_naming_libcudnn_so_makes_a_linux_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path, 'import ctypes\nctypes.CDLL("libcudnn.so.9")\n')
    code, out, err, spec = _init(capsys, app)
    assert code == 0, err
    assert out.splitlines()[0] == "platform linux-x64, from main.py: it names libcudnn.so.9"
    assert spec["runtime"]["recipe"].endswith("-linux-x64")


def test_requirements_naming_a_manylinux_wheel_make_a_linux_folder_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path)
    (app / "requirements.txt").write_text(
        "numpy==2.1.0\n./wheels/mylib-1.0-cp311-cp311-manylinux_2_17_x86_64.whl\n")
    code, out, err, spec = _init(capsys, app)
    assert code == 0, err
    assert out.splitlines()[0] == (
        "platform linux-x64, from requirements.txt: line 2 names "
        "mylib-1.0-cp311-cp311-manylinux_2_17_x86_64.whl, a Linux x86-64 wheel")
    assert out.splitlines()[1].startswith("builder folder: ")   # embedded-python is Windows's
    assert spec["runtime"]["recipe"].endswith("-linux-x64")
    assert spec["app"].get("builder", "folder") == "folder"


def test_requirements_for_the_embedded_python_builder_make_a_windows_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path)
    (app / "requirements.txt").write_text("numpy==2.1.0\n")
    code, out, err, spec = _init(capsys, app)
    assert code == 0, err
    assert out.splitlines()[0].startswith(
        "platform win-x64, from requirements.txt: the embedded-python builder installs it "
        "into python.org's Windows x64 CPython")
    assert spec["app"]["builder"] == "embedded-python"
    code, _, err, spec = _init(capsys, _app(tmp_path / "other"), "--platform", "linux-x64",
                               "--builder", "embedded-python")
    assert code == 2 and not spec and "--builder folder" in err
