"""Opt-in (BUNDLER_REAL_CUDNN=1): the real NVIDIA wheels for real framework apps.

Fetches about 4 GB of wheels once into the test cache (pinned by the recipes' sha256).

- onnxruntime-gpu 1.26.0: an app holding the REAL onnxruntime_providers_cuda.dll packs
  with the CUDA 12 recipe from the real cuDNN 9.28, cuBLAS 12.9, cudart 12.9 and cuFFT
  11.4 wheels; the scan selects cuFFT by itself. Under Wine the real cuDNN 9, cudart 12
  and cuBLAS/cuBLASLt 12 load from the bundle for a provider stand-in generated from the
  real provider's import table; cuFFT is a stand-in generated from the real cufft64_11's
  export table and version (the real one fails in DllMain under Wine 8), and so is the
  provider (the same).
- TensorFlow 2.10.1: its dist-info and the CUDA 11 recipe, from the real cu11 wheels.
- onnxruntime-gpu 1.28 (loads cuDNN and cuFFT by name): the CUDA 13.5 recipe, real wheels.

Each prints its figures (pack time, bundle size): run with -s to see them.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from bundler.formats.manifest import read_manifest
from bundler.recipe.load import find_recipe
from tests.harness.packing import run_cli
from tests.harness.wheelkit import make_wheel
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.shaped import (
    build_shaped,
    dist_info,
    pe_tables,
    unpinned_recipe,
    wheel_members,
)
from tests.harness.winenv.wheels import ORT_PROVIDER, nvidia_wheel, ort_wheel
from tests.integration.test_app_scan import CU11, CU12, write_spec
from tests.wine.test_frameworks_wine import LOADER, decoy_dir, run_loader

pytestmark = pytest.mark.skipif(os.environ.get("BUNDLER_REAL_CUDNN") != "1",
                                reason="opt-in: set BUNDLER_REAL_CUDNN=1 (about 4 GB of "
                                       "wheels fetched once)")


def pack_timed(capsys: pytest.CaptureFixture[str], spec: Path) -> tuple[float, dict]:
    start = time.monotonic()
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    elapsed = time.monotonic() - start
    assert code == 0, err
    return elapsed, json.loads(out)


def figure(label: str, seconds: float, summary: dict) -> None:
    with capsys_disabled():
        size = summary["total_size"] / 2**20
        print(f"\n[figure] {label}: pack {seconds:.1f} s, bundle {size:.0f} MiB in "
              f"{len(summary['files'])} files; components {summary['components']}; "
              f"scan: {summary['selected_because']}")


_capsys = None


def capsys_disabled():  # figures go to the terminal even though run_cli captures
    assert _capsys is not None
    return _capsys.disabled()


@pytest.fixture(autouse=True)
def _keep_capsys(capsys: pytest.CaptureFixture[str]) -> None:
    global _capsys
    _capsys = capsys


def test_real_ort_app_with_the_real_cuda_12_runtime(
        tmp_path: Path, win_python: WindowsPython, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = {sid: nvidia_wheel(CU12, sid) for sid in ("cudnn", "cublas", "cudart", "cufft")}
    app = tmp_path / "all-real" / "app"
    provider_path = wheel_members(ort_wheel(), ORT_PROVIDER, app)[0]
    wheel_members(ort_wheel(), "onnxruntime/capi/onnxruntime_providers_shared.dll", app)
    dist_info(app, "onnxruntime-gpu", "1.26.0")
    seconds, summary = pack_timed(capsys, write_spec(app.parent, CU12, wheels))
    assert "cufft" in summary["selected_because"]
    figure("onnxruntime-gpu 1.26 (real provider, real CUDA 12 wheels)", seconds, summary)

    # Under Wine: the provider and cuFFT as stand-ins from their own tables, the rest real.
    provider = pe_tables(provider_path)
    funcs = dict(provider.imports)
    real_cufft = wheel_members(wheels["cufft"], "nvidia/cufft/bin/cufft64_11.dll",
                               tmp_path / "cufft")[0]
    cufft = pe_tables(real_cufft)
    assert set(funcs["cufft64_11.dll"]) <= set(cufft.exports)
    recipe = find_recipe(CU12, Path.cwd())
    spec = recipe.sources["cufft"]
    members = {m: b"stand-in licence\n" for m in spec.contents}
    members["nvidia/cufft/bin/cufft64_11.dll"] = build_shaped(
        cufft, tmp_path / "shaped").read_bytes()
    name, version = spec.file_name.split("-")[:2]
    wheels["cufft"] = make_wheel(tmp_path / "wheels", members, name=name, version=version)
    root = tmp_path / "wine"
    capi = root / "app" / "onnxruntime" / "capi"
    build_shaped(provider, capi)
    build_shaped(pe_tables(provider_path.with_name("onnxruntime_providers_shared.dll")), capi)
    dist_info(root / "app", "onnxruntime-gpu", "1.26.0")
    (root / "app" / "main.py").write_text(LOADER)
    ref = str(unpinned_recipe(recipe, root, ["cufft"]))
    seconds, summary = pack_timed(capsys, write_spec(root, ref, wheels, entry="main.py"))
    decoys = decoy_dir(tmp_path, {n: funcs[n] for n in ("cudnn64_9.dll", "cufft64_11.dll")})
    names = [n for n in funcs if n != "onnxruntime_providers_shared.dll"]
    start = time.monotonic()
    bundled = run_loader(win_python, root / "dist" / "app" / "main.py",
                         ["onnxruntime/capi/onnxruntime_providers_cuda.dll"], names, decoys)
    load = time.monotonic() - start
    assert set(bundled["errors"].values()) == {0}, bundled
    for dll in names:
        assert "\\dist\\app\\cudnn\\" in bundled["modules"][dll], (dll, bundled)
    manifest = read_manifest(root / "dist" / "app" / "cudnn" / "manifest.json")
    assert {f.version for f in manifest.files if f.name == "cudnn64_9.dll"} == {"9.28.0.42"}
    with capsys_disabled():
        print(f"[figure] real cuDNN 9.28 / cuBLAS 12.9 / cudart 12.9 under Wine: app start + "
              f"provider load {load:.1f} s")


def test_real_tensorflow_2_10_app_with_the_real_cuda_11_runtime(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sids = ("cudnn", "cublas", "cudart", "cufft", "curand", "cusolver", "cusparse")
    wheels = {sid: nvidia_wheel(CU11, sid) for sid in sids}
    dist_info(tmp_path / "app" / "Lib" / "site-packages", "tensorflow", "2.10.1")
    seconds, summary = pack_timed(capsys, write_spec(tmp_path, CU11, wheels))
    shipped = {Path(f["path"]).name for f in summary["files"]}
    assert {"cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll",
            "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll",
            "cudnn64_8.dll"} <= shipped
    figure("TensorFlow 2.10.1 (real CUDA 11.8 wheels)", seconds, summary)


def test_real_cuda_13_runtime_for_an_ort_1_28_app(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.integration.test_app_scan import CU13

    wheels = {sid: nvidia_wheel(CU13, sid) for sid in ("cudnn", "cublas", "cudart", "cufft")}
    dist_info(tmp_path / "app", "onnxruntime-gpu", "1.28.0")
    seconds, summary = pack_timed(capsys, write_spec(tmp_path, CU13, wheels))
    assert summary["selected_because"] == {
        "cufft": ["cufft64_12.dll: loaded by onnxruntime-gpu 1.28.0"]}
    figure("onnxruntime-gpu 1.28 (real CUDA 13.5 wheels)", seconds, summary)
