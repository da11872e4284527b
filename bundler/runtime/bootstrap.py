"""Load this app's bundled cuDNN runtime before anything else can load another one.

Written into the app by `bundler pack`; standard library only. Importing it:

1. finds the runtime folder beside this file (inside sys._MEIPASS when frozen);
2. checks the NVIDIA driver (nvcuda.dll, libcuda.so.1) against the recipe's minimum:
   missing or too old warns (require_driver = true: an error), not a late cuDNN failure;
3. registers the runtime folder with os.add_dll_directory, for loads that honour it;
4. preloads every runtime DLL by absolute path, in the manifest's load order.

On Linux it refuses a glibc older than the manifest's min_glibc, does step 2, then step 4
dlopens with RTLD_GLOBAL, so a later dlopen by SONAME gets the bundled copy.
Why by absolute path: docs/bootstrap.md. It never reads PATH or writes os.environ.
report() returns what was loaded; `python _cudnn_bootstrap.py` prints it as JSON.
"""

import json
import os
import sys

RUNTIME_DIR = "cudnn"  # the runtime folder inside the app; set by bundler pack
MANIFEST_FORMAT = 1  # the newest manifest format this bootstrap reads

# LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | _DLL_LOAD_DIR: a DLL's imports never come from PATH
# (docs/bootstrap.md; tests/test_bootstrap_mechanisms.py shows each mechanism alone).
_LOAD_FLAGS = 0x00001100
_REPACK = "restore it, or re-run `bundler pack` to rebuild the app"
_HINTS = {2: "the file is missing: " + _REPACK,
          5: "access is denied: an antivirus may hold or have quarantined it; " + _REPACK,
          126: "a DLL it depends on is missing: " + _REPACK,
          193: "it is not a valid 64-bit DLL (32-bit or damaged): " + _REPACK,
          225: "an antivirus blocked it as unsafe: restore it from quarantine"}

_loaded: list = []  # (relpath, absolute path, handle) in load order
_dll_directory = None  # keep the handle: closing it would drop the folder again
_kernel = None  # kernel32 set up for the calls below: built once, on first use
_path_buffer = None  # one buffer for every GetModuleFileNameW (32768 characters)
_manifest: dict = {}
_driver: dict = {}  # what driver_check() found, for report()
_activated = False


class BundledRuntimeError(ImportError):
    """The bundled runtime cannot be loaded; the message names the file and the fix."""


def app_folder():
    if getattr(sys, "frozen", False) and hasattr(sys, "_MEIPASS"):
        return sys._MEIPASS
    return os.path.dirname(os.path.abspath(__file__))


def runtime_folder():
    return os.path.join(app_folder(), *RUNTIME_DIR.split("/"))


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


def read_manifest(path):
    """The manifest's JSON (docs/formats.md), checked for what start-up needs only."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested 1000s deep
        raise BundledRuntimeError(
            f"bundled runtime manifest {path} cannot be read ({exc}); {_REPACK}") from None
    if not isinstance(data, dict) or not isinstance(data.get("load_order"), list):
        raise BundledRuntimeError(f"bundled runtime manifest {path} is damaged; {_REPACK}")
    version = data.get("format")
    if type(version) is not int or not 1 <= version <= MANIFEST_FORMAT:
        raise BundledRuntimeError(
            f"bundled runtime manifest {path} has format {version!r}; this "
            f"bootstrap reads format {MANIFEST_FORMAT}: {_REPACK}")
    # The shapes start-up and report() rely on: valid JSON of another shape would
    # otherwise stop the app with an AttributeError deep inside the bootstrap.
    for key, shape, item, said in (("load_order", list, str, "a list of strings"),
                                   ("versions", dict, str, "an object of strings"),
                                   ("files", list, dict, "a list of objects"),
                                   ("recipe", dict, str, "an object of strings")):
        value = data.get(key, shape())
        items = value.values() if isinstance(value, dict) else value
        if not isinstance(value, shape) or not all(isinstance(i, item) for i in items):
            raise BundledRuntimeError(f"bundled runtime manifest {path} is damaged: "
                                      f"'{key}' must be {said}; {_REPACK}")
    if not all(isinstance(f.get("path"), str) for f in data.get("files", [])):
        raise BundledRuntimeError(f"bundled runtime manifest {path} is damaged: each of "
                                  f"'files' must have a 'path' string; {_REPACK}")
    return data


def _loaded_modules():
    """{lower-case file name: path} of every module in this process, in one enumeration."""
    import ctypes
    kernel32 = _kernel32()
    handles, needed = (ctypes.c_void_p * 4096)(), ctypes.c_ulong()
    kernel32.K32EnumProcessModules(kernel32.GetCurrentProcess(), handles,
                                   ctypes.sizeof(handles), ctypes.byref(needed))
    count = min(needed.value // ctypes.sizeof(ctypes.c_void_p), len(handles))
    paths = [_module_path(handle) for handle in handles[:count]]
    return {os.path.basename(path).lower(): path for path in paths}


def _bundled_path(relpath, existing):
    """The bundled file's path; an error if a library of its name came from elsewhere."""
    path = os.path.join(app_folder(), *relpath.split("/"))
    if existing and not same_file(existing, path):
        raise BundledRuntimeError(
            f"another {os.path.basename(path)} is already loaded from {existing}; this app "
            f"needs its bundled {path}. Something loaded a framework before the bootstrap "
            "ran: keep the bootstrap lines first in the entry script (folder apps) and "
            "bundler's runtime hook first (PyInstaller apps)")
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


def cuda_text(number):
    """10010 -> "10.1": the encoding of cuDriverGetVersion and CUDA_VERSION."""
    return f"{number // 1000}.{number % 1000 // 10}" if number else "none"


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


def probe_libcuda():
    """probe_driver on Linux: libcuda.so.1 by SONAME, as the CUDA runtime loads it."""
    import ctypes
    try:
        get_version = ctypes.CDLL("libcuda.so.1").cuDriverGetVersion
    except (OSError, AttributeError) as exc:
        return "", 0, "", f"libcuda.so.1 cannot be loaded: {exc}"
    version = ctypes.c_int(0)
    result = get_version(ctypes.byref(version))
    path = next((p for n, p in _mapped_libraries().items() if n.startswith("libcuda.so")), "")
    return path or "libcuda.so.1", version.value, "", (
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


def driver_from_file_version(file_version):
    """NVIDIA's driver number from nvcuda.dll's Windows file version: the last five
    digits of its last two fields, e.g. 26.21.14.4166 -> 441.66; "" if not one."""
    parts = file_version.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return ""
    digits = (parts[2] + parts[3].zfill(4))[-5:]
    return f"{int(digits[:3])}.{digits[3:]}"


def driver_older(version, minimum):
    """Whether driver `version` ("516.01") is older than `minimum` ("520.06")."""
    def numbers(text):
        return tuple(int(part) for part in text.split(".") if part.isdigit())
    return numbers(version) < numbers(minimum)


def cuda_needed(cuda):
    """The cuDriverGetVersion of a driver that supports CUDA "10.1": 10010 ("11": 11000)."""
    major, _, rest = cuda.partition(".")
    minor = rest.partition(".")[0]  # "12.9.1", an update, needs what 12.9 needs
    return int(major) * 1000 + int(minor or 0) * 10


def runs_on(version, supported, cuda, oldest, minor_compatible):
    """Whether a driver runs CUDA `cuda` (oldest driver: `oldest`): by its `version`
    ("516.01") when known, else by cuDriverGetVersion `supported`: that CUDA, or its major
    when `minor_compatible` (CUDA 11 on). They agree: a driver reports the newest CUDA
    whose minimum driver it meets."""
    if version and oldest:
        return not driver_older(version, oldest)
    return supported >= cuda_needed(cuda.partition(".")[0] if minor_compatible else cuda)


def driver_check(versions):
    """This machine's driver against what this runtime needs (see judge_driver)."""
    return judge_driver(versions, *(probe_driver() if os.name == "nt" else probe_libcuda()))


def judge_driver(versions, path, supported, file_version, error):
    """A dict of what was found; "problem" is "" when the runtime can run (the driver >=
    min_driver_compat where given, else >= min_driver), "note" when between the two."""
    version = driver_from_file_version(file_version)
    cuda, min_driver = versions.get("cuda", "0"), versions.get("min_driver", "")
    compat = versions.get("min_driver_compat", "")
    oldest = compat or min_driver
    found = {"nvcuda": path, "driver_version": version, "driver_cuda": cuda_text(supported),
             "needs_cuda": cuda, "min_driver": min_driver, "min_driver_compat": compat,
             "problem": "", "note": ""}
    wanted = f"this app's CUDA {cuda} runtime needs an NVIDIA driver >= {oldest}" + (
        f" (>= {min_driver} for all of its features)" if compat else "")
    named = f"the NVIDIA driver {path}" + (f" (version {version})" if version else "")
    if not path:
        found["problem"] = (f"no NVIDIA driver found ({error}); {wanted}: install it, or "
                            "the GPU cannot be used")
    elif error:
        found["problem"] = f"{named} is unusable ({error}); {wanted}"
    elif not runs_on(version, supported, cuda, oldest, bool(compat)):
        found["problem"] = (f"{named} supports CUDA {cuda_text(supported)} (cuDriverGetVersion "
                            f"{supported}), but {wanted}: update the NVIDIA driver")
    elif version and driver_older(version, min_driver):
        found["note"] = (f"{named} is older than {min_driver}, the driver of CUDA {cuda}: this "
                         "app's runtime runs under CUDA minor-version compatibility, without "
                         "what needs the newer driver (such as JIT compilation of newer PTX)")
    return found


def _check_driver():
    global _driver
    first = not _driver
    _driver = _driver or driver_check(_manifest.get("versions", {}))
    problem = _driver["problem"]
    if problem and _manifest.get("require_driver"):
        raise BundledRuntimeError(problem)
    if problem and first:
        # A warning, not an error: apps that fall back to the CPU keep working.
        print(f"cuDNN runtime warning: {problem}", file=sys.stderr)


def activate():
    """Check the driver and preload the runtime, once per process (again: no change)."""
    global _dll_directory, _manifest, _activated
    if sys.version_info < (3, 7):  # noqa: UP036 - the app's Python, not bundler's
        raise BundledRuntimeError(
            f"this app's bundled CUDA runtime needs Python 3.7 or newer; this is Python "
            f"{sys.version.split()[0]} ({sys.executable}): run the app with Python 3.7+")
    if _activated:
        return
    if os.name != "nt" and not sys.platform.startswith("linux"):
        return
    _manifest = read_manifest(os.path.join(runtime_folder(), "manifest.json"))
    if os.name != "nt":
        return _activate_linux()
    _check_driver()
    # For DEFAULT_DIRS loads of a bundled DLL not preloaded yet (ctypes, a DLL loading a
    # sibling). Python 3.7 lacks it; the preload does not need it (_LOAD_FLAGS).
    if _dll_directory is None and hasattr(os, "add_dll_directory"):
        _dll_directory = os.add_dll_directory(runtime_folder())  # kept: a retry reuses it
    already_loaded = _loaded_modules()
    _loaded.clear()  # a retry after a failed load starts over
    # Dependencies first: a DLL that loads one by bare name while it starts (DllMain)
    # gets the bundled copy, already loaded, not one found on PATH.
    for relpath in _manifest.get("load_order", []):
        path, handle = _load_one(relpath, already_loaded)
        _loaded.append((relpath, path, handle))
    _activated = True


def _mapped_libraries():
    """{file name: path} of every file mapped in this process (/proc/self/maps)."""
    with open("/proc/self/maps") as maps:
        paths = [f[5].strip() for f in (line.split(None, 5) for line in maps) if len(f) == 6]
    return {os.path.basename(path): path for path in reversed(paths) if path.startswith("/")}


def glibc_problem(needed, found=""):
    """Why glibc `found` (default: this machine's) cannot run libraries needing `needed`."""
    found = found or os.confstr("CS_GNU_LIBC_VERSION").split(" ")[-1]  # "glibc 2.39"
    return (f"this app's bundled CUDA runtime needs glibc >= {needed} (GLIBC_{needed} "
            f"symbols); this machine has glibc {found}: run it on a newer Linux"
            ) if needed and driver_older(found, needed) else ""


def _activate_linux():
    global _activated
    if not str(_manifest.get("platform", "")).startswith("linux"):
        return  # a Windows bundle run here: none of its files can load
    problem = glibc_problem(_manifest.get("versions", {}).get("min_glibc", ""))
    if problem:
        raise BundledRuntimeError(problem)
    _check_driver()
    import ctypes
    mapped = _mapped_libraries()
    _loaded.clear()
    for relpath in _manifest.get("load_order", []):
        path = _bundled_path(relpath, mapped.get(os.path.basename(relpath)))
        try:
            handle = ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        except OSError as exc:  # the message names the file, or what it needs
            gone = "is missing" if not os.path.isfile(path) else f"cannot be loaded ({exc})"
            raise BundledRuntimeError(
                f"bundled runtime file {relpath} ({path}) {gone}: {_REPACK}") from None
        _loaded.append((relpath, path, handle))
    _activated = True


def report():
    """What was loaded: recipe, versions, and where each DLL came from."""
    versions = {f["path"]: f.get("version", "") for f in _manifest.get("files", [])}
    mapped = _mapped_libraries() if _loaded and os.name != "nt" else {}
    loaded_from = {rel: _module_path(h) if os.name == "nt" else mapped.get(
        os.path.basename(path), "") for rel, path, h in _loaded}
    return {"recipe": _manifest.get("recipe", {}).get("name", ""),
            "versions": _manifest.get("versions", {}),
            "runtime_dir": runtime_folder(),
            "driver": _driver,
            "dlls": [{"file": rel, "version": versions.get(rel, ""),
                      "loaded_from": loaded_from.get(rel, "")} for rel, _, _ in _loaded]}


def _stop_quietly(previous):
    """An excepthook: an uncaught BundledRuntimeError is its message alone (it names the
    file and the fix), not buried under a traceback through the bootstrap lines."""
    def hook(kind, value, trace):
        if issubclass(kind, BundledRuntimeError):
            return print(f"cuDNN runtime error: {value}", file=sys.stderr)
        return previous(kind, value, trace)
    return hook


# Imported as bundler.runtime.bootstrap (by doctor), it only defines functions; shipped,
# importing it activates the runtime: an ImportError the app may catch, else one message.
if __name__ != "bundler.runtime.bootstrap":
    try:
        activate()
    except BundledRuntimeError:
        sys.excepthook = _stop_quietly(sys.excepthook)
        raise

if __name__ == "__main__":
    print(json.dumps(report(), indent=2))
