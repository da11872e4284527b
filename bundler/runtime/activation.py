"""The bootstrap's start: activate() (check the driver, load the runtime through the
loader of the app's platform), report(), and what `bundler verify --run` asks of each
process. Standard library only. `bundler pack` ships it last in the bootstrap, after the
loader (whose LOADER it calls), and adds the line `start(__name__)` that runs it.
"""

import json
import os
import sys

# >>> not shipped: in the shipped bootstrap these come from the pieces before this one
from .common import PLATFORM, BundledRuntimeError, app_folder, read_manifest, runtime_folder
from .rules import IMPORT_ONLY, PROCESS_REPORT, judge_driver

# The shipped loader's functions: "runs_here", "load", "probe", "loaded_from",
# "modules". bundler's own import of this module has none, so nothing activates there.
LOADER: dict = {}
# <<< not shipped

_loaded: list = []  # (relpath, absolute path, handle) in load order
_manifest: dict = {}
_driver: dict = {}  # what the driver check found, for report()
_activated = False
_said_elsewhere = False  # the bundle's OS is not this one, and that was said


def _check_driver():
    """The loader calls it where its platform checks the driver: before any load."""
    global _driver
    first = not _driver
    _driver = _driver or judge_driver(_manifest.get("versions", {}), *LOADER["probe"]())
    problem = _driver["problem"]
    if problem and _manifest.get("require_driver"):
        raise BundledRuntimeError(problem)
    if problem and first:
        # A warning, not an error: apps that fall back to the CPU keep working.
        print(f"cuDNN runtime warning: {problem}", file=sys.stderr)


def activate():
    """Check the driver and preload the runtime, once per process (again: no change)."""
    global _manifest, _activated, _loaded
    if sys.version_info < (3, 7):  # noqa: UP036 - the app's Python, not bundler's
        raise BundledRuntimeError(
            f"this app's bundled CUDA runtime needs Python 3.7 or newer; this is Python "
            f"{sys.version.split()[0]} ({sys.executable}): run the app with Python 3.7+")
    if _activated or not LOADER:
        return
    if not LOADER["runs_here"]():
        _not_for_this_os()  # nothing of it can load here: said, not silent
        return
    _manifest = read_manifest(os.path.join(runtime_folder(), "manifest.json"))
    loaded = LOADER["load"](_manifest, _check_driver)
    if loaded is not None:  # None: a bundle of another platform, none of it loads here
        _loaded, _activated = loaded, True


def _not_for_this_os():
    """One line, once a process: the bundle is for another OS than this one. The only
    place the bootstrap names the OS it runs on, for the message alone."""
    global _said_elsewhere
    if not _said_elsewhere:
        _said_elsewhere = True
        print(f"cuDNN runtime warning: this app's bundled CUDA runtime is for {PLATFORM}, "
              f"but it runs on {sys.platform} ({sys.executable}): the bundled runtime is "
              f"not loaded; run the app on {PLATFORM}, or pack it for this OS",
              file=sys.stderr)


def report():
    """What was loaded: recipe, versions, and where each library came from."""
    versions = {f["path"]: f.get("version", "") for f in _manifest.get("files", [])}
    loaded_from = LOADER["loaded_from"](_loaded) if _loaded else {}
    libraries = [{"file": rel, "version": versions.get(rel, ""),
                  "loaded_from": loaded_from.get(rel, "")} for rel, _, _ in _loaded]
    # "dlls": the name of "libraries" before Linux bundles, kept as an alias until 1.0.
    return {"recipe": _manifest.get("recipe", {}).get("name", ""),
            "versions": _manifest.get("versions", {}), "runtime_dir": runtime_folder(),
            "driver": _driver, "libraries": libraries, "dlls": libraries}


def _write_process_report(folder):
    """What `bundler verify --run` judges, in `folder`: every module this process maps
    now (each file once, as the OS names it), the app's folder as this process sees it,
    report()."""
    path = os.path.join(folder, f"{os.getpid()}.json")
    with open(path + ".part", "w", encoding="utf-8") as handle:
        json.dump({"pid": os.getpid(), "executable": sys.executable,
                   "app": os.path.realpath(app_folder()), "report": report(),
                   "modules": LOADER["modules"]()}, handle, indent=1)
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


def start(name):
    """What importing the shipped bootstrap does (its last line calls this): activate
    the runtime, an ImportError the app may catch, else one message; run as a script
    (`name` "__main__"), print report() as JSON."""
    try:
        activate()
    except BundledRuntimeError:
        sys.excepthook = _stop_quietly(sys.excepthook)
        raise
    _report_for_verify()
    if name == "__main__":
        print(json.dumps(report(), indent=2))
