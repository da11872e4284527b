"""`bundler doctor` (no APPDIR) on this Linux machine, as a process: a site-packages
holding torch and onnxruntime-gpu (their real dist-info metadata shape) beside
NVIDIA's wheels' layout (nvidia/cudnn/lib/libcudnn.so.9, a gcc-built stand-in), and a
decoy libcudnn.so.9 first on LD_LIBRARY_PATH. doctor says how each framework opens its
libraries (linux.toml's framework_opens), which copy a bare-name load gets, and that the
decoy is what a library loading the name before the framework would map too (the same
finding Windows gets for a DLL torch ships), and reports the machine as Linux: no "this
is not Windows" note, no Windows DLL table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.harness.packing import own_environ
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.linux.test_linux_bundle import SHIM, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

pytestmark = linux_with_gcc


def _distribution(site: Path, name: str, version: str) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("")


def _doctor(site: Path, ld_library_path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**own_environ(), "PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(site),
           "LD_LIBRARY_PATH": ld_library_path}
    return subprocess.run([sys.executable, "-m", "bundler", "doctor", *args], cwd=PROJECT_ROOT,
                          env=env, capture_output=True, text=True, check=False, timeout=300)


def test_linux_doctor_says_how_each_framework_opens_nvidias_libraries(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    own = _library(site / "nvidia" / "cudnn" / "lib", "libcudnn.so.9", SHIM, "-ldl")
    decoy = _library(tmp_path / "decoys", "libcudnn.so.9", SHIM, "-ldl")
    _distribution(site, "torch", "2.5.1")
    _distribution(site, "onnxruntime-gpu", "1.20.1")
    done = _doctor(site, str(decoy.parent), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["schema"] == 2 and report["platform"] == "linux-x86_64"
    assert {e["platform"] for e in report["libraries"]} == {"linux-x86_64"}
    messages = [f["message"] for f in report["findings"]]
    assert (f"torch 2.5.1 opens by absolute path: {own}; LD_LIBRARY_PATH does not choose "
            "these") in messages
    [two] = [f for f in report["findings"] if f["message"].startswith(
        f"torch 2.5.1: a bare-name load of libcudnn.so.9 gets {decoy} (LD_LIBRARY_PATH[1]")]
    assert two["level"] == "problem"
    assert (f"not its own {own}: a library that loads libcudnn.so.9 by name before torch is "
            "imported maps that copy too (torch opens site-packages/nvidia/*/lib by "
            "absolute path, so both libcudnn.so.9 are mapped") in two["message"]
    assert (f"onnxruntime-gpu 1.20.1: preload_dlls() loads {own} by path when the app calls "
            "it; otherwise its CUDA provider loads them by bare name: libcudnn.so.9 -> "
            f"{decoy} (LD_LIBRARY_PATH[1])") in messages
    assert {(f["distribution"], f["opens"]) for f in report["frameworks"]} == {
        ("torch", "absolute"), ("onnxruntime-gpu", "preload")}


def test_linux_doctor_reports_the_linux_machine_without_the_not_windows_note(
        tmp_path: Path) -> None:
    done = _doctor(tmp_path, "")
    assert done.returncode in (0, 1), done.stderr
    assert "this is not Windows" not in done.stdout
    assert "where a bare-name DLL load looks" not in done.stdout
    assert "where a bare-name library load looks, in order (LD_LIBRARY_PATH in order, then " \
        "the ldconfig cache (ld.so(8))):" in done.stdout
    assert "linux-x86_64)" in done.stdout.splitlines()[0]
    assert "libcuda.so.1" in done.stdout
    if not Path("/proc/driver/nvidia").exists():   # no driver: a problem, as on Windows
        assert "no NVIDIA driver: libcuda.so.1 cannot be loaded" in done.stdout
        assert done.stdout.rstrip().endswith("1 problem(s) found.")
