"""Opt-in (BUNDLER_REAL_CUDNN=1): catalogue releases packed from NVIDIA's real files and
loaded under Wine, one per family x CUDA major and channel:

- cuDNN 9.0.0.312 for CUDA 12 (the first 9.x) and 8.9.7.29 for CUDA 12, from their PyPI
  wheels (pinned by the catalogue's sha256), with the CUDA 12.9 runtime set;
- cuDNN 9.28.0.42 for CUDA 12 from a redist archive laid out as NVIDIA's
  (cudnn-windows-x86_64-9.28.0.42_cuda12-archive/bin/), assembled from the real wheel's
  signed DLLs: the shipped recipe's release, rendered for another channel;
- cuDNN 7.5.0 for CUDA 10.1: the real, unsigned cudnn64_7.dll of MXNet's Windows wheel
  (mxnet_cu101-1.5.0, pinned below), in NVIDIA's legacy zip layout (cuda/bin/), with a
  stand-in CUDA 10.1 toolkit (no wheel carries CUDA 10.1's own DLLs).

Signatures are checked for real (no allow_unsigned). Run with -s for the figures.
"""

from __future__ import annotations

import json
import os
import time
import zipfile
from pathlib import Path

import pytest

from bundler.recipe.load import SourceSpec, find_recipe
from tests.harness.packing import PROJECT_ROOT, run_cli
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.wheels import fetched_once
from tests.wine.test_frameworks_wine import LOADER, decoy_dir, run_loader

pytestmark = pytest.mark.skipif(os.environ.get("BUNDLER_REAL_CUDNN") != "1",
                                reason="opt-in: set BUNDLER_REAL_CUDNN=1 (about 3 GB of "
                                       "wheels fetched once)")

MXNET = SourceSpec(id="mxnet", kind="wheel", contents=(), package="mxnet-cu101",
                   version="1.5.0", platform_tag="win_amd64",
                   file_name="mxnet_cu101-1.5.0-py2.py3-none-win_amd64.whl",
                   sha256="e62560654e61538a4a561003b046a79e789c1baff2c08e621c2af4da71869208")
CUDNN7_SHA256 = "89af94bdec6c64f08530b8529cc8cc196a874fc0927924673bbfe8a2eba572af"


def wheels_for(name: str, sids: tuple[str, ...]) -> dict[str, Path]:
    recipe = find_recipe(name, PROJECT_ROOT)
    return {sid: fetched_once(recipe.sources[sid]) for sid in sids}


def write_spec(root: Path, recipe: str, sources: dict[str, Path]) -> Path:
    (root / "app").mkdir(parents=True, exist_ok=True)
    (root / "app" / "main.py").write_text(LOADER)
    lines = "\n".join(f'{sid} = "{p.as_posix()}"' for sid, p in sources.items())
    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    f'recipe = "{recipe}"\n[sources]\n{lines}\n')
    return spec


def pack_and_load(root: Path, recipe: str, sources: dict[str, Path], names: list[str],
                  capsys: pytest.CaptureFixture[str], win_python: WindowsPython) -> dict:
    start = time.monotonic()
    code, out, err = run_cli(capsys, "pack", write_spec(root, recipe, sources), "--json")
    packed = time.monotonic() - start
    assert code == 0, err
    summary = json.loads(out)
    decoys = decoy_dir(root, {names[0]: ("cudnnGetVersion",)})
    start = time.monotonic()
    loaded = run_loader(win_python, root / "dist" / "app" / "main.py", names, names, decoys)
    seconds = time.monotonic() - start
    assert set(loaded["errors"].values()) == {0}, loaded
    for name in names:
        assert "\\dist\\app\\cudnn\\" in loaded["modules"][name], (name, loaded)
    with capsys.disabled():
        print(f"\n[figure] {recipe}: pack {packed:.1f} s, "
              f"{summary['total_size'] / 2**20:.0f} MiB in {len(summary['files'])} files; "
              f"inputs {summary['inputs_trusted']}; Wine load of {len(names)} DLLs "
              f"{seconds:.1f} s")
    return summary


CU12_LOADS = ["cudnn64_9.dll", "cudnn_graph64_9.dll", "cudnn_ops64_9.dll", "cudnn_cnn64_9.dll",
              "cublasLt64_12.dll", "cublas64_12.dll", "cudart64_12.dll"]


def test_the_first_cudnn_9_release_from_its_wheel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], win_python: WindowsPython) -> None:
    name = "cudnn-9.0.0.312-cuda12-win-x64"
    summary = pack_and_load(tmp_path, name, wheels_for(name, ("cudnn", "cublas", "cudart")),
                            CU12_LOADS, capsys, win_python)
    signed = {f["name"] for f in summary["files"] if f["signature"] == "verified"}
    assert "cudnn64_9.dll" in signed and "cudnn_ext64_9.dll" not in {
        f["name"] for f in summary["files"]}


def test_cudnn_8_9_for_cuda_12_from_its_wheel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], win_python: WindowsPython) -> None:
    name = "cudnn-8.9.7.29-cuda12-win-x64"
    pack_and_load(tmp_path, name, wheels_for(name, ("cudnn", "cublas", "cudart")),
                  ["cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_cnn_infer64_8.dll",
                   "cublas64_12.dll", "cudart64_12.dll"], capsys, win_python)


def test_a_redist_archive_of_the_real_signed_dlls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], win_python: WindowsPython) -> None:
    name = "cudnn-9.28.0.42-cuda12-win-x64"
    wheels = wheels_for(name, ("cudnn", "cublas", "cudart"))
    top = "cudnn-windows-x86_64-9.28.0.42_cuda12-archive"
    archive = tmp_path / f"{top}.zip"
    with zipfile.ZipFile(wheels["cudnn"]) as wheel, \
            zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        for member in wheel.namelist():
            if member.startswith("nvidia/cudnn/bin/") and member.endswith(".dll"):
                with wheel.open(member) as src, out.open(
                        f"{top}/bin/{member.rsplit('/', 1)[1]}", "w") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
        out.writestr(f"{top}/LICENSE", "NVIDIA cuDNN licence (from the wheel)\n")
    summary = pack_and_load(tmp_path, name, {**wheels, "cudnn": archive}, CU12_LOADS,
                            capsys, win_python)
    assert "signature" in summary["inputs_trusted"]["cudnn"]


def test_the_real_cudnn_7_from_mxnet_in_nvidias_legacy_layout(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], win_python: WindowsPython,
        standin_toolkit: Path) -> None:
    archive = tmp_path / "cudnn-10.1-windows10-x64-v7.5.0.56.zip"
    with zipfile.ZipFile(fetched_once(MXNET)) as wheel, \
            zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:
        with wheel.open("mxnet/cudnn64_7.dll") as src, out.open("cuda/bin/cudnn64_7.dll",
                                                                "w") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
        out.writestr("cuda/NVIDIA_SLA_cuDNN_Support.txt", "NVIDIA cuDNN licence\n")
    summary = pack_and_load(tmp_path, "cudnn-7.5.0.56-cuda10.1-win-x64",
                            {"cudnn": archive, "cuda": standin_toolkit},
                            ["cudnn64_7.dll", "cudart64_101.dll"], capsys, win_python)
    shim = next(f for f in summary["files"] if f["name"] == "cudnn64_7.dll")
    assert shim["sha256"] == CUDNN7_SHA256 and shim["signature"] == ""
    assert "first pack" in summary["inputs_trusted"]["cudnn"]
