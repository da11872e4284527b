"""NVRTC's builtins library is named after the CUDA minor (libnvrtc-builtins.so.13.0 in the
13.0.88 release, .so.13.5 in the 13.5.37 one the Linux CUDA 13 set pins): a site-packages
pip installed another minor's NVRTC into, or that release's wheel, packs under its own
name, and libnvrtc.so.13's `loads` follows it. (Before, the installed 13.0 NVRTC beside
JAX on a GPU machine was refused: "lacks nvidia/cu13/lib/libnvrtc-builtins.so.13.5".)"""

from __future__ import annotations

from pathlib import Path

from bundler.recipe.load import find_recipe
from tests.harness.wheelkit import make_wheel
from tests.harness.winenv.paths import PROJECT_ROOT

RELEASE = "cudnn-9.19.0.56-cuda13-linux-x64"
LIB = "nvidia/cu13/lib"


def _installed_nvrtc(site: Path, version: str, builtins: str) -> Path:
    (site / LIB).mkdir(parents=True)
    for name in ("libnvrtc.so.13", builtins):
        (site / LIB / name).write_bytes(b"\x7fELF stand-in")
    info = site / f"nvidia_cuda_nvrtc-{version}.dist-info"
    (info / "licenses").mkdir(parents=True)
    (info / "licenses" / "License.txt").write_text("NVIDIA licence\n")
    return site


def test_an_installed_nvrtc_of_another_minor_keeps_its_own_builtins(tmp_path: Path) -> None:
    site = _installed_nvrtc(tmp_path / "site", "13.0.88", "libnvrtc-builtins.so.13.0")
    recipe = find_recipe(RELEASE, PROJECT_ROOT, {"nvrtc": site})
    assert f"{LIB}/libnvrtc-builtins.so.13.0" in recipe.sources["nvrtc"].contents
    assert "libnvrtc-builtins.so.13.5" not in recipe.files
    assert recipe.files["libnvrtc.so.13"].loads == ("libnvrtc-builtins.so.13.0",)
    assert "libnvrtc-builtins.so.13.0" in recipe.components["nvrtc"].files


def test_an_nvrtc_wheel_of_another_minor_keeps_its_own_builtins(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "wheels", {
        f"{LIB}/libnvrtc.so.13": b"\x7fELF stand-in",
        f"{LIB}/libnvrtc-builtins.so.13.0": b"\x7fELF stand-in",
        "nvidia_cuda_nvrtc-13.0.88.dist-info/licenses/License.txt": b"NVIDIA licence\n"},
        name="nvidia_cuda_nvrtc", version="13.0.88",
        platform="manylinux2010_x86_64.manylinux_2_12_x86_64")
    recipe = find_recipe(RELEASE, PROJECT_ROOT, {"nvrtc": wheel})
    assert recipe.files["libnvrtc.so.13"].loads == ("libnvrtc-builtins.so.13.0",)
    assert f"{LIB}/libnvrtc-builtins.so.13.0" in recipe.sources["nvrtc"].contents


def test_the_pinned_minor_is_still_asked_for_when_none_other_is_there(tmp_path: Path) -> None:
    site = _installed_nvrtc(tmp_path / "site", "13.0.88", "libnvrtc-builtins.so.13.0")
    (site / LIB / "libnvrtc-builtins.so.13.1").write_bytes(b"\x7fELF stand-in")   # two: ambiguous
    recipe = find_recipe(RELEASE, PROJECT_ROOT, {"nvrtc": site})
    assert f"{LIB}/libnvrtc-builtins.so.13.5" in recipe.sources["nvrtc"].contents
