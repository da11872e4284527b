"""Framework apps under Wine: every CUDA/cuDNN DLL a framework loads comes from the bundle.

- onnxruntime-gpu 1.26: the REAL onnxruntime_providers_cuda.dll cannot run its DllMain
  under Wine 8 (error 998), so the app ships a stand-in generated from the real DLL's
  import table (same DLL names, same imported function names). The app loads it as
  onnxruntime.dll does: LoadLibraryExW(full path, NULL, LOAD_WITH_ALTERED_SEARCH_PATH).
  With decoys of cudnn64_9.dll and cufft64_11.dll on PATH: unbundled it fails with 126
  (or gets a decoy); packed with the CUDA 12 recipe (the scan adds cuFFT by itself) it
  loads and every CUDA/cuDNN module in the process is the bundle's.
- TensorFlow 2.10.1 (detected by its dist-info): packed with the CUDA 11 recipe, the
  eight DLLs TF loads, each LoadLibraryExW(name, NULL, 8) as its dso_loader does, with
  decoys on PATH, all come from the bundle.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.shaped import (
    Shape,
    build_shaped,
    dist_info,
    marker,
    pe_tables,
    wheel_members,
)
from tests.harness.winenv.wheels import ORT_PROVIDER, ort_wheel
from tests.integration.test_app_scan import CU11, CU12, standin_setup, write_spec

# Loads each argument like a framework does and reports, for every CUDA/cuDNN module
# then in the process, the file it was loaded from.
LOADER = r'''
import ctypes, json, os, sys
from ctypes import wintypes

k32 = ctypes.WinDLL("kernel32", use_last_error=True)
k32.LoadLibraryExW.restype = wintypes.HMODULE
k32.LoadLibraryExW.argtypes = [wintypes.LPCWSTR, wintypes.HANDLE, wintypes.DWORD]
k32.GetModuleHandleW.restype = wintypes.HMODULE
k32.GetModuleHandleW.argtypes = [wintypes.LPCWSTR]
k32.GetModuleFileNameW.argtypes = [wintypes.HMODULE, wintypes.LPWSTR, wintypes.DWORD]


def where(name):
    handle = k32.GetModuleHandleW(name)
    if not handle:
        return None
    buf = ctypes.create_unicode_buffer(1024)
    k32.GetModuleFileNameW(handle, buf, 1024)
    return buf.value


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    loads, names = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    errors = {}
    for name in loads:
        target = os.path.join(here, name) if "/" in name else name
        handle = k32.LoadLibraryExW(target.replace("/", "\\"), None, 8)
        errors[name] = 0 if handle else ctypes.get_last_error()
    print(json.dumps({"errors": errors, "modules": {n: where(n) for n in names}}))


main()
'''


def run_loader(win_python: WindowsPython, main: Path, loads: list[str], names: list[str],
               decoys: Path) -> dict:
    done = win_python.run([main, json.dumps(loads), json.dumps(names)], path_dirs=[decoys])
    return json.loads(done.stdout.strip().splitlines()[-1])


def decoy_dir(root: Path, exports: dict[str, tuple[str, ...]]) -> Path:
    """Stray copies on PATH, exporting what the framework asks of them."""
    folder = root / "decoys"
    for name, funcs in exports.items():
        build_shaped(Shape(name, ()), folder, funcs)
    return folder


def test_onnxruntime_gets_every_cuda_dll_from_the_bundle(
        tmp_path: Path, win_python: WindowsPython, capsys: pytest.CaptureFixture[str]) -> None:
    real = tmp_path / "real"
    provider = pe_tables(wheel_members(ort_wheel(), ORT_PROVIDER, real)[0])
    funcs = dict(provider.imports)
    assert set(funcs) == {"cublasLt64_12.dll", "cublas64_12.dll", "cufft64_11.dll",
                          "cudart64_12.dll", "onnxruntime_providers_shared.dll",
                          "cudnn64_9.dll"}
    capi = tmp_path / "app" / "onnxruntime" / "capi"
    build_shaped(provider, capi)
    build_shaped(Shape("onnxruntime_providers_shared.dll", ()), capi,
                 funcs["onnxruntime_providers_shared.dll"])
    dist_info(tmp_path / "app", "onnxruntime-gpu", "1.26.0")
    (tmp_path / "app" / "main.py").write_text(LOADER)
    ref, _ = standin_setup(tmp_path, CU12, ["cufft"])
    # the stand-in runtime exports exactly what the real provider imports from it
    wheels = _with_exports(tmp_path, funcs)
    decoys = decoy_dir(tmp_path, {n: funcs[n] for n in ("cudnn64_9.dll", "cufft64_11.dll")})
    spec = write_spec(tmp_path, ref, wheels, entry="main.py")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    assert "cufft: cufft64_11.dll: imported by " + ORT_PROVIDER in out
    names = [n for n in funcs if n != "onnxruntime_providers_shared.dll"]
    loads = ["onnxruntime/capi/onnxruntime_providers_cuda.dll"]
    alone = run_loader(win_python, tmp_path / "app" / "main.py", loads, names, decoys)
    error = alone["errors"][loads[0]]
    assert error == 126 or "decoys" in str(alone["modules"]), alone
    bundled = run_loader(win_python, tmp_path / "dist" / "app" / "main.py", loads, names,
                         decoys)
    assert bundled["errors"][loads[0]] == 0, bundled
    for name in names:
        assert "\\dist\\app\\cudnn\\" in bundled["modules"][name], (name, bundled)


def _with_exports(root: Path, funcs: dict[str, tuple[str, ...]]) -> dict[str, Path]:
    from bundler.recipe.load import find_recipe
    from tests.harness.winenv.shaped import standin_wheels

    return standin_wheels(find_recipe(CU12, Path.cwd()), root / "standins-exports",
                          ["cufft"], funcs)


TF_LOADS = ["cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll",
            "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll", "cudnn64_8.dll"]


def test_tensorflow_2_10_gets_all_eight_dlls_from_the_bundle(
        tmp_path: Path, win_python: WindowsPython, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "app"
    dist_info(app / "Lib" / "site-packages", "tensorflow", "2.10.1")
    (app / "main.py").write_text(LOADER)
    ref, wheels = standin_setup(tmp_path, CU11, ["core", "cufft", "curand", "cusolver",
                                                 "cusparse"])
    decoys = decoy_dir(tmp_path, {n: (marker(n),) for n in TF_LOADS})
    spec = write_spec(tmp_path, ref, wheels, entry="main.py")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    for component in ("cufft", "curand", "cusolver", "cusparse"):
        assert f"{component}: " in out and "loaded by tensorflow 2.10.1" in out
    alone = run_loader(win_python, app / "main.py", TF_LOADS, TF_LOADS, decoys)
    assert all("decoys" in alone["modules"][n] for n in TF_LOADS), alone
    bundled = run_loader(win_python, tmp_path / "dist" / "app" / "main.py", TF_LOADS,
                         TF_LOADS, decoys)
    assert set(bundled["errors"].values()) == {0}, bundled
    for name in TF_LOADS:
        assert "\\dist\\app\\cudnn\\" in bundled["modules"][name], (name, bundled)
