# The PyInstaller spec that `bundler pack` runs (builder = "pyinstaller").
#
# It runs the app's own PyInstaller spec unchanged - its Analysis, binaries,
# datas, hiddenimports, EXE and COLLECT - with two additions to every Analysis:
# the bundled-runtime bootstrap module, and a runtime hook importing it placed
# FIRST in runtime_hooks (PyInstaller runs custom runtime hooks in list order,
# before its own and before the app's script), so the runtime is loaded before
# anything can import a framework. The app's spec file is only read, never written.
#
# What the build made (the COLLECT folder, its contents directory; or a onefile
# EXE, which bundler refuses) is written to PARAMS["layout"] as JSON for bundler.
#
# Never imported: bundler writes a copy with PARAMS filled in, and PyInstaller
# runs that copy as a spec, providing Analysis, EXE, COLLECT, SPEC ... as its
# globals (so they are read from globals() here).
import inspect
import json

from PyInstaller.config import CONF

PARAMS: dict = {}  # set by bundler pack

_pyinstaller = dict(globals())
_real_analysis, _real_exe, _real_collect = (
    _pyinstaller["Analysis"], _pyinstaller["EXE"], _pyinstaller["COLLECT"])
_seen = {"analyses": 0, "collects": [], "onefile": []}


def _save():
    with open(PARAMS["layout"], "w", encoding="utf-8") as handle:
        json.dump(_seen, handle)


def _analysis(*args, **kwargs):
    bound = inspect.signature(_real_analysis).bind(*args, **kwargs)
    given = bound.arguments
    given["runtime_hooks"] = [PARAMS["runtime_hook"]] + list(given.get("runtime_hooks") or [])
    given["pathex"] = list(given.get("pathex") or []) + [PARAMS["bootstrap_dir"]]
    given["hiddenimports"] = list(given.get("hiddenimports") or []) + [PARAMS["bootstrap"]]
    _seen["analyses"] += 1
    return _real_analysis(*bound.args, **bound.kwargs)


def _exe(*args, **kwargs):
    if not kwargs.get("exclude_binaries", False):
        # A onefile EXE: every start would unpack the whole runtime to a temp folder.
        _seen["onefile"].append(kwargs.get("name") or "EXE")
        _save()
        raise SystemExit("bundler: refusing a onefile EXE (see the bundler error below)")
    return _real_exe(*args, **kwargs)


def _collect(*args, **kwargs):
    collect = _real_collect(*args, **kwargs)
    _seen["collects"].append({"folder": collect.name,
                              "contents_directory": collect.contents_directory or "."})
    return collect


def _run_app_spec():
    path = PARAMS["app_spec"]
    # Relative paths in the app's spec (scripts, datas, icon) resolve against its
    # own folder, exactly as when PyInstaller runs it directly.
    CONF["spec"] = path
    CONF["specpath"] = PARAMS["app_spec_dir"]
    namespace = dict(_pyinstaller, SPEC=path, SPECPATH=PARAMS["app_spec_dir"],
                     specnm=PARAMS["app_spec_name"],
                     Analysis=_analysis, EXE=_exe, COLLECT=_collect)
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec")
    exec(code, namespace)
    _save()


_run_app_spec()
