"""The NVIDIA driver of this Windows machine, found as the CUDA runtime finds it:
nvcuda.dll loaded by bare name (from System32, where the driver installs it). Its
cuDriverGetVersion says the newest CUDA it runs; its file version names the driver
release (26.21.14.4166 -> 441.66). Loaded into the asking process, as on Linux.

The bootstrap has its own copy of these few lines (runtime/loader_windows.py): it
ships alone, standard library only, and cannot import bundler."""

from __future__ import annotations

import ctypes
from typing import Any

from bundler.platforms.api import DriverProbe

NVCUDA = "nvcuda.dll"


def probe_nvcuda() -> DriverProbe:
    """nvcuda.dll's path, cuDriverGetVersion, file version and the release it names."""
    try:
        kernel32 = _kernel32()
    except (AttributeError, OSError) as exc:   # no kernel32: not a Windows process
        return DriverProbe("", 0, "", "", "", f"{NVCUDA} cannot be loaded: {exc}")
    handle = kernel32.LoadLibraryW(NVCUDA)
    if not handle:
        return DriverProbe("", 0, "", "", "", f"{NVCUDA} cannot be loaded: Windows error "
                           f"{ctypes.get_last_error()}")  # type: ignore[attr-defined]
    buffer = ctypes.create_unicode_buffer(32768)
    kernel32.GetModuleFileNameW(handle, buffer, len(buffer))
    path = buffer.value
    file_version = _file_version(path)
    release = driver_from_file_version(file_version)
    named = f"{NVCUDA} file version {file_version}" if release else ""
    try:
        get_version = ctypes.WinDLL(path, handle=handle).cuDriverGetVersion  # type: ignore[attr-defined]
    except AttributeError:
        return DriverProbe(path, 0, release, named, file_version, "it has no cuDriverGetVersion")
    version = ctypes.c_int(0)
    result = get_version(ctypes.byref(version))
    return DriverProbe(path, version.value, release, named, file_version,
                       f"cuDriverGetVersion failed (CUresult {result})" if result else "")


def driver_from_file_version(file_version: str) -> str:
    """NVIDIA's driver number from nvcuda.dll's Windows file version: the last five
    digits of its last two fields, e.g. 26.21.14.4166 -> 441.66; "" if not one (the
    bootstrap's rule: runtime/rules.py, which doctor's tests hold the two to)."""
    parts = file_version.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return ""
    digits = (parts[2] + parts[3].zfill(4))[-5:]
    return f"{int(digits[:3])}.{digits[3:]}"


def _kernel32() -> Any:
    # Private: a restype set on ctypes.windll.kernel32 would change it for every user.
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.LoadLibraryW.restype = ctypes.c_void_p   # handles are pointer-sized
    kernel32.LoadLibraryW.argtypes = [ctypes.c_wchar_p]
    kernel32.GetModuleFileNameW.restype = ctypes.c_ulong
    kernel32.GetModuleFileNameW.argtypes = [ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_ulong]
    return kernel32


def _file_version(path: str) -> str:
    """A DLL's file version from its version resource, e.g. "26.21.14.4166"; "" if none."""
    version = ctypes.WinDLL("version")  # type: ignore[attr-defined]
    size = version.GetFileVersionInfoSizeW(path, None)
    info = ctypes.create_string_buffer(size)
    fixed, length = ctypes.c_void_p(), ctypes.c_uint()
    if not (size and version.GetFileVersionInfoW(path, 0, size, info) and version.VerQueryValueW(
            info, "\\", ctypes.byref(fixed), ctypes.byref(length)) and length.value >= 16):
        return ""
    # VS_FIXEDFILEINFO: signature, struct version, then the file version's two halves.
    _, _, high, low = (ctypes.c_uint32 * 4).from_address(fixed.value or 0)
    return f"{high >> 16}.{high & 0xFFFF}.{low >> 16}.{low & 0xFFFF}"
