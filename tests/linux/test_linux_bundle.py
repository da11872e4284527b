"""A Linux bundle, natively: packed for linux-x86_64 from a folder of ELF libraries and
run with a decoy cuDNN first on LD_LIBRARY_PATH. The bootstrap preloads the bundle by
absolute path with RTLD_GLOBAL, so cuDNN's own dlopen of a sub-library by SONAME — the
load glibc would otherwise resolve through LD_LIBRARY_PATH before the library's RUNPATH
— gets the bundled copy; without the bootstrap the same app gets the decoy.

The libraries are stand-ins built here with the system's gcc, shaped like NVIDIA's
(libcudnn.so.9 dlopens libcudnn_graph.so.9 by SONAME; RUNPATH $ORIGIN). The real ones
run on a GPU in bench/gpu_proof.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bundler.recipe.load import SourceSpec, find_recipe
from bundler.targets.registry import platform_for
from tests.harness.packing import run_cli
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.pins import linux_pins
from tests.harness.winenv.wheels import fetched_once, wheel_cache

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("gcc"),
                                reason="Linux with gcc")

SHIM = r'''
#include <dlfcn.h>
#include <stddef.h>
size_t cudnnGetVersion(void) { return 91900; }
/* Which libcudnn_graph.so.9 cuDNN's own dlopen by SONAME gets (1: the bundle's). */
int cudnnGraphMarker(void) {
    void *graph = dlopen("libcudnn_graph.so.9", RTLD_NOW);
    if (!graph) return -1;
    int (*marker)(void) = (int (*)(void))dlsym(graph, "graphMarker");
    return marker ? marker() : -2;
}
'''
GRAPH = "int graphMarker(void) { return MARKER; }\n"

APP = r'''
import ctypes, json, os
cudnn = ctypes.CDLL("libcudnn.so.9")
cudnn.cudnnGetVersion.restype = ctypes.c_size_t
with open("/proc/self/maps") as maps:
    mapped = sorted({l.split(None, 5)[5].strip() for l in maps
                     if len(l.split(None, 5)) == 6 and "libcudnn" in l})
print(json.dumps({"version": cudnn.cudnnGetVersion(), "graph": cudnn.cudnnGraphMarker(),
                  "mapped": mapped}))
'''

RECIPE = '''name = "standin-cudnn-linux-x64"
platform = "linux-x86_64"
[versions]
cudnn = "9.19.0.56"
cuda = "13.0"
[sources.nvidia]
kind = "folder"
contents = ["cudnn/lib/libcudnn.so.9", "cudnn/lib/libcudnn_graph.so.9"]
[components.graph]
files = ["nvidia:cudnn/lib/libcudnn_graph.so.9"]
[components.core]
files = ["nvidia:cudnn/lib/libcudnn.so.9"]
requires = ["graph"]
[files."libcudnn.so.9"]
loads = ["libcudnn_graph.so.9"]
'''


def _library(folder: Path, name: str, source: str, *flags: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.c").write_text(source)
    out = folder / name
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", f"-Wl,-soname,{name}",
                    "-Wl,-rpath,$ORIGIN", "-o", str(out), str(folder / f"{name}.c"), *flags],
                   check=True)
    (folder / f"{name}.c").unlink()
    return out


def _cudnn_pair(site: Path, decoys: Path) -> Path:
    """The stand-in cuDNN (its graph says 1) in `site`, another (its graph says 2) in
    `decoys`, which the tests put first on LD_LIBRARY_PATH. Returns `decoys`."""
    for folder, marker in ((site, "1"), (decoys, "2")):
        _library(folder, "libcudnn_graph.so.9", GRAPH.replace("MARKER", marker))
        _library(folder, "libcudnn.so.9", SHIM, "-ldl")
    return decoys


def _run(script: Path, decoys: Path) -> dict:
    env = {**os.environ, "LD_LIBRARY_PATH": str(decoys)}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_linux_bundle_wins_against_ld_library_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site-packages" / "nvidia" / "cudnn" / "lib"
    decoys = _cudnn_pair(site, tmp_path / "decoys")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(APP)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    'recipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "site-packages" / "nvidia").as_posix()}"\n')
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["load_order"] == ["cudnn/libcudnn_graph.so.9", "cudnn/libcudnn.so.9"]
    assert {f["machine"] for f in summary["files"] if f["name"].endswith(".so.9")} == {"X86_64"}
    bundle = tmp_path / "dist" / "app"

    packed = _run(bundle / "main.py", decoys)
    assert packed["version"] == 91900 and packed["graph"] == 1, packed
    assert packed["mapped"] and all(p.startswith(str(bundle)) for p in packed["mapped"])
    # The same app without the bootstrap lines: LD_LIBRARY_PATH wins (the control).
    (tmp_path / "control").mkdir()
    shutil.copy(tmp_path / "app" / "main.py", tmp_path / "control" / "main.py")
    control = _run(tmp_path / "control" / "main.py", decoys)
    assert control["graph"] == 2 and all(str(decoys) in p for p in control["mapped"])


def test_a_linux_library_the_bundle_lacks_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A NEEDED library that is neither bundled nor a glibc/driver library is refused."""
    site = tmp_path / "nvidia" / "cudnn" / "lib"
    _library(tmp_path / "other", "libstray.so.1", "int stray(void) { return 0; }\n")
    _library(site, "libcudnn_graph.so.9", GRAPH.replace("MARKER", "1"),
             f"-L{tmp_path / 'other'}", "-Wl,--no-as-needed", "-l:libstray.so.1")
    _library(site, "libcudnn.so.9", SHIM, "-ldl")
    (tmp_path / "app").mkdir()
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\n[runtime]\nrecipe = "standin.toml"\n'
                    f'[sources]\nnvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2
    assert ("libcudnn_graph.so.9 imports libstray.so.1, which is neither bundled nor a "
            "Linux/driver library") in err


def test_linux_names_are_compared_exactly_and_glibc_is_the_system() -> None:
    linux = platform_for("linux-x86_64")
    assert not linux.same_name("libcudnn.so.9", "LIBCUDNN.SO.9")
    assert linux.is_library("libcudnn_graph.so.9") and linux.is_library("libz.so.1.2.13")
    facts = linux.facts()
    assert facts.is_system("libc.so.6") and facts.is_driver("libcuda.so.1")
    assert facts.cuda_release_of("libcudart.so.13") == (13, 0)
    assert linux.driver_table().min_driver_for("13.0") == "580.65.06"


def test_nvidias_real_cudnn_9_manylinux_libraries_load_from_the_bundle(tmp_path: Path) -> None:
    """The GPU proof's CPU half (bench/gpu_proof.py) on this machine's glibc: NVIDIA's
    real libcudnn*.so.9 and libcudart.so.13 (pinned wheels) packed from an installed
    site-packages, run with that site-packages' folders first on LD_LIBRARY_PATH:
    cudnnGetVersion and every cuDNN/CUDA file mapped come from the bundle; the same app
    without the bootstrap maps the site-packages copies. (No GPU: the convolution
    itself runs on the GPU machine.)"""
    site = tmp_path / "site-packages"
    for package, (pin, platform) in linux_pins().items():
        spec = SourceSpec(id=package, kind="wheel", contents=(), package=package,
                          version=pin.version, platform_tag=platform, sha256=pin.sha256)
        with zipfile.ZipFile(fetched_once(spec)) as wheel:
            wheel.extractall(site)
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "bench" / "gpu_proof.py"),
                           "--site-packages", str(site), "--work", str(tmp_path / "work")],
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    evidence = json.loads(done.stdout)
    app = evidence["packed_app"]
    assert app["cudnn_version"] == 91900
    assert evidence["mapped_from_elsewhere"] == [] and evidence["mapped_from_the_bundle"] >= 9
    assert {Path(p).name for p in app["mapped"]} >= {"libcudnn.so.9", "libcudnn_graph.so.9",
                                                      "libcudart.so.13"}
    assert evidence["control_without_bootstrap_maps"]
    assert all(p.startswith(str(site)) for p in evidence["control_without_bootstrap_maps"])


def test_a_pyinstaller_one_folder_build_on_linux_loads_the_bundle(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PyInstaller natively on Linux: bundler's runtime hook runs first in the frozen app
    and preloads the bundle from sys._MEIPASS; verify checks it."""
    pytest.importorskip("PyInstaller")
    site = tmp_path / "nvidia" / "cudnn" / "lib"
    decoys = _cudnn_pair(site, tmp_path / "decoys")
    (tmp_path / "main.py").write_text(APP)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\nbuilder = "pyinstaller"\nscript = "main.py"\n'
                    '[runtime]\nrecipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    app = tmp_path / "dist" / "app"
    done = subprocess.run([str(app / "app")], env={**os.environ, "LD_LIBRARY_PATH": str(decoys)},
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    frozen = json.loads(done.stdout.strip().splitlines()[-1])
    assert frozen["graph"] == 1 and all(p.startswith(str(app)) for p in frozen["mapped"])
    code, out, _ = run_cli(capsys, "verify", app)
    assert code == 0 and "2 files match" in out


def test_inspect_reads_a_linux_library(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """inspect tells a .so by its ELF header: machine, NEEDED entries classified as the
    Linux platform does (bundled beside it, glibc, missing), no signature on Linux."""
    site = tmp_path / "lib"
    _library(site, "libcudnn_graph.so.9", GRAPH.replace("MARKER", "1"))
    shim = _library(site, "libcudnn.so.9", SHIM, "-ldl", "-Wl,--no-as-needed",
                    f"-L{site}", "-l:libcudnn_graph.so.9")
    code, out, err = run_cli(capsys, "inspect", shim, "--json")
    assert code == 0, err
    assert json.loads(out)["kind"] == "library"   # "dll" is a PE file's
    [facts] = json.loads(out)["dlls"]
    assert facts["machine"] == "X86_64" and facts["signature"] is None
    statuses = {d["name"]: d["status"] for d in facts["dependencies"]}
    assert statuses["libcudnn_graph.so.9"] == "bundled" and statuses["libc.so.6"] == "system"
    code, out, _ = run_cli(capsys, "inspect", shim)
    assert code == 0 and out.startswith(f"{shim}: shared library")


def test_the_shipped_linux_recipe_packs_nvidias_wheels_by_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """recipe = "cudnn-9.19.0.56-cuda13-linux-x64": the wheel is the pinned one (the
    recipe's pins are pins.toml's), read through RECORD; the bundled libcudnn.so.9
    answers a bare-name load with the installed cuDNN's folder first on LD_LIBRARY_PATH."""
    recipe = find_recipe("cudnn-9.19.0.56-cuda13-linux-x64", PROJECT_ROOT)
    for package, (pin, platform) in linux_pins().items():
        source = next(s for s in recipe.sources.values() if s.package == package)
        assert (source.version, source.sha256, source.platform_tag) == (
            pin.version, pin.sha256, platform)
    wheel = fetched_once(recipe.sources["cudnn"])
    installed = tmp_path / "site-packages"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(installed)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(APP.replace('print(json.dumps({"version": '
                                                          'cudnn.cudnnGetVersion(), "graph": '
                                                          'cudnn.cudnnGraphMarker(),',
                                                          'print(json.dumps({"version": '
                                                          'cudnn.cudnnGetVersion(),'))
    spec = tmp_path / "app.spec"
    # core brings graph (libcudnn.so.9 opens it at cudnnCreate) and graph's cuBLAS and
    # CUDA runtime: the pack takes their pinned wheels from the wheel cache (the
    # harness's, where they were fetched once), as a user's second pack would.
    for sid in ("cudart", "cublas"):
        fetched_once(recipe.sources[sid])
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    'recipe = "cudnn-9.19.0.56-cuda13-linux-x64"\ncomponents = ["core"]\n'
                    f'[sources]\ncudnn = "{wheel.as_posix()}"\n')
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    trusted = json.loads(out)["inputs_trusted"]   # each by its pin, none on first pack
    assert set(trusted) == {"cublas", "cudart", "cudnn"} and all(
        "sha256" in how and "first pack" not in how for how in trusted.values()), trusted
    ran = _run(tmp_path / "dist" / "app" / "main.py", installed / "nvidia" / "cudnn" / "lib")
    assert ran["version"] == 91900
    bundle = tmp_path / "dist" / "app" / "cudnn"
    assert {str(bundle / "libcudnn.so.9"), str(bundle / "libcudnn_graph.so.9")} <= set(
        ran["mapped"]) and all(p.startswith(str(bundle)) for p in ran["mapped"])
