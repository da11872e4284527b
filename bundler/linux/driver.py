"""The NVIDIA driver of this Linux machine, found as the CUDA runtime finds it:
libcuda.so.1 by SONAME (the loader's search: LD_LIBRARY_PATH, ld.so.cache). Its
cuDriverGetVersion says the newest CUDA it runs; the file it maps to names the driver
release (libcuda.so.580.65.06). Loaded into the asking process, as on Windows."""

from __future__ import annotations

import ctypes
import os
import re

LIBCUDA = "libcuda.so.1"
_RELEASE = re.compile(r"libcuda\.so\.(\d+\.\d+(\.\d+)?)")


def probe_libcuda() -> tuple[str, int, str, str]:
    """(the file libcuda.so.1 maps to or "", cuDriverGetVersion e.g. 13000, the driver
    release e.g. "580.65.06" or "", what went wrong or "")."""
    try:
        libcuda = ctypes.CDLL(LIBCUDA)
    except OSError as exc:
        return "", 0, "", f"{LIBCUDA} cannot be loaded: {exc}"
    path = _mapped(LIBCUDA)
    match = _RELEASE.fullmatch(os.path.basename(path))
    version = ctypes.c_int(0)
    try:
        result = libcuda.cuDriverGetVersion(ctypes.byref(version))
    except AttributeError:
        return path, 0, "", f"{path or LIBCUDA} has no cuDriverGetVersion"
    return path, version.value, match.group(1) if match else "", (
        f"cuDriverGetVersion failed (CUresult {result})" if result else "")


def _mapped(soname: str) -> str:
    """The real file of a loaded library (its link resolved): /proc/self/maps."""
    stem = soname.split(".so")[0] + ".so"
    with open("/proc/self/maps") as maps:
        paths = [f[5].strip() for f in (line.split(None, 5) for line in maps) if len(f) == 6]
    return next((p for p in paths if os.path.basename(p).startswith(stem)), "")
