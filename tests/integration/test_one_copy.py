"""Issue 27 item 4 (pack side), natively on Linux: one copy of each NVIDIA library in the
packed app's process.

JAX's CUDA plugin (`jax_plugins/xla_cuda13/__init__.py` in the jax-cuda13-pjrt wheel:
`_load_nvidia_libraries()`), onnxruntime's `preload_dlls()`, torch and Paddle load
NVIDIA's libraries by path from the nvidia-* wheels of their environment after the
bootstrap ran, so the process maps both those and the bundle's. The environments here
are real site-packages folders pip installs wheels into: NVIDIA's layout
(nvidia/cudnn/lib/libcudnn.so.9, gcc-built stand-ins, and its dist-info named as
NVIDIA's wheels are) and a jax_plugins/xla_cuda13 package with jax-cuda13-pjrt's
dist-info. pack refuses a folder app run with such an environment (the spec's
[scan] environment, the app's own site-packages, or the Python bundler runs under for an
app that imports jax), naming the wheels, the framework and the fix; doctor of a bundle
beside such wheels reports a problem.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.harness.wheelkit import make_wheel
from tests.linux.test_linux_bundle import GRAPH, RECIPE, SHIM, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

pytestmark = linux_with_gcc

LINUX_TAG = "manylinux_2_27_x86_64"
CUDNN_WHEEL = ("nvidia_cudnn_cu13", "9.19.0.56")
JAX_PLUGIN = ("jax_cuda13_pjrt", "0.12.1")
# The loader as JAX writes it (abridged): nvidia.<module>/lib/<SONAME> by absolute path.
XLA_CUDA13 = '''import ctypes, importlib, pathlib
def _load(module, libraries):
    try:
        m = importlib.import_module(f"nvidia.{module}")
    except ImportError:
        m = None
    for lib in libraries:
        if m is not None:
            ctypes.cdll.LoadLibrary(pathlib.Path(m.__path__[0]) / "lib" / lib)
def _load_nvidia_libraries():
    _load("cudnn", ["libcudnn.so.9"])
'''


def _metadata(name: str, version: str) -> bytes:
    return f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()


def _wheels(folder: Path, with_jax: bool) -> list[Path]:
    """NVIDIA's cuDNN wheel (stand-in libraries) and, if asked, JAX's CUDA plugin."""
    built = folder / "built" / "nvidia" / "cudnn" / "lib"
    _library(built, "libcudnn_graph.so.9", GRAPH.replace("MARKER", "3"))
    _library(built, "libcudnn.so.9", SHIM, "-ldl")
    name, version = CUDNN_WHEEL
    members = {f"nvidia/cudnn/lib/{lib}": (built / lib).read_bytes()
               for lib in ("libcudnn.so.9", "libcudnn_graph.so.9")}
    members |= {"nvidia/cudnn/__init__.py": b"",
                f"{name}-{version}.dist-info/METADATA": _metadata("nvidia-cudnn-cu13", version)}
    wheels = [make_wheel(folder / "wheels", members, name=name, version=version,
                         platform=LINUX_TAG)]
    if with_jax:
        name, version = JAX_PLUGIN
        wheels.append(make_wheel(folder / "wheels", {
            "jax_plugins/xla_cuda13/__init__.py": XLA_CUDA13.encode(),
            f"{name}-{version}.dist-info/METADATA": _metadata("jax-cuda13-pjrt", version)},
            name=name, version=version, platform="any"))
    return wheels


def _install(site: Path, wheels: list[Path]) -> Path:
    """pip installs the wheels into `site`, as into a venv's site-packages."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps",
                    "--no-compile", "--disable-pip-version-check", "--target", str(site),
                    *map(str, wheels)], check=True, capture_output=True)
    return site


def _workspace(tmp_path: Path, scan: str = "", app_imports: str = "import jax\n") -> Path:
    """An app folder (main.py), the bundle's stand-in cuDNN folder and its recipe."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text(f"{app_imports}print('hello')\n")
    for marker, folder in (("1", tmp_path / "nvidia" / "cudnn" / "lib"),):
        _library(folder, "libcudnn_graph.so.9", GRAPH.replace("MARKER", marker))
        _library(folder, "libcudnn.so.9", SHIM, "-ldl")
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n'
                    '[runtime]\nrecipe = "standin.toml"\n'
                    f'[sources]\nnvidia = "{(tmp_path / "nvidia").as_posix()}"\n'
                    f"[scan]\n{scan}")
    return spec


def test_a_folder_app_beside_jax_and_nvidias_cudnn_wheel_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _install(tmp_path / "venv" / "site-packages", _wheels(tmp_path, with_jax=True))
    spec = _workspace(tmp_path, 'environment = "venv/site-packages"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert (f"bundler: error: [scan] environment {site} holds nvidia-cudnn-cu13 9.19.0.56 "
            "(libcudnn.so.9, libcudnn_graph.so.9), which jax-cuda13-pjrt 0.12.1 (by absolute "
            "path) loads by path after the bootstrap ran: the process would map both those "
            "and the bundle's libcudnn.so.9, libcudnn_graph.so.9 (standin-cudnn-linux-x64)"
            ) in err
    assert "jax[cuda13-local]" in err and "pip uninstall nvidia-cudnn-cu13" in err
    assert "allow_app_copies = true" in err
    assert not (tmp_path / "dist" / "app").exists()


def test_allow_app_copies_packs_it_anyway(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    _install(tmp_path / "venv" / "site-packages", _wheels(tmp_path, with_jax=True))
    spec = _workspace(tmp_path, 'environment = "venv/site-packages"\n'
                      "allow_app_copies = true\n")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    assert (tmp_path / "dist" / "app" / "cudnn" / "libcudnn.so.9").is_file()


def test_nvidias_wheel_without_a_framework_that_loads_it_by_path_packs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing loads the wheel's copy by path: the bootstrap's preload is the one copy,
    and the summary says which environment was examined."""
    site = _install(tmp_path / "venv" / "site-packages", _wheels(tmp_path, with_jax=False))
    spec = _workspace(tmp_path, 'environment = "venv/site-packages"\n')
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    assert json.loads(out)["environment"] == f"[scan] environment {site}"


def test_an_app_folder_carrying_jax_and_the_wheel_is_refused_naming_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _workspace(tmp_path)
    _install(tmp_path / "app" / "site-packages", _wheels(tmp_path, with_jax=True))
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert ("the app's own site-packages (site-packages) holds nvidia-cudnn-cu13 9.19.0.56 "
            "(libcudnn.so.9, libcudnn_graph.so.9), which jax-cuda13-pjrt 0.12.1") in err


def test_the_python_bundler_runs_under_counts_for_an_app_that_imports_jax(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """An app with no site-packages of its own and no [scan] environment runs with an
    outside Python, taken to be bundler's: its frameworks count when the app imports
    them, so an app that does not import jax packs beside the same environment."""
    site = _install(tmp_path / "venv" / "site-packages", _wheels(tmp_path, with_jax=True))
    monkeypatch.syspath_prepend(str(site))
    spec = _workspace(tmp_path, app_imports="import jax.numpy as jnp\n")
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert f"the Python bundler runs under ({sys.executable}: {site}" in err
    assert "jax-cuda13-pjrt 0.12.1 (by absolute path) loads by path" in err
    (tmp_path / "app" / "main.py").write_text("import numpy\nprint('no jax')\n")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    assert "environment examined for second copies: the Python bundler runs under" in out


def test_doctor_of_a_bundle_beside_the_wheels_reports_the_second_copy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _workspace(tmp_path, "allow_app_copies = true\n")
    site = _install(tmp_path / "app" / "site-packages", _wheels(tmp_path, with_jax=True))
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    bundle = tmp_path / "dist" / "app"
    code, out, _ = run_cli(capsys, "doctor", bundle, "--json")
    assert code == 1, out
    problems = [f for f in json.loads(out)["findings"]   # (no driver here: its own problem)
                if f["level"] == "problem" and f["about"] == "bundle"]
    assert [p["message"] for p in problems] == [
        "the app's own site-packages (site-packages) holds nvidia-cudnn-cu13 9.19.0.56 "
        f"(libcudnn.so.9, libcudnn_graph.so.9, in {bundle / site.name}), which "
        "jax-cuda13-pjrt 0.12.1 loads by path after the bootstrap ran: the process maps both "
        "those and the bundle's libcudnn.so.9, libcudnn_graph.so.9"]
    assert "pip uninstall nvidia-cudnn-cu13" in problems[0]["hint"]
    # Without the wheel, one copy: doctor says so and finds no problem of it.
    for path in (bundle / "site-packages").glob("nvidia*"):   # pip uninstall's effect
        shutil.rmtree(path)
    code, out, _ = run_cli(capsys, "doctor", bundle, "--json")
    report = json.loads(out)
    assert not [f for f in report["findings"] if f["about"] == "bundle"
                and f["level"] == "problem" and "nvidia-cudnn" in f["message"]]
    assert any("holds no nvidia-* wheel with a library the bundle provides" in f["message"]
               for f in report["findings"])


def test_an_environment_that_is_not_a_folder_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _workspace(tmp_path, 'environment = "venv/lib/python3.12/site-packages"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert (f"bundler: error: {spec}: [scan] environment = 'venv/lib/python3.12/site-packages': "
            f"{tmp_path / 'venv/lib/python3.12/site-packages'} is not a folder") in err


def test_onnxruntime_counts_where_the_app_calls_preload_dlls(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """onnxruntime-gpu loads the wheels' copies by path only in preload_dlls(), which
    the app calls (linux.toml's framework_preload); otherwise its CUDA provider's NEEDED
    libcudnn.so.9 is the copy the bootstrap mapped. So the same environment packs for an
    app that does not call it and is refused for one that does."""
    wheels = _wheels(tmp_path, with_jax=False)
    wheels.append(make_wheel(tmp_path / "wheels", {
        "onnxruntime/__init__.py": b"def preload_dlls(cuda=True, cudnn=True): pass\n",
        "onnxruntime_gpu-1.23.2.dist-info/METADATA": _metadata("onnxruntime-gpu", "1.23.2")},
        name="onnxruntime_gpu", version="1.23.2", platform="any"))
    _install(tmp_path / "venv" / "site-packages", wheels)
    spec = _workspace(tmp_path, 'environment = "venv/site-packages"\n',
                      app_imports="import onnxruntime as ort\n")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    (tmp_path / "app" / "main.py").write_text("import onnxruntime as ort\nort.preload_dlls()\n")
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert ("which onnxruntime-gpu 1.23.2 (preload_dlls() when the app calls it) loads by "
            "path after the bootstrap ran") in err
