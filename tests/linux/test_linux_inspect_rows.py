"""`bundler inspect` of a framework's library that needs cuDNN and cuBLAS says what a
bundle for it needs on either platform: the same stand-in built as an ELF `.so`
(NEEDED libcudnn.so.9, libcublas.so.13, gcc) and as a PE DLL (importing cudnn64_9.dll,
cublas64_13.dll, mingw) gets the same `bundle_needs` rows from each platform's CUDA 13
recipe (issue 40: the ELF one got none, its imports were judged by Windows names).

`gpu_library` builds the ELF stand-in; tests/linux/test_linux_mixups.py packs it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.harness.winenv import require_toolchain
from tests.harness.winenv.shaped import Shape, build_shaped
from tests.linux.test_linux_bundle import _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

pytestmark = linux_with_gcc

# The libraries the framework needs, as each platform names them.
ELF_NEEDS = ("libcudnn.so.9", "libcublas.so.13")
PE_NEEDS = ("cudnn64_9.dll", "cublas64_13.dll")


def gpu_library(folder: Path, name: str = "libframework.so",
                needs: tuple[str, ...] = ELF_NEEDS) -> Path:
    """An ELF library whose NEEDED entries are `needs` (each linked against a stand-in
    of that SONAME built in a scratch folder, removed after)."""
    scratch = folder / ".needed"
    for index, needed in enumerate(needs):
        _library(scratch, needed, f"int needed_{index}(void) {{ return {index}; }}\n")
    declared = "".join(f"int needed_{i}(void);\n" for i in range(len(needs)))
    calls = " + ".join(f"needed_{i}()" for i in range(len(needs))) or "0"
    out = _library(folder, name, f"{declared}int framework_call(void) {{ return {calls}; }}\n",
                   "-L", str(scratch), *(f"-l:{n}" for n in needs))
    for built in scratch.iterdir():
        built.unlink()
    scratch.rmdir()
    return out


def gpu_dll(folder: Path, name: str = "framework.dll",
            needs: tuple[str, ...] = PE_NEEDS) -> Path:
    """The same stand-in as a PE DLL importing `needs`."""
    require_toolchain()
    return build_shaped(Shape(name, tuple((n, ()) for n in needs)), folder)


def _rows(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, str]:
    """inspect --json's bundle_needs of the one library, each recipe named by its CUDA
    major alone (`cuda13`): the names normalized per platform."""
    code, out, err = run_cli(capsys, "inspect", str(path), "--json")
    assert code == 0, err
    [library] = json.loads(out)["libraries"]
    rows = {}
    for recipe, components in library["bundle_needs"]:
        rows[re.sub(r"^cudnn-[\d.]+-(cuda\d+)[\d.]*-(win|linux)-x64$", r"\1", recipe)] = \
            re.sub(r"lib(\w+)\.so\.(\d+)|(\w+?)64_(\d+)\.dll", _normal, components)
    return rows


def _normal(found: re.Match[str]) -> str:
    """libcublas.so.13 and cublas64_13.dll: both cublas 13."""
    stem, major = (found.group(1), found.group(2)) if found.group(1) else \
        (found.group(3), found.group(4))
    return f"{stem} {major}"


def test_a_so_and_a_dll_needing_cudnn_get_the_same_bundle_needs_rows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elf = _rows(capsys, gpu_library(tmp_path / "linux"))
    pe = _rows(capsys, gpu_dll(tmp_path / "windows"))
    assert elf["cuda13"] == "cudart, cublas, core, graph"
    assert elf["cuda13"] == pe["cuda13"]
    assert elf == {k: v for k, v in pe.items() if k in elf}


def test_a_so_needing_cudnn_9_is_not_served_by_a_cuda_12_linux_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rows come from the library's own platform's recipes: none is a Windows one."""
    code, out, err = run_cli(capsys, "inspect", str(gpu_library(tmp_path)), "--json")
    assert code == 0, err
    [library] = json.loads(out)["libraries"]
    assert library["bundle_needs"] and all(
        recipe.endswith("-linux-x64") for recipe, _ in library["bundle_needs"])


def test_a_folder_of_libraries_is_called_by_its_platforms_word(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gpu_library(tmp_path / "so", "liba.so")
    gpu_library(tmp_path / "so", "libb.so")
    code, out, err = run_cli(capsys, "inspect", str(tmp_path / "so"))
    assert code == 0, err
    assert ": folder, 2 libraries, " in out.splitlines()[0]
