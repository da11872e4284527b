"""Platforms not mixed up (issue 40): an app whose GPU libraries are ELF `.so` files is
refused with a Windows recipe, and one whose GPU libraries are DLLs with a Linux recipe
(exit 2, naming the file and its platform, the recipe and its platform, and the
release to use), before any input is looked for; an app holding both packs with either.
The stand-ins are built here (gcc, mingw: tests/linux/test_linux_inspect_rows.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.linux.test_linux_bundle import GRAPH, RECIPE, SHIM, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc
from tests.linux.test_linux_inspect_rows import gpu_dll, gpu_library

pytestmark = linux_with_gcc

WINDOWS_RECIPE = "cudnn-9.28.0.42-cuda12-win-x64"
LINUX_RECIPE = "cudnn-9.19.0.56-cuda13-linux-x64"


def _spec(root: Path, recipe: str, sources: str = "") -> Path:
    (root / "app").mkdir(parents=True, exist_ok=True)
    (root / "app" / "main.py").write_text("print('hello')\n")
    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    f'recipe = "{recipe}"\n{sources}')
    return spec


def test_an_app_of_elf_libraries_is_refused_with_a_windows_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, WINDOWS_RECIPE)
    gpu_library(tmp_path / "app" / "lib")
    (tmp_path / "app" / "lib" / "libplain.so").write_text("not a library, no GPU")
    # no [sources], --offline: the refusal comes before any input is looked for
    code, _, err = run_cli(capsys, "pack", str(spec), "--offline")
    assert code == 2, err
    assert ("lib/libframework.so (a Linux x86-64 library that imports libcudnn.so.9), "
            f"but recipe {WINDOWS_RECIPE} is for Windows x64 (win-amd64)") in err
    assert "e.g. cudnn-9.28.0.42-cuda12-linux-x64" in err and "bundler init" in err
    assert "source" not in err.split("hint:")[0]
    assert not (tmp_path / "dist").exists()


def test_an_app_of_dlls_is_refused_with_a_linux_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, LINUX_RECIPE)
    gpu_dll(tmp_path / "app" / "bin")
    code, _, err = run_cli(capsys, "pack", str(spec), "--offline")
    assert code == 2, err
    assert "bin/framework.dll (a Windows x64 DLL that imports cublas64_13.dll)" in err
    assert f"but recipe {LINUX_RECIPE} is for Linux x86-64 (linux-x86_64)" in err
    assert "pack it with a win-x64 recipe, e.g. cudnn-9.19.0.56-cuda13-win-x64" in err
    assert not (tmp_path / "dist").exists()


def test_a_cudnn_library_of_the_other_platform_counts_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """NVIDIA's own libcudnn.so.9 in the app (a Linux wheel's) with a Windows recipe."""
    spec = _spec(tmp_path, WINDOWS_RECIPE)
    _library(tmp_path / "app" / "nvidia" / "cudnn" / "lib", "libcudnn.so.9", SHIM, "-ldl")
    code, _, err = run_cli(capsys, "pack", str(spec), "--offline")
    assert code == 2, err
    assert "nvidia/cudnn/lib/libcudnn.so.9 (a Linux x86-64 library that is libcudnn.so.9)" \
        in err


@pytest.mark.parametrize("with_dll", [False, True], ids=["elf-only", "elf-and-dll"])
def test_an_elf_app_packs_with_a_linux_recipe_even_beside_dlls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], with_dll: bool) -> None:
    nvidia = tmp_path / "nvidia" / "cudnn" / "lib"
    _library(nvidia, "libcudnn_graph.so.9", GRAPH.replace("MARKER", "1"))
    _library(nvidia, "libcudnn.so.9", SHIM, "-ldl")
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = _spec(tmp_path, "standin.toml",
                 f'[sources]\nnvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    gpu_library(tmp_path / "app" / "lib", needs=("libcudnn.so.9",))
    if with_dll:   # a plug-in folder for either OS: the Linux half is served
        gpu_dll(tmp_path / "app" / "windows")
    code, _, err = run_cli(capsys, "pack", str(spec), "--offline")
    assert code == 0, err
    assert (tmp_path / "dist" / "app" / "lib" / "libframework.so").is_file()
