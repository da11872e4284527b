"""The app scan picks the components an app needs, and refuses what no bundle can fix.

The ONNX Runtime case reads the REAL onnxruntime_providers_cuda.dll of onnxruntime-gpu
1.26.0 (a 226 MB wheel fetched once into the test cache, pinned by sha256): its import
table alone makes the pack select cuFFT. The runtimes are stand-in wheels laid out and
shaped like NVIDIA's (tests/harness/winenv/shaped.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bundler.formats.manifest import read_manifest
from bundler.recipe.load import Recipe, find_recipe
from bundler.windows.facts import windows_facts
from tests.harness.packing import run_cli
from tests.harness.winenv import require_toolchain
from tests.harness.winenv.shaped import (
    Shape,
    build_shaped,
    dist_info,
    standin_wheels,
    unpinned_recipe,
    wheel_members,
)
from tests.harness.winenv.wheels import ORT_PROVIDER, ort_wheel

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"
CU11 = "cudnn-8.9.4.25-cuda11-win-x64"
CU12 = "cudnn-9.28.0.42-cuda12-win-x64"
CU13 = "cudnn-9.28.0.42-cuda13-win-x64"


def recipe(name: str) -> Recipe:
    return find_recipe(name, Path.cwd())


def write_spec(root: Path, recipe_ref: str, sources: dict[str, Path], extra: str = "",
               entry: str = "") -> Path:
    lines = "\n".join(f'{sid} = "{p.as_posix()}"' for sid, p in sources.items())
    entry_line = f'entry = "{entry}"\n' if entry else ""
    spec = root / "app.spec"
    # Every runtime DLL here is a stand-in: none carries NVIDIA's signature.
    spec.write_text(f'[app]\nname = "app"\npath = "app"\n{entry_line}\n[runtime]\n'
                    f'recipe = "{recipe_ref}"\nallow_unsigned = ["*.dll"]\n{extra}\n'
                    f'[sources]\n{lines}\n')
    return spec


def standin_setup(root: Path, name: str, components: list[str]) -> tuple[str, dict[str, Path]]:
    """Stand-in wheels for `components` of recipe `name` and the recipe without their pins."""
    require_toolchain()
    shipped = recipe(name)
    wheels = standin_wheels(shipped, root / "standins", components)
    return str(unpinned_recipe(shipped, root, wheels)), wheels


@pytest.mark.parametrize("name, majors", [
    ("curand64_10.dll", (10, 11, 12, 13)), ("cusparse64_12.dll", (12, 13)),
    ("cusolver64_11.dll", (11, 12)), ("cufft64_12.dll", (13,)), ("cudart64_110.dll", (11,)),
    ("nvJitLink_120_0.dll", (12,)), ("nvrtc-builtins64_135.dll", (13,)),
    ("kernel32.dll", ())])
def test_a_library_name_names_the_cuda_majors_that_ship_it(name: str,
                                                            majors: tuple[int, ...]) -> None:
    assert windows_facts().cuda_majors_of(name) == majors


def test_the_default_selection_leaves_the_math_libraries_out() -> None:
    for name in (SEED, CU11, CU12, CU13):
        chosen = {c.name for c in recipe(name).select(None)}
        assert not chosen & {"cufft", "curand", "cusolver", "cusparse", "nvrtc", "nvjitlink",
                              "nvjpeg"}
    assert {c.name for c in recipe(CU12).select(["cusolver"])} == {
        "cublas", "cusolver", "cusparse", "nvjitlink"}


def test_the_real_ort_provider_makes_the_pack_select_cufft(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "app"
    wheel_members(ort_wheel(), ORT_PROVIDER, app)
    dist_info(app, "onnxruntime-gpu", "1.26.0")
    ref, wheels = standin_setup(tmp_path, CU12, ["core", "graph", "ops", "cnn", "adv", "ext",
                                                 "cufft"])
    code, out, err = run_cli(capsys, "pack", write_spec(tmp_path, ref, wheels))
    assert code == 0, err
    assert ("cufft: cufft64_11.dll: imported by onnxruntime/capi/onnxruntime_providers_cuda.dll"
            in out)
    manifest = read_manifest(tmp_path / "dist" / "app" / "cudnn" / "manifest.json")
    assert "cufft" in manifest.components
    assert "cudnn/cufft64_11.dll" in manifest.load_order


def test_a_library_nothing_provides_is_one_line_of_the_pack_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real TensorRT provider imports nvinfer_10.dll and nvonnxparser_10.dll, which
    neither the app, the recipe nor Windows has: the pack says so (text and --json).
    python311.dll, which the app's Python brings, is not named."""
    app = tmp_path / "app"
    wheel_members(ort_wheel(), "onnxruntime/capi/", app)
    dist_info(app, "onnxruntime-gpu", "1.26.0")
    ref, wheels = standin_setup(tmp_path, CU12, ["core", "graph", "ops", "cnn", "adv", "ext",
                                                 "cufft"])
    spec = write_spec(tmp_path, ref, wheels)
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    lines = [line for line in out.splitlines() if "not provided" in line]
    assert lines == [
        "  not provided: nvinfer_10.dll, nvonnxparser_10.dll, imported by "
        "onnxruntime/capi/onnxruntime_providers_tensorrt.dll: neither the bundle nor the "
        "system has them; that file loads only where the machine provides them"], out
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    assert json.loads(out)["not_provided"] == [
        {"by": "onnxruntime/capi/onnxruntime_providers_tensorrt.dll",
         "libraries": ["nvinfer_10.dll", "nvonnxparser_10.dll"]}]


def test_the_not_provided_lines_are_capped_and_json_has_every_one(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """25 plugins each import a DLL nothing provides: 20 lines, then a count. The DLL is
    named once though imported under two spellings (Windows ignores case)."""
    require_toolchain()
    plugin = build_shaped(Shape("plugin.dll", (("vendor_sdk.dll", ("standin_vendor_sdk",)),
                                               ("VENDOR_SDK.DLL", ("sdk_open",)))),
                          tmp_path / "built")
    for index in range(25):
        (tmp_path / "app" / f"p{index:02}").mkdir(parents=True)
        shutil.copy(plugin, tmp_path / "app" / f"p{index:02}" / "plugin.dll")
    spec = write_spec(tmp_path, SEED, {"cudnn": standin_zip, "cuda": standin_toolkit})
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    lines = [line for line in out.splitlines() if "not provided" in line]
    assert len(lines) == 21 and lines[0].lower().startswith(
        "  not provided: vendor_sdk.dll, imported by p00/plugin.dll: neither the bundle "
        "nor the system has it;"), lines[0]
    assert lines[-1] == "  not provided: what 5 more files import (--json lists them all)"
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0 and len(json.loads(out)["not_provided"]) == 25


def tensorflow_app(root: Path, version: str = "2.10.1") -> None:
    dist_info(root / "app" / "Lib" / "site-packages", "tensorflow", version)


def test_tensorflow_2_10_with_the_cuda_12_recipe_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tensorflow_app(tmp_path)
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12, {}))
    assert code == 2
    # The framework's cuDNN minimum (its table row) refuses it before its DLLs are compared.
    assert (f"{CU12} does not fit the app: tensorflow 2.10.1 needs cuDNN 8 at 8.1 or newer "
            "(bundler's framework table, row 'TensorFlow 2.10', says 8.1)") in err
    assert ("hint: use a release that fits: cudnn-8.9.5.29-cuda11-win-x64, cudnn-8.9.4.25-cuda11-"
            "win-x64 (NVIDIA's PyPI wheels: pack fetches them); cudnn-8.9.7.29-cuda11-win-x64 "
            "(NVIDIA's zip") in err, err
    assert not (tmp_path / "dist" / "app").exists()


def test_explicit_components_that_leave_a_needed_one_out_are_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tensorflow_app(tmp_path)
    spec = write_spec(tmp_path, CU11, {}, 'components = ["cnn_infer"]')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2
    assert "'cufft' (cufft64_10.dll: loaded by tensorflow 2.10.1)" in err
    assert "'cusolver'" in err and '"cufft"' in err


def test_paddle_2_2_is_a_cuda_10_2_build_and_is_told_which_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PyPI's 2.2.2 Windows wheel is a CUDA 10.2 / cuDNN 7.6.5 build (its table row)."""
    dist_info(tmp_path / "app", "paddlepaddle-gpu", "2.2.2")
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, SEED, {}))
    assert code == 2
    assert ("paddlepaddle-gpu 2.2.2 needs cuDNN 7 at 7.6.5 or newer (bundler's framework "
            "table, row 'PaddlePaddle 2.2-2.4 (CUDA 10.2)', says 7.6.5)") in err
    assert "hint: use a release that fits: cudnn-7.6.5.32-cuda10.2-win-x64 " in err


def test_the_real_ort_wheel_with_a_cuda_13_recipe_is_refused_in_one_short_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The real providers name CUDA 12 DLLs many times: each importer once with its DLLs,
    what the recipe has instead, and the one recipe that has them. (No dist-info here:
    with it, the framework's CUDA 12.2 refuses the recipe first, test_framework_facts.)"""
    wheel_members(ort_wheel(), "onnxruntime/capi/onnxruntime_providers_", tmp_path / "app")
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU13, {}))
    assert code == 2
    message = err.splitlines()[0]
    assert message.count("use ") == 1 and len(message) < 600, message
    assert ("onnxruntime/capi/onnxruntime_providers_tensorrt.dll imports cublas64_12.dll, "
            "cudart64_12.dll; ") in message
    assert message.endswith("; this recipe ships cublasLt64_13.dll, cublas64_13.dll, "
                            f"cufft64_12.dll, cudart64_13.dll; use {CU12}")


def test_an_app_shipping_torch_with_its_own_cudnn_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_toolchain()
    site = tmp_path / "app" / "site-packages"
    build_shaped(Shape("cudnn64_9.dll", ()), site / "torch" / "lib")
    torch_cuda = Shape("torch_cuda.dll", (("cudnn64_9.dll", ("standin_cudnn64_9",)),))
    build_shaped(torch_cuda, site / "torch" / "lib")
    dist_info(site, "torch", "2.5.1+cu124")
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12, {}))
    assert code == 2
    assert ("the app ships its own cudnn64_9.dll (site-packages/torch/lib/cudnn64_9.dll, "
            "from torch 2.5.1+cu124)") in err
    assert "WinError 127" in err and "allow_app_copies" in err


def test_the_scan_can_be_turned_off(tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    tensorflow_app(tmp_path)
    ref, wheels = standin_setup(tmp_path, CU12, [])
    spec = write_spec(tmp_path, ref, wheels, "[scan]\nenabled = false")
    code, out, err = run_cli(capsys, "--debug", "pack", spec, "--json")
    assert code == 0, err
    assert json.loads(out)["selected_because"] == {}


def test_a_spec_names_dlls_the_scan_cannot_see(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app").mkdir()
    ref, wheels = standin_setup(tmp_path, CU13, ["cusolver"])
    spec = write_spec(tmp_path, ref, wheels, '[scan]\ndlls = ["cusolver64_12.dll"]')
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["selected_because"] == {
        "cusolver": ["cusolver64_12.dll: named in app.spec [scan] dlls"]}
    # cuSOLVER 13 imports cuSPARSE 12 (also CUDA 12's name): not taken for a CUDA 12 build
    assert {"cusolver", "cusparse", "nvjitlink"} <= set(summary["components"])


def test_the_seed_recipe_packs_paddle_math_libraries_from_the_toolkit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        standin_zip: Path, standin_toolkit: Path) -> None:
    toolkit = tmp_path / "v10.1"
    shutil.copytree(standin_toolkit, toolkit)
    seed = recipe(SEED)
    for name in ("cufft64_10.dll", "curand64_10.dll", "cusparse64_10.dll",
                 "cusolver64_10.dll"):
        imports = (("cublas64_10.dll", ("cublasGetVersion_v2",)),) \
            if name.startswith("cusolver") else ()
        build_shaped(Shape(name, imports), toolkit / "bin")
    # A Paddle built from source against cuDNN 8 (no released 2.x CUDA 10.1 build is):
    # the spec names what its dynamic loader loads.
    (tmp_path / "app" / "paddle").mkdir(parents=True)
    names = '", "'.join(("cufft64_10.dll", "curand64_10.dll", "cusparse64_10.dll",
                         "cusolver64_10.dll", "cudnn64_8.dll"))
    spec = write_spec(tmp_path, SEED, {"cudnn": standin_zip, "cuda": toolkit},
                      f'[scan]\ndlls = ["{names}"]')
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert {"cufft", "curand", "cusparse", "cusolver"} <= set(summary["selected_because"])
    shipped = {Path(f["path"]).name for f in summary["files"]}
    assert {"cufft64_10.dll", "curand64_10.dll", "cusparse64_10.dll",
            "cusolver64_10.dll"} <= shipped
    assert seed.supplier_of("nvrtc64_101_0.dll") is not None


def test_inspect_on_the_real_ort_provider_lists_what_a_bundle_needs(tmp_path: Path) -> None:
    from bundler.diagnose.inspection import inspect_path, render

    provider = wheel_members(ort_wheel(), ORT_PROVIDER, tmp_path)[0]
    report = inspect_path(provider)
    needs = dict(report.dlls[0].bundle_needs)
    # core (cudnn64_9.dll) brings graph, which the shim loads at its first call
    assert needs[CU12] == "cudart, cublas, core, graph, cufft"
    assert needs[CU11].startswith("lacks cublasLt64_12.dll")
    assert "a bundle for it needs" in "\n".join(render(report))


def test_the_framework_table_knows_what_each_ort_release_loads() -> None:
    from bundler.windows.compat import compat_facts

    compat = compat_facts()
    for version, cufft in (("1.18.1", "cufft64_10.dll"), ("1.26.0", "cufft64_11.dll"),
                           ("1.27.0", "cufft64_12.dll"), ("1.31.1", "cufft64_12.dll")):
        entry = compat.framework_entry("onnxruntime-gpu", version)
        assert entry is not None and cufft in entry.loads


def test_cuda_13s_hybrid_runtime_comes_with_the_driver() -> None:
    # named by cudart64_13 and most CUDA 13 DLLs; installed by the R580+ driver
    assert windows_facts().is_driver("nvcudart_hybrid64.dll")
    assert recipe(CU13).supplier_of("nvcudart_hybrid64.dll") is None
