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

This file is the part every platform shares; `bundler pack` puts the loader of the
recipe's platform (bootstrap_windows.py or bootstrap_linux.py) where the lines marked
"the loaders" are, and ships the one file that makes.
"""

import json
import os
import sys

RUNTIME_DIR = "cudnn"  # the runtime folder inside the app; set by bundler pack
MANIFEST_FORMAT = 1  # the newest manifest format this bootstrap reads
# Set by `bundler verify --run` (docs/diagnosing.md): a folder where each process writes
# what it mapped, as it exits; with IMPORT_ONLY also set, the app stops after the loads.
PROCESS_REPORT = "BUNDLER_PROCESS_REPORT"
IMPORT_ONLY = "BUNDLER_IMPORT_ONLY"

_REPACK = "restore it, or re-run `bundler pack` to rebuild the app"
_LOADERS: dict = {}  # "windows"/"linux" -> its loader's functions (the loaders fill it)
_loaded: list = []  # (relpath, absolute path, handle) in load order
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


def _this_os():
    return "windows" if os.name == "nt" else "linux" if sys.platform.startswith("linux") else ""


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


def another_copy(name, existing, path):
    """The refusal when a library of a bundled file's name is loaded from elsewhere."""
    return BundledRuntimeError(
        f"another {name} is already loaded from {existing}; this app needs its bundled "
        f"{path}. Something loaded a framework before the bootstrap ran: keep the "
        "bootstrap lines first in the entry script (folder apps) and bundler's runtime "
        "hook first (PyInstaller apps)")


def cuda_text(number):
    """10010 -> "10.1": the encoding of cuDriverGetVersion and CUDA_VERSION."""
    return f"{number // 1000}.{number % 1000 // 10}" if number else "none"


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
    return judge_driver(versions, *_LOADERS[_this_os()]["probe"]())


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


# >>> the loaders: `bundler pack` puts the recipe's platform's loader here, and only it
from .bootstrap_linux import glibc_problem as glibc_problem  # noqa: E402
from .bootstrap_linux import probe_libcuda as probe_libcuda  # noqa: E402
from .bootstrap_windows import probe_driver as probe_driver  # noqa: E402
from .bootstrap_windows import same_file as same_file  # noqa: E402

# <<< the loaders


def activate():
    """Check the driver and preload the runtime, once per process (again: no change)."""
    global _manifest, _activated, _loaded
    if sys.version_info < (3, 7):  # noqa: UP036 - the app's Python, not bundler's
        raise BundledRuntimeError(
            f"this app's bundled CUDA runtime needs Python 3.7 or newer; this is Python "
            f"{sys.version.split()[0]} ({sys.executable}): run the app with Python 3.7+")
    loader = _LOADERS.get(_this_os())
    if _activated or loader is None:  # another OS than the bundle's: nothing can load
        return
    _manifest = read_manifest(os.path.join(runtime_folder(), "manifest.json"))
    loaded = loader["activate"](_manifest)
    if loaded is not None:  # None: a bundle of another platform, none of it loads here
        _loaded, _activated = loaded, True


def report():
    """What was loaded: recipe, versions, and where each DLL came from."""
    versions = {f["path"]: f.get("version", "") for f in _manifest.get("files", [])}
    loaded_from = _LOADERS[_this_os()]["loaded_from"](_loaded) if _loaded else {}
    return {"recipe": _manifest.get("recipe", {}).get("name", ""),
            "versions": _manifest.get("versions", {}),
            "runtime_dir": runtime_folder(),
            "driver": _driver,
            "dlls": [{"file": rel, "version": versions.get(rel, ""),
                      "loaded_from": loaded_from.get(rel, "")} for rel, _, _ in _loaded]}


def process_report():
    """What `bundler verify --run` judges: every module this process maps now (each
    file once, as the OS names it), the app's folder as this process sees it, report()."""
    return {"pid": os.getpid(), "executable": sys.executable,
            "app": os.path.realpath(app_folder()), "report": report(),
            "modules": _LOADERS[_this_os()]["modules"]()}


def _write_process_report(folder):
    path = os.path.join(folder, f"{os.getpid()}.json")
    with open(path + ".part", "w", encoding="utf-8") as handle:
        json.dump(process_report(), handle, indent=1)
    os.replace(path + ".part", path)  # whole or absent: verify never reads half of one


def _report_for_verify():
    """Under `bundler verify --run` only: the report as the process exits (what the app
    itself loaded included), or at once and stop when only the loads are wanted."""
    folder = os.environ.get(PROCESS_REPORT)
    if not folder or not _activated:
        return
    if os.environ.get(IMPORT_ONLY):
        _write_process_report(folder)
        raise SystemExit(0)
    import atexit
    atexit.register(_write_process_report, folder)


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
    _report_for_verify()

if __name__ == "__main__":
    print(json.dumps(report(), indent=2))
