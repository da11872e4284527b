"""The bootstrap's Windows loader: `bundler pack` puts it into the bootstrap it ships for
a Windows recipe, after rules.py and common.py and before activation.py (pack/emit.py).
Standard library only. bundler imports it too, for the driver as the bootstrap finds it
(doctor: probe_driver, driver_check); importing it loads nothing.
"""

import ctypes
import os

# >>> not shipped: in the shipped bootstrap these come from the pieces before this one
from .common import _REPACK, BundledRuntimeError, another_copy, app_folder, runtime_folder
from .rules import judge_driver, same_file

# <<< not shipped

# LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | _DLL_LOAD_DIR: a DLL's imports never come from PATH
# (docs/bootstrap.md; tests/wine/test_bootstrap_mechanisms.py shows each mechanism alone).
_LOAD_FLAGS = 0x00001100
_HINTS = {2: "the file is missing: " + _REPACK,
          5: "access is denied: an antivirus may hold or have quarantined it; " + _REPACK,
          126: "a DLL it depends on is missing: " + _REPACK,
          193: "it is not a valid 64-bit DLL (32-bit or damaged): " + _REPACK,
          225: "an antivirus blocked it as unsafe: restore it from quarantine"}

_dll_directory = None  # keep the handle: closing it would drop the folder again
_kernel = None  # kernel32 set up for the calls below: built once, on first use
_path_buffer = None  # one buffer for every GetModuleFileNameW (32768 characters)


def _kernel32():
    global _kernel, _path_buffer
    if _kernel is not None:
        return _kernel
    # DWORD, HANDLE, LPCWSTR as plain ctypes types: ctypes.wintypes costs more to import.
    dword, pointer, wide_string = ctypes.c_ulong, ctypes.c_void_p, ctypes.c_wchar_p
    # Private: a restype set on ctypes.windll.kernel32 would change it for every user.
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    # Handles are pointer-sized: a DLL may load above 4 GiB.
    for name, result, arguments in (
            ("LoadLibraryExW", pointer, [wide_string, pointer, dword]),
            ("LoadLibraryW", pointer, [wide_string]), ("GetCurrentProcess", pointer, []),
            ("K32EnumProcessModules", ctypes.c_int,
             [pointer, ctypes.POINTER(pointer), dword, ctypes.POINTER(dword)]),
            ("GetModuleFileNameW", dword, [pointer, wide_string, dword])):
        getattr(kernel32, name).restype, getattr(kernel32, name).argtypes = result, arguments
    _kernel, _path_buffer = kernel32, ctypes.create_unicode_buffer(32768)
    return kernel32


def _module_path(handle):
    # _kernel32() first: it also makes _path_buffer.
    length = _kernel32().GetModuleFileNameW(handle, _path_buffer, len(_path_buffer))
    return _path_buffer[:length]


def _module_paths():
    """The path of every module in this process, in one enumeration (EnumProcessModules)."""
    kernel32 = _kernel32()
    handles, needed = (ctypes.c_void_p * 4096)(), ctypes.c_ulong()
    kernel32.K32EnumProcessModules(kernel32.GetCurrentProcess(), handles,
                                   ctypes.sizeof(handles), ctypes.byref(needed))
    count = min(needed.value // ctypes.sizeof(ctypes.c_void_p), len(handles))
    return [_module_path(handle) for handle in handles[:count]]


def _load_one(relpath, already_loaded):
    """Load a bundled DLL by its path; an error if a library of its name (lower case in
    `already_loaded`) came from elsewhere."""
    path = os.path.join(app_folder(), *relpath.split("/"))
    existing = already_loaded.get(os.path.basename(path).lower())
    if existing and not same_file(existing, path):
        raise another_copy(os.path.basename(path), existing, path)
    handle = _kernel32().LoadLibraryExW(path, None, _LOAD_FLAGS)
    if not handle:
        code = ctypes.get_last_error()
        # Only now look at the file: a stat per DLL on every start is not free.
        if not os.path.isfile(path):
            raise BundledRuntimeError(
                f"bundled runtime file {relpath} is missing from {app_folder()} "
                f"(an antivirus may have quarantined it): {_REPACK}")
        raise BundledRuntimeError(
            f"cannot load bundled runtime file {relpath} ({path}): Windows error {code} "
            f"({ctypes.FormatError(code).strip()}); {_HINTS.get(code, _REPACK)}")
    return relpath, path, handle


def probe_driver():
    """(nvcuda.dll's path or "", the CUDA the driver supports e.g. 10010, its file version
    e.g. "26.21.14.4166" or "", error), loaded by bare name as the CUDA runtime does."""
    handle = _kernel32().LoadLibraryW("nvcuda.dll")
    if not handle:
        return "", 0, "", f"nvcuda.dll cannot be loaded: Windows error {ctypes.get_last_error()}"
    path = _module_path(handle)
    file_version = _file_version(path)
    try:
        get_version = ctypes.WinDLL(path, handle=handle).cuDriverGetVersion
    except AttributeError:
        return path, 0, file_version, "it has no cuDriverGetVersion"
    version = ctypes.c_int(0)
    result = get_version(ctypes.byref(version))
    return path, version.value, file_version, (
        f"cuDriverGetVersion failed (CUresult {result})" if result else "")


def _file_version(path):
    """A DLL's file version from its version resource, e.g. "26.21.14.4166"; "" if none."""
    version = ctypes.WinDLL("version")
    size = version.GetFileVersionInfoSizeW(path, None)
    info = ctypes.create_string_buffer(size)
    fixed, length = ctypes.c_void_p(), ctypes.c_uint()
    if not (size and version.GetFileVersionInfoW(path, 0, size, info) and version.VerQueryValueW(
            info, "\\", ctypes.byref(fixed), ctypes.byref(length)) and length.value >= 16):
        return ""
    # VS_FIXEDFILEINFO: signature, struct version, then the file version's two halves.
    _, _, high, low = (ctypes.c_uint32 * 4).from_address(fixed.value)
    return f"{high >> 16}.{high & 0xFFFF}.{low >> 16}.{low & 0xFFFF}"


def runs_here():
    """Whether this Python can make the calls below: ctypes has WinDLL on Windows only."""
    return hasattr(ctypes, "WinDLL")


def driver_check(versions):
    """This machine's driver (nvcuda.dll) against what the runtime needs: doctor's; the
    bootstrap judges LOADER's probe itself."""
    return judge_driver(versions, *probe_driver())


def _activate_windows(manifest, check_driver):
    """Preload `manifest`'s DLLs; the [(relpath, path, handle)] loaded."""
    global _dll_directory
    check_driver()
    # For DEFAULT_DIRS loads of a bundled DLL not preloaded yet (ctypes, a DLL loading a
    # sibling). Python 3.7 lacks it; the preload does not need it (_LOAD_FLAGS).
    if _dll_directory is None and hasattr(os, "add_dll_directory"):
        _dll_directory = os.add_dll_directory(runtime_folder())  # kept: a retry reuses it
    # {lower-case file name: path} of every module in this process, listed once.
    already_loaded = {os.path.basename(path).lower(): path for path in _module_paths()}
    # Dependencies first: a DLL that loads one by bare name while it starts (DllMain)
    # gets the bundled copy, already loaded, not one found on PATH. A retry after a
    # failed load starts over.
    return [_load_one(relpath, already_loaded) for relpath in manifest.get("load_order", [])]


def _loaded_from(loaded):
    """{relpath: the path Windows reports for the module}, for report()."""
    return {rel: _module_path(handle) for rel, _, handle in loaded}


LOADER = {"runs_here": runs_here, "load": _activate_windows, "probe": probe_driver,
          "loaded_from": _loaded_from, "modules": _module_paths}
