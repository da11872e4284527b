"""Load this app's bundled cuDNN runtime before anything else can load another one.

Written into the app by `bundler pack`; standard library only. Importing it:

1. finds the runtime folder beside this file (inside sys._MEIPASS when frozen);
2. registers it with os.add_dll_directory, for loads that honour that list;
3. preloads every runtime DLL by absolute path, in the manifest's load order.

Why preload by absolute path: TensorFlow and PaddlePaddle load "cudnn64_8.dll"
with a plain LoadLibrary by bare name, which searches PATH and ignores
add_dll_directory folders. But a bare-name load returns a module already loaded
under that name, so once ours is loaded every later load gets ours. PyTorch does
the same for torch\\lib.

It never reads PATH to find the runtime and never writes os.environ.
Run `python _cudnn_bootstrap.py` to print report(): versions and load paths.
"""

import json
import os
import sys

RUNTIME_DIR = "cudnn"  # the runtime folder inside the app; set by bundler pack

# LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR: a DLL's own
# imports resolve beside it and in add_dll_directory folders, never through PATH.
_LOAD_FLAGS = 0x00001100
_REPACK = "restore it, or re-run `bundler pack` to rebuild the app"
_HINTS = {
    2: "the file is missing: " + _REPACK,
    5: "access is denied: an antivirus may hold or have quarantined it; " + _REPACK,
    126: "a DLL it depends on is missing: " + _REPACK,
    193: "it is not a valid 64-bit DLL (32-bit or damaged): " + _REPACK,
    225: "an antivirus blocked it as unsafe: restore it from quarantine",
}

_loaded = []        # (relpath, absolute path, handle) in load order
_dll_directory = None  # keep the handle: closing it would drop the folder again
_manifest = {}


class BundledRuntimeError(ImportError):
    """The bundled runtime cannot be loaded; the message names the file and the fix."""


def app_folder():
    if getattr(sys, "frozen", False) and hasattr(sys, "_MEIPASS"):
        return sys._MEIPASS
    return os.path.dirname(os.path.abspath(__file__))


def runtime_folder():
    return os.path.join(app_folder(), *RUNTIME_DIR.split("/"))


def _kernel32():
    import ctypes
    from ctypes import wintypes

    # A private instance: setting restype on ctypes.windll.kernel32 would change
    # it for every other user in the process.
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    # Handles are pointer-sized: a DLL may load above 4 GiB.
    kernel32.LoadLibraryExW.restype = ctypes.c_void_p
    kernel32.LoadLibraryExW.argtypes = [wintypes.LPCWSTR, ctypes.c_void_p, wintypes.DWORD]
    kernel32.GetModuleHandleW.restype = ctypes.c_void_p
    kernel32.GetModuleHandleW.argtypes = [wintypes.LPCWSTR]
    kernel32.GetModuleFileNameW.restype = wintypes.DWORD
    kernel32.GetModuleFileNameW.argtypes = [ctypes.c_void_p, wintypes.LPWSTR, wintypes.DWORD]
    return kernel32


def _module_path(kernel32, handle):
    import ctypes

    buffer = ctypes.create_unicode_buffer(32768)
    length = kernel32.GetModuleFileNameW(handle, buffer, len(buffer))
    return buffer.value[:length]


def _same_file(a, b):
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _read_manifest():
    path = os.path.join(runtime_folder(), "manifest.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise BundledRuntimeError(
            f"bundled runtime manifest {path} cannot be read ({exc}); {_REPACK}") from None


def _load_one(kernel32, relpath):
    import ctypes

    path = os.path.join(app_folder(), *relpath.split("/"))
    name = os.path.basename(path)
    if not os.path.isfile(path):
        raise BundledRuntimeError(
            f"bundled runtime file {relpath} is missing from {app_folder()} "
            f"(an antivirus may have quarantined it): {_REPACK}")
    existing = kernel32.GetModuleHandleW(name)
    if existing and not _same_file(_module_path(kernel32, existing), path):
        raise BundledRuntimeError(
            f"another {name} is already loaded from {_module_path(kernel32, existing)}; "
            f"this app needs its bundled {path}. Something loaded a framework before the "
            "bootstrap ran: make the bootstrap the first import of the entry script")
    handle = kernel32.LoadLibraryExW(path, None, _LOAD_FLAGS)
    if not handle:
        code = ctypes.get_last_error()
        hint = _HINTS.get(code, _REPACK)
        raise BundledRuntimeError(
            f"cannot load bundled runtime file {relpath} ({path}): Windows error {code} "
            f"({ctypes.FormatError(code).strip()}); {hint}")
    return path, handle


def activate():
    """Register the runtime folder and preload its DLLs. Safe to call twice."""
    global _dll_directory, _manifest
    if os.name != "nt" or _loaded:
        return
    _manifest = _read_manifest()
    _dll_directory = os.add_dll_directory(runtime_folder())
    kernel32 = _kernel32()
    for relpath in _manifest.get("load_order", []):
        path, handle = _load_one(kernel32, relpath)
        _loaded.append((relpath, path, handle))


def report():
    """What was loaded: recipe, versions, and where each DLL came from."""
    versions = {f["path"]: f.get("version", "") for f in _manifest.get("files", [])}
    loaded_from = {}
    if os.name == "nt" and _loaded:
        kernel32 = _kernel32()
        loaded_from = {rel: _module_path(kernel32, h) for rel, _, h in _loaded}
    return {
        "recipe": _manifest.get("recipe", {}).get("name", ""),
        "versions": _manifest.get("versions", {}),
        "runtime_dir": runtime_folder(),
        "dlls": [{"file": rel, "version": versions.get(rel, ""),
                  "loaded_from": loaded_from.get(rel, "")} for rel, _, _ in _loaded],
    }


activate()

if __name__ == "__main__":
    print(json.dumps(report(), indent=2))
