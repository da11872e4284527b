"""Wheel-packed runtimes under Wine, with the Windows CPython.

- Two bundles with different cuDNN versions run at the same time, each loading its
  own: a stand-in cuDNN 8.0.3.33 / CUDA 10.1 (seed recipe, NVIDIA zip + toolkit) and
  a stand-in cuDNN 8.9.4.25 / CUDA 11 packed from wheels with the real 8.9 recipe's
  layout, `components = ["cnn_infer"]`, and the REAL cudart64_110.dll from the
  nvidia-cuda-runtime-cu11 wheel. A decoy cuDNN is on PATH for both.
- Opt-in (BUNDLER_REAL_CUDNN=1; 1.16 GB of wheels fetched once into the test cache):
  the real cuDNN 8.9.4.25 set packed by the shipped recipe; with the decoy on PATH
  the framework's bare-name load gets cudnnGetVersion() == 8904 from the bundle.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from bundler.cli import main
from bundler.recipe.load import find_recipe
from tests.harness.wheelkit import make_wheel
from tests.harness.winenv import WindowsPython, to_windows_path
from tests.harness.winenv.build import StandinRuntime, build_runtime
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.wheels import nvidia_wheel

CU11 = "cudnn-8.9.4.25-cuda11-win-x64"
SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"

# The app both bundles ship. Its copy in a bundle gets the bootstrap lines first, so
# every runtime DLL is loaded before main() runs. It then says it is ready, waits
# until the other app is too (both runtimes loaded at once), and reports what a
# framework loading cudnn64_8.dll by bare name gets.
APP = r'''
import ctypes, json, os, sys, time

import _cudnn_bootstrap


def main():
    framework, ready, other = sys.argv[1:4]
    open(ready, "w").close()
    deadline = time.monotonic() + 90
    while not os.path.exists(other) and time.monotonic() < deadline:
        time.sleep(0.05)
    fw = ctypes.CDLL(framework)
    path = ctypes.create_string_buffer(1024)
    fw.framework_cudnn_path(path, len(path))
    report = _cudnn_bootstrap.report()
    runtime = ctypes.c_int(0)
    cudart = next(d["file"] for d in report["libraries"] if "/cudart64_" in d["file"])
    status = ctypes.WinDLL(cudart.rsplit("/", 1)[1]).cudaRuntimeGetVersion(
        ctypes.byref(runtime))
    print(json.dumps({"overlapped": os.path.exists(other),
                      "cudnn_version": fw.framework_cudnn_version(),
                      "cudnn_path": path.value.decode(),
                      "cudnn_create": fw.framework_cudnn_create(),
                      "cudart": [status, runtime.value], "report": report}))


main()
'''

STANDIN_LICENCE = b"STAND-IN licence text for bundler's tests; not NVIDIA's.\n"


def write_app(folder: Path, name: str, recipe: str, components: str, sources: str) -> Path:
    (folder / "app").mkdir(parents=True)
    (folder / "app" / "main.py").write_text(APP)
    spec = folder / "app.spec"
    spec.write_text(f'[app]\nname = "{name}"\npath = "app"\nentry = "main.py"\n'
                    f'[runtime]\nrecipe = "{recipe}"\n{components}\n'
                    # The stand-ins are not NVIDIA-signed; real wheels are still checked.
                    f'allow_unsigned = ["cudnn*.dll"]\n[sources]\n{sources}')
    return spec


def pack(spec: Path) -> Path:
    assert main(["pack", str(spec)]) == 0
    return spec.parent / "dist" / spec.parent.name


def standin_wheels(runtime: StandinRuntime, folder: Path) -> dict[str, Path]:
    """nvidia-cudnn-cu11 and nvidia-cublas-cu11 laid out as NVIDIA's wheels, holding
    stand-in DLLs; only their pins differ from the real ones (the recipe drops them)."""
    cudnn = {f"nvidia/cudnn/bin/{p.name}": p.read_bytes() for p in runtime.cudnn_files}
    cudnn["nvidia_cudnn_cu11-8.9.4.25.dist-info/License.txt"] = STANDIN_LICENCE
    cublas = {f"nvidia/cublas/bin/{n}": runtime[n].read_bytes()
              for n in ("cublas64_11.dll", "cublasLt64_11.dll")}
    cublas["nvidia_cublas_cu11-11.11.3.6.dist-info/License.txt"] = STANDIN_LICENCE
    return {"cudnn": make_wheel(folder, cudnn, name="nvidia_cudnn_cu11", version="8.9.4.25"),
            "cublas": make_wheel(folder, cublas, name="nvidia_cublas_cu11",
                                 version="11.11.3.6")}


def standin_recipe(folder: Path) -> Path:
    """The shipped cuDNN 8.9 recipe, unpinned for the stand-in cudnn and cublas wheels
    (cudart keeps its real pin) and with the stand-in cuBLAS's version resource."""
    recipe = find_recipe(CU11, PROJECT_ROOT)
    text = recipe.path.read_text()
    for sid in ("cudnn", "cublas"):
        text = text.replace(f'sha256 = "{recipe.sources[sid].sha256}"\n', "")
    text = text.replace('version = "6.14.11.11113"', 'version = "6.14.11.11080"')
    path = folder / f"{CU11}.toml"
    path.write_text(text)
    return path


def run_apps(win_python: WindowsPython, bundles: list[Path], framework: Path,
             decoy: Path, sync: Path) -> list[dict]:
    """Start every bundle's app at once, each waiting for the next one to be ready."""
    win_python.start_server()
    results: list[dict] = [{} for _ in bundles]
    ready = [sync / f"{i}.ready" for i in range(len(bundles))]

    def run(i: int) -> None:
        done = win_python.run([bundles[i] / "main.py", to_windows_path(framework),
                               to_windows_path(ready[i]),
                               to_windows_path(ready[(i + 1) % len(bundles)])],
                              path_dirs=[decoy], timeout=300)
        assert done.returncode == 0, done.stderr
        results[i] = json.loads(done.stdout.strip().splitlines()[-1])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bundles))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(results), "an app failed; see the assertion above"
    return results


def windows_path_in(bundle: Path, relpath: str) -> str:
    return to_windows_path(bundle / relpath).lower()


def test_two_cudnn_versions_run_side_by_side_each_loading_its_own(
        tmp_path: Path, win_python: WindowsPython, standin_zip: Path, standin_toolkit: Path,
        standin_framework: Path, decoy_cudnn_dir: Path, cudart_wheel: Path) -> None:
    seed = pack(write_app(tmp_path / "seed-app", "seed-app", SEED, "",
                          f'cudnn = "{standin_zip}"\ncuda = "{standin_toolkit}"\n'))
    runtime = build_runtime(tmp_path / "standin-8.9", cudnn_version=(8, 9, 4, 25), cuda="11.8")
    wheels = standin_wheels(runtime, tmp_path / "wheels")
    cu11 = pack(write_app(
        tmp_path / "cu11-app", "cu11-app", str(standin_recipe(tmp_path)),
        'components = ["cnn_infer"]',
        f'cudnn = "{wheels["cudnn"]}"\ncublas = "{wheels["cublas"]}"\n'
        f'cudart = "{cudart_wheel}"\n'))
    manifest = json.loads((cu11 / "cudnn" / "manifest.json").read_text())
    assert {f["path"].split("/")[1] for f in manifest["files"]} == {
        "cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_cnn_infer64_8.dll",
        "cublas64_11.dll", "cublasLt64_11.dll", "cudart64_110.dll",
        "NVIDIA_cuDNN_LICENSE.txt", "NVIDIA_cuBLAS_LICENSE.txt",
        "NVIDIA_CUDA_runtime_LICENSE.txt"}
    sync = tmp_path / "sync"
    sync.mkdir()

    old, new = run_apps(win_python, [seed, cu11], standin_framework, decoy_cudnn_dir, sync)

    assert old["overlapped"] and new["overlapped"]  # both runtimes were loaded at once
    assert (old["cudnn_version"], old["cudnn_create"], old["cudart"]) == (8003, 0, [0, 10010])
    assert new["cudnn_version"] == 8904
    # The real cudart64_110.dll runs: with no NVIDIA driver here it answers
    # cudaErrorInsufficientDriver (35), so the stand-in sub-library that asks it for
    # the runtime version makes cudnnCreate fail with INTERNAL_ERROR (4).
    assert (new["cudart"], new["cudnn_create"]) == ([35, 0], 4)
    assert old["cudnn_path"].lower() == windows_path_in(seed, "cudnn/cudnn64_8.dll")
    assert new["cudnn_path"].lower() == windows_path_in(cu11, "cudnn/cudnn64_8.dll")
    for bundle, result in ((seed, old), (cu11, new)):
        for dll in result["report"]["libraries"]:  # every runtime DLL from its own bundle
            assert dll["loaded_from"].lower() == windows_path_in(bundle, dll["file"])
    real_cudart = next(d for d in new["report"]["libraries"]
                       if d["file"].endswith("cudart64_110.dll"))
    assert real_cudart["version"] == "6.14.11.11080"  # the real DLL from the wheel


@pytest.fixture(scope="session")
def real_cudnn_wheels() -> dict[str, Path]:
    """The real cuDNN 8.9.4.25 wheel set (1.16 GB), fetched once into the test cache."""
    if os.environ.get("BUNDLER_REAL_CUDNN") != "1":
        pytest.skip("opt-in: set BUNDLER_REAL_CUDNN=1 (fetches 1.16 GB of NVIDIA wheels once)")
    return {sid: nvidia_wheel(CU11, sid) for sid in ("cudnn", "cublas", "cudart")}


# Without the bootstrap: the framework's bare-name load takes whatever PATH offers.
PLAIN_PROBE = r'''
import ctypes, sys
fw = ctypes.CDLL(sys.argv[1])
print(fw.framework_cudnn_version())
'''


def test_real_cudnn_8_9_is_loaded_from_the_bundle_despite_a_decoy_on_path(
        tmp_path: Path, win_python: WindowsPython, real_cudnn_wheels: dict[str, Path],
        standin_framework: Path, decoy_cudnn_dir: Path) -> None:
    sources = "".join(f'{sid} = "{path}"\n' for sid, path in real_cudnn_wheels.items())
    bundle = pack(write_app(tmp_path / "real-app", "real-app", CU11, "", sources))
    manifest = json.loads((bundle / "cudnn" / "manifest.json").read_text())
    assert len([f for f in manifest["files"] if f["path"].endswith(".dll")]) == 10
    # The real cuDNN DLLs are NVIDIA-signed (leaf expired 2025, valid 2023 timestamps);
    # cuBLAS and cudart of the -cu11 wheels are not, and the recipe asks no signature.
    signed = {f["name"]: (f.get("signature"), f.get("signer")) for f in manifest["files"]}
    assert {n for n, s in signed.items() if s == ("verified", "NVIDIA Corporation")} == {
        n for n in signed if n.startswith("cudnn") and n.endswith(".dll")}
    sync = tmp_path / "sync"
    sync.mkdir()
    (sync / "go").touch()  # a single app: nothing to wait for

    win_python.start_server()
    plain = win_python.run_code(PLAIN_PROBE, [standin_framework],
                                path_dirs=[decoy_cudnn_dir])
    assert plain.stdout.split() == ["7605"], plain.stderr  # the decoy wins without bundler
    done = win_python.run([bundle / "main.py", to_windows_path(standin_framework),
                           to_windows_path(sync / "app.ready"), to_windows_path(sync / "go")],
                          path_dirs=[decoy_cudnn_dir], timeout=600)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["cudnn_version"] == 8904
    assert result["cudnn_path"].lower() == windows_path_in(bundle, "cudnn/cudnn64_8.dll")
    assert result["cudart"] == [35, 0]  # cudaErrorInsufficientDriver: no GPU driver here
    loaded = {d["file"]: d["loaded_from"].lower() for d in result["report"]["libraries"]}
    assert all(path == windows_path_in(bundle, rel) for rel, path in loaded.items())
    # cudnnCreate was found and called (-1: cuDNN or cudnnCreate missing), and with no GPU
    # and no driver here it cannot succeed (0): it returned an error status.
    assert result["cudnn_create"] not in (-1, 0), result
