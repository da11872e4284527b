"""The runtime half from the spec's own inputs: a CUDA 11.x-13.x toolkit folder (`cuda`)
or another release's wheel of a companion (`cublas`, `cudart`, ...) instead of the
runtime set's pinned wheels (bundler/releases/runtime_inputs.py).

Stand-in DLLs shaped like the real ones (tests/harness/winenv/shaped.py); the toolkit bundle is
loaded under Wine ahead of decoys on PATH.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundler.formats.lockfile import read_lock
from bundler.recipe.load import Recipe, find_recipe
from bundler.support.hashing import sha256_file
from tests.harness.packing import run_cli
from tests.harness.wheelkit import make_wheel
from tests.harness.winenv import WindowsPython, require_toolchain
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.shaped import build_shaped, recipe_shape
from tests.integration.test_app_scan import write_spec
from tests.wine.test_frameworks_wine import LOADER, decoy_dir, run_loader

RELEASE = "cudnn-9.1.0.70-cuda12-win-x64"
LICENCE = b"STAND-IN licence text for bundler's tests; not NVIDIA's.\n"


def installer_folder(root: Path, cuda: str = "12.4") -> Path:
    """The folder NVIDIA's cuDNN 9 installer makes, with placeholders until shaped."""
    folder = root / "CUDNN" / "v9.1"
    (folder / "bin" / cuda).mkdir(parents=True)
    (folder / "bin" / cuda / "cudnn64_9.dll").write_bytes(b"MZ")
    (folder / "LICENSE").write_bytes(LICENCE)
    return folder


def toolkit_folder(root: Path, version: str, dlls: list[str], bin_dir: str = "bin") -> Path:
    folder = root / "CUDA" / f"v{version.rsplit('.', 1)[0]}"
    (folder / bin_dir).mkdir(parents=True)
    for name in dlls:
        (folder / bin_dir / name).write_bytes(b"MZ")
    (folder / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK",
                                                              "version": version}}))
    (folder / "EULA.txt").write_bytes(LICENCE)
    return folder


def shape_inputs(recipe: Recipe, inputs: dict[str, Path]) -> None:
    """Replace every placeholder DLL the recipe takes from a folder with a stand-in
    shaped like the real one (its imports, its version resource)."""
    for item in recipe.files_for(recipe.select(None)):
        source = recipe.sources[item.source]
        if source.kind in ("folder", "toolkit") and item.name.lower().endswith(".dll"):
            built = build_shaped(recipe_shape(recipe, item.name), inputs[item.source].parent
                                 / "shaped")
            (inputs[item.source] / item.member).write_bytes(built.read_bytes())


def app_with(root: Path, inputs: dict[str, Path]) -> Path:
    (root / "app").mkdir()
    (root / "app" / "main.py").write_text(LOADER)
    return write_spec(root, RELEASE, inputs, entry="main.py")


def test_a_cuda_12_toolkit_folder_replaces_the_runtime_wheels_and_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], win_python: WindowsPython) -> None:
    require_toolchain()
    inputs = {"cudnn": installer_folder(tmp_path),
              "cuda": toolkit_folder(tmp_path, "12.4.131", [
                  "cudart64_12.dll", "cublas64_12.dll", "cublasLt64_12.dll",
                  "nvrtc64_120_0.dll", "nvrtc-builtins64_124.dll"])}
    recipe = find_recipe(RELEASE, PROJECT_ROOT, inputs)
    assert set(recipe.sources) == {"cudnn", "cuda"}
    assert recipe.cuda == "12.4.131" and recipe.min_driver == "551.61"   # CUDA 12.4's
    assert recipe.files["nvrtc64_120_0.dll"].loads == ("nvrtc-builtins64_124.dll",)
    assert recipe.files["cudart64_12.dll"].version == ""   # the 12.9 wheel's is not 12.4's
    shape_inputs(recipe, inputs)

    spec = app_with(tmp_path, inputs)
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    names = {f["name"]: f["source"] for f in summary["files"]}
    assert names["cudart64_12.dll"] == names["cublasLt64_12.dll"] == "cuda"
    assert "NVIDIA_CUDA_EULA.txt" in names
    assert summary["inputs_trusted"]["cuda"].startswith("trusted on first pack")
    lock = read_lock(spec.parent / "app.spec.lock")
    assert lock is not None and lock.sources["cuda"].kind == "toolkit"

    decoys = decoy_dir(tmp_path, {"cudart64_12.dll": (), "cudnn64_9.dll": ()})
    loaded = run_loader(win_python, tmp_path / "dist" / "app" / "main.py",
                        ["cudnn64_9.dll", "cudart64_12.dll"], ["cudart64_12.dll"], decoys)
    assert loaded["errors"] == {"cudnn64_9.dll": 0, "cudart64_12.dll": 0}, loaded
    assert "\\dist\\app\\cudnn\\" in loaded["modules"]["cudart64_12.dll"], loaded


def test_a_cuda_13_toolkit_keeps_its_dlls_in_bin_x64(tmp_path: Path) -> None:
    inputs = {"cuda": toolkit_folder(tmp_path, "13.0.2", [
        "cudart64_13.dll", "cublas64_13.dll", "cublasLt64_13.dll"], bin_dir="bin/x64")}
    recipe = find_recipe("cudnn-9.28.0.42-cuda13-win-x64", PROJECT_ROOT, inputs)
    assert recipe.files["cudart64_13.dll"].member == "bin/x64/cudart64_13.dll"
    assert recipe.min_driver == "580"   # the CUDA 13 set's own figure
    # The optional math libraries this toolkit lacks are not offered.
    assert "cufft" not in recipe.components


@pytest.mark.parametrize("version, dlls, message", [
    ("11.8.0", ["cudart64_110.dll"], "a CUDA 11.8.0 toolkit, but the release is built for "
                                     "CUDA 12"),
    ("12.4.131", ["cudart64_12.dll"], "has no cublas64_12.dll, cublasLt64_12.dll"),
    ("", ["cudart64_12.dll"], "no version.json or version.txt"),
])
def test_a_toolkit_that_cannot_serve_the_release_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str, dlls: list[str],
        message: str) -> None:
    toolkit = toolkit_folder(tmp_path, version or "12.4.0", dlls)
    if not version:
        (toolkit / "version.json").unlink()
    spec = app_with(tmp_path, {"cudnn": installer_folder(tmp_path), "cuda": toolkit})
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2 and message in err, err
    assert str(toolkit) in err


def companion_wheel(folder: Path, name: str, version: str, members: dict[str, bytes]) -> Path:
    return make_wheel(folder, {**members, f"{name}-{version}.dist-info/License.txt": LICENCE},
                      name=name, version=version)


def test_another_release_of_a_companion_wheel_is_paired_by_the_spec(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cuBLAS 12.4 and the CUDA 12.4 runtime instead of the set's 12.9 wheels: same DLL
    names, a licence where those older wheels keep it (dist-info/License.txt)."""
    require_toolchain()
    cudnn = installer_folder(tmp_path)
    plain = find_recipe(RELEASE, PROJECT_ROOT, {"cudnn": cudnn})
    dlls = {n: build_shaped(recipe_shape(plain, n), tmp_path / "shaped").read_bytes()
            for n in ("cublas64_12.dll", "cublasLt64_12.dll", "cudart64_12.dll")}
    wheels = tmp_path / "wheels"
    inputs = {
        "cudnn": cudnn,
        "cublas": companion_wheel(wheels, "nvidia_cublas_cu12", "12.4.5.8", {
            f"nvidia/cublas/bin/{n}": dlls[n] for n in ("cublas64_12.dll", "cublasLt64_12.dll")}),
        "cudart": companion_wheel(wheels, "nvidia_cuda_runtime_cu12", "12.4.127", {
            "nvidia/cuda_runtime/bin/cudart64_12.dll": dlls["cudart64_12.dll"]})}
    recipe = find_recipe(RELEASE, PROJECT_ROOT, inputs)
    assert (recipe.sources["cublas"].version, recipe.sources["cublas"].sha256) == ("12.4.5.8", "")
    assert recipe.sources["cufft"].sha256 == plain.sources["cufft"].sha256   # the rest stays
    shape_inputs(recipe, inputs)

    spec = app_with(tmp_path, inputs)
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["inputs_trusted"]["cublas"].startswith("trusted on first pack")
    licences = {f["name"] for f in summary["files"] if f["name"].endswith(".txt")}
    assert "NVIDIA_cuBLAS_LICENSE.txt" in licences
    lock = read_lock(spec.parent / "app.spec.lock")
    assert lock is not None
    assert lock.sources["cublas"].sha256 == sha256_file(inputs["cublas"])   # pinned now


def test_a_companion_wheel_of_another_package_or_abi_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    cufft = companion_wheel(wheels, "nvidia_cufft_cu12", "11.2.1.3",
                            {"nvidia/cufft/bin/cufft64_11.dll": b"MZ"})
    cublas11 = companion_wheel(wheels, "nvidia_cublas_cu12", "12.0.0.1",
                               {"nvidia/cublas/bin/cublas64_11.dll": b"MZ"})
    cases = [(cufft, "a wheel of nvidia-cufft-cu12, but source 'cublas' is nvidia-cublas-cu12"),
             (cublas11, "has no nvidia/cublas/bin/cublas64_12.dll (source 'cublas' needs it)")]
    for wheel, message in cases:
        spec = app_with(tmp_path / wheel.stem, {"cudnn": installer_folder(tmp_path / wheel.stem),
                                                "cublas": wheel})
        code, _, err = run_cli(capsys, "pack", spec)
        assert code == 2 and message in err, err


def test_a_cuda_11_0_toolkit_says_its_release_in_version_txt(tmp_path: Path) -> None:
    """CUDA 11.0's installer wrote version.txt; version.json came with 11.1."""
    toolkit = toolkit_folder(tmp_path, "11.0.221", ["cudart64_110.dll", "cublas64_11.dll",
                                                    "cublasLt64_11.dll"])
    (toolkit / "version.json").unlink()
    (toolkit / "version.txt").write_text("CUDA Version 11.0.221\n")
    recipe = find_recipe("cudnn-8.9.4.25-cuda11-win-x64", PROJECT_ROOT, {"cuda": toolkit})
    assert recipe.cuda == "11.0.221" and recipe.min_driver == "451.48"
