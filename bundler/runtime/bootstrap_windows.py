"""The bootstrap's Windows loader: `bundler pack` puts it into the bootstrap it ships for
a Windows recipe (bootstrap.py, at the lines marked "the loaders"). Standard library
only; the lines marked "not shipped" give bundler's own import of it (doctor) the names
the shipped file defines itself.
"""

# >>> not shipped: the shipped bootstrap defines these itself
import os

from .bootstrap import (
    _LOADERS,
    _REPACK,
    BundledRuntimeError,
    _check_driver,
    another_copy,
    app_folder,
    runtime_folder,
)

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
    import ctypes
    # DWORD, HANDLE, LPCWSTR as plain ctypes types: ctypes.wintypes costs more to import.
    dword, pointer, wide_string = ctypes.c_ulong, ctypes.c_void_p, ctypes.c_wchar_p
    # Private: a restype set on ctypes.windll.kernel32 would change it for every user.
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    # Handles are pointer-sized: a DLL may load above 4 GiB.
    kernel32.LoadLibraryExW.restype = pointer
    kernel32.LoadLibraryExW.argtypes = [wide_string, pointer, dword]
    kernel32.LoadLibraryW.restype = pointer
    kernel32.LoadLibraryW.argtypes = [wide_string]
    kernel32.GetCurrentProcess.restype = pointer
    kernel32.K32EnumProcessModules.argtypes = [pointer, ctypes.POINTER(pointer), dword,
                                               ctypes.POINTER(dword)]
    kernel32.GetModuleFileNameW.restype = dword
    kernel32.GetModuleFileNameW.argtypes = [pointer, wide_string, dword]
    _path_buffer = ctypes.create_unicode_buffer(32768)
    _kernel = kernel32
    return kernel32


def _module_path(handle):
    kernel32 = _kernel32()  # also makes _path_buffer
    length = kernel32.GetModuleFileNameW(handle, _path_buffer, len(_path_buffer))
    return _path_buffer[:length]


def same_file(a, b):
    """Whether two paths name one file, as Windows compares them (case-insensitive)."""
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _module_paths():
    """The path of every module in this process, in one enumeration (EnumProcessModules)."""
    import ctypes
    kernel32 = _kernel32()
    handles, needed = (ctypes.c_void_p * 4096)(), ctypes.c_ulong()
    kernel32.K32EnumProcessModules(kernel32.GetCurrentProcess(), handles,
                                   ctypes.sizeof(handles), ctypes.byref(needed))
    count = min(needed.value // ctypes.sizeof(ctypes.c_void_p), len(handles))
    return [_module_path(handle) for handle in handles[:count]]


def _loaded_modules():
    """{lower-case file name: path} of every module in this process."""
    return {os.path.basename(path).lower(): path for path in _module_paths()}


def _bundled_path(relpath, existing):
    """The bundled file's path; an error if a library of its name came from elsewhere."""
    path = os.path.join(app_folder(), *relpath.split("/"))
    if existing and not same_file(existing, path):
        raise another_copy(os.path.basename(path), existing, path)
    return path


def _load_one(relpath, already_loaded):
    import ctypes
    path = _bundled_path(relpath, already_loaded.get(os.path.basename(relpath).lower()))
    handle = _kernel32().LoadLibraryExW(path, None, _LOAD_FLAGS)
    if not handle:
        code = ctypes.get_last_error()
        # Only now look at the file: a stat per DLL on every start is not free.
        if not os.path.isfile(path):
            raise BundledRuntimeError(
                f"bundled runtime file {relpath} is missing from {app_folder()} "
                f"(an antivirus may have quarantined it): {_REPACK}")
        hint = _HINTS.get(code, _REPACK)
        raise BundledRuntimeError(
            f"cannot load bundled runtime file {relpath} ({path}): Windows error {code} "
            f"({ctypes.FormatError(code).strip()}); {hint}")
    return path, handle


def probe_driver():
    """(nvcuda.dll's path or "", the CUDA the driver supports e.g. 10010, its file version
    e.g. "26.21.14.4166" or "", error), loaded by bare name as the CUDA runtime does."""
    import ctypes
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
    import ctypes
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


def _activate_windows(manifest):
    """Preload `manifest`'s DLLs; the [(relpath, path, handle)] loaded."""
    global _dll_directory
    _check_driver()
    # For DEFAULT_DIRS loads of a bundled DLL not preloaded yet (ctypes, a DLL loading a
    # sibling). Python 3.7 lacks it; the preload does not need it (_LOAD_FLAGS).
    if _dll_directory is None and hasattr(os, "add_dll_directory"):
        _dll_directory = os.add_dll_directory(runtime_folder())  # kept: a retry reuses it
    already_loaded = _loaded_modules()
    loaded = []  # a retry after a failed load starts over
    # Dependencies first: a DLL that loads one by bare name while it starts (DllMain)
    # gets the bundled copy, already loaded, not one found on PATH.
    for relpath in manifest.get("load_order", []):
        path, handle = _load_one(relpath, already_loaded)
        loaded.append((relpath, path, handle))
    return loaded


def _loaded_from(loaded):
    """{relpath: the path Windows reports for the module}, for report()."""
    return {rel: _module_path(handle) for rel, _, handle in loaded}


_LOADERS["windows"] = {"activate": _activate_windows, "probe": probe_driver,
                       "loaded_from": _loaded_from, "modules": _module_paths}
