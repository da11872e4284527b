"""The "pyinstaller" builder: build a onedir app with PyInstaller, the bootstrap first.

The app's script (or its own PyInstaller spec, used as it is) is built by
PyInstaller in a child process through bundler's wrapper spec
(pyinstaller_wrapper.py), which adds the bootstrap as the first runtime hook.
The child's PATH holds no CUDA or cuDNN folder and it sees no CUDA_PATH*, so
PyInstaller's dependency scan cannot collect a second, foreign copy of a
runtime DLL from the build machine; bundler then stages the runtime itself into
the frozen app's runtime folder (inside sys._MEIPASS). The user's own
environment and files are not changed; bundler's build files go to
build/bundler-<app name>/ beside the spec (PyInstaller reuses its cache there).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import BuildError, RefusedError, SpecError
from bundler.formats.manifest import BootstrapEntry
from bundler.pack.builders.base import Builder, BuildOptions, BuiltApp
from bundler.pack.emit import fill_template, write_bootstrap
from bundler.support.progress import line_progress
from bundler.targets.registry import Platform, platform_for

if TYPE_CHECKING:
    from bundler.pack.spec_model import Spec
    from bundler.recipe.model import Recipe

MIN_PYINSTALLER = 6  # the onedir layout with a contents directory (_internal)
# The platform this builder knows so far, as a recipe names it: the child's environment
# hides its CUDA folders (CUDA_PATH*, PATH entries holding its CUDA libraries).
# PyInstaller builds for the Python running it, which pack checks is the recipe's.
BUILDS_FOR = "win-amd64"
BOOTSTRAP_MODULE = "_cudnn_bootstrap"
RUNTIME_HOOK = "pyi_rth_cudnn_bootstrap.py"
# Imported, not run in place: runtime hooks share the app's __main__ namespace,
# and the app may `import _cudnn_bootstrap` to call report().
_HOOK_TEXT = f'''"""Runtime hook written by `bundler pack`: load the bundled cuDNN runtime before
any other runtime hook or the app's own code can import a framework."""
import {BOOTSTRAP_MODULE}

del {BOOTSTRAP_MODULE}
'''
_SCRIPT_SPEC = '''# Written by `bundler pack` from app.script of {origin}: a minimal onedir build.
a = Analysis([{script!r}])
pyz = PYZ(a.pure)
exe = EXE(pyz, a.scripts, [], exclude_binaries=True, name={name!r}, console=True)
coll = COLLECT(exe, a.binaries, a.datas, name={name!r})
'''
_INFO = re.compile(r"^\d+ (INFO|DEBUG):")
_ONEFILE_HINT = ("build onedir (EXE(..., exclude_binaries=True) + COLLECT) and ship the "
                 "folder: a onefile exe would unpack the whole cuDNN runtime (hundreds of MB) "
                 "to a temporary folder on every start, and `bundler verify` could not check it")


@dataclass(frozen=True)
class BuildPlan:
    """The files that drive one PyInstaller run, all under the build folder."""

    work: Path
    app_spec: Path       # the user's PyInstaller spec, or one written for app.script
    wrapper: Path
    layout: Path         # what the wrapper saw, as JSON
    log: Path
    cwd: Path            # the user's spec's folder, or the bundler spec's for app.script
    bootstrap_sha256: str


@dataclass(frozen=True)
class FrozenApp:
    app_root: Path           # sys._MEIPASS of the built app: the runtime folder goes here
    bootstrap_sha256: str


@dataclass(frozen=True)
class FrozenLayout:
    folder: Path              # the COLLECT folder PyInstaller made
    contents_directory: str   # "_internal" (PyInstaller 6 default) or "." (flat)


def build_pyinstaller_app(spec: Spec, recipe: Recipe, staging: Path, target: Path,
                          options: BuildOptions | None = None) -> BuiltApp:
    """Build the app into `staging`; return sys._MEIPASS's folder and the bootstrap entry.
    (`target`, the final output folder, is not needed: PyInstaller writes only below
    `staging` and the build folder.)"""
    here = sysconfig.get_platform()  # "win-amd64", the naming recipes use
    if here != recipe.platform:
        raise RefusedError(f"{spec.path}: PyInstaller builds for the Python running it "
                           f"({here}: {sys.executable}); recipe {recipe.name} is for "
                           f"{recipe.platform}",
                           "run `bundler pack` with a 64-bit Windows Python (PyInstaller "
                           "cannot build for another platform)")
    frozen = freeze(spec, staging, frozenset(name.lower() for name in recipe.files))
    return BuiltApp(frozen.app_root, BootstrapEntry(
        module=BOOTSTRAP_MODULE, runtime_hook=RUNTIME_HOOK, sha256=frozen.bootstrap_sha256,
        stored="inside the executable's PYZ archive, not a file on disk"))


def freeze(spec: Spec, staging: Path, runtime_names: frozenset[str]) -> FrozenApp:
    """Run PyInstaller on the app, bootstrap first, into `staging`; no runtime yet.
    `runtime_names`: the runtime's file names (lower case), which PyInstaller must
    neither find on PATH nor collect."""
    if spec.onefile:
        raise RefusedError(f"{spec.path}: app.onefile = true is not supported", _ONEFILE_HINT)
    require_pyinstaller()
    plan = _prepare(spec)
    environ, dropped = build_environment(os.environ, runtime_names)
    dist = staging / ".pyinstaller-dist"
    _run_pyinstaller(spec, plan, dist, environ, dropped)
    layout = _read_layout(plan)
    for entry in layout.folder.iterdir():
        os.replace(entry, staging / entry.name)
    # The staging folder (mkdtemp: 0700) becomes the bundle's top folder: give it the
    # mode PyInstaller's own folder got from the umask (0755), or other users could not
    # run the app.
    shutil.copymode(layout.folder, staging)
    shutil.rmtree(dist)
    _refuse_foreign_copies(spec, staging, runtime_names)
    app_root = staging / layout.contents_directory
    if (app_root / spec.runtime_dir).exists():
        raise SpecError(f"{plan.app_spec}: the built app already has "
                        f"'{spec.runtime_dir}', where the runtime goes",
                        'set [runtime] dir = "another-name"')
    return FrozenApp(app_root=app_root, bootstrap_sha256=plan.bootstrap_sha256)


def require_pyinstaller() -> None:
    """PyInstaller is an optional extra: say how to get it, in this very Python."""
    hint = (f'install it into {sys.executable}: pip install "pyinstaller>=6" '
            "(or bundler's [pyinstaller] extra)")
    if importlib.util.find_spec("PyInstaller") is None:
        raise BuildError('PyInstaller is not installed; builder = "pyinstaller" needs it', hint)
    version = importlib.metadata.version("pyinstaller")
    if int(version.split(".")[0]) < MIN_PYINSTALLER:
        raise BuildError(f"PyInstaller {version} is too old; bundler needs "
                         f"PyInstaller >= {MIN_PYINSTALLER}", hint)


def build_environment(environ: Mapping[str, str], runtime_names: frozenset[str]
                      ) -> tuple[dict[str, str], list[str]]:
    """The child's environment: no CUDA_PATH*, and no PATH entry that is a CUDA or
    cuDNN folder. Returns it and the PATH entries it dropped."""
    cuda_roots = [value for key, value in environ.items() if _is_cuda_path_var(key)]
    env = {key: value for key, value in environ.items() if not _is_cuda_path_var(key)}
    dropped: list[str] = []
    for key in env:
        if key.upper() == "PATH":
            kept: list[str] = []
            for entry in env[key].split(os.pathsep):
                is_cuda = _is_cuda_folder(entry, cuda_roots, runtime_names)
                (dropped if is_cuda else kept).append(entry)
            env[key] = os.pathsep.join(kept)
    return env, dropped


def _target() -> Platform:
    return platform_for(BUILDS_FOR)


def _is_cuda_path_var(key: str) -> bool:
    return _target().facts().is_cuda_path_variable(key)


def _is_cuda_folder(entry: str, cuda_roots: Iterable[str], runtime_names: frozenset[str]) -> bool:
    if not entry.strip():
        return False
    folder = os.path.normcase(os.path.abspath(entry))
    for root in cuda_roots:
        root = os.path.normcase(os.path.abspath(root))
        if folder == root or folder.startswith(root.rstrip(os.sep) + os.sep):
            return True
    try:
        names = os.listdir(entry)
    except OSError:
        return False  # not a folder: it cannot hold a DLL either
    platform = _target()
    return any(platform.name_key(name) in runtime_names or platform.facts().is_cuda_library(name)
               for name in names if platform.is_library(name))


def _prepare(spec: Spec) -> BuildPlan:
    work = spec.folder / "build" / f"bundler-{spec.name}"
    hook_dir = work / "hook"
    hook_dir.mkdir(parents=True, exist_ok=True)
    # PyInstaller builds for the Python running it, which pack checked is the recipe's.
    sha256 = write_bootstrap(hook_dir / f"{BOOTSTRAP_MODULE}.py", spec.runtime_dir,
                             platform_for(sysconfig.get_platform()))
    (hook_dir / RUNTIME_HOOK).write_text(_HOOK_TEXT, encoding="utf-8")
    app_spec = _app_spec(spec, work)
    layout = work / "layout.json"
    layout.unlink(missing_ok=True)
    params = {"app_spec": str(app_spec), "app_spec_dir": str(app_spec.parent),
              "app_spec_name": app_spec.stem, "runtime_hook": str(hook_dir / RUNTIME_HOOK),
              "bootstrap_dir": str(hook_dir), "bootstrap": BOOTSTRAP_MODULE,
              "layout": str(layout)}
    wrapper = work / "bundler.spec"
    wrapper.write_text(_wrapper_text(params), encoding="utf-8")
    return BuildPlan(work=work, app_spec=app_spec, wrapper=wrapper, layout=layout,
                     log=work / "pyinstaller.log", bootstrap_sha256=sha256,
                     cwd=spec.pyinstaller_spec.parent if spec.pyinstaller_spec else spec.folder)


def _app_spec(spec: Spec, work: Path) -> Path:
    if spec.pyinstaller_spec is not None:
        if not spec.pyinstaller_spec.is_file():
            raise SpecError(f"{spec.path}: app.pyinstaller_spec {spec.pyinstaller_spec} "
                            "does not exist", "give the PyInstaller spec's path relative "
                            "to this spec")
        return spec.pyinstaller_spec
    script = spec.script
    assert script is not None  # load_spec requires script or pyinstaller_spec
    if not script.is_file():
        raise SpecError(f"{spec.path}: app.script {script} does not exist",
                        "give the entry script's path relative to this spec")
    path = work / f"{spec.name}-script.spec"
    path.write_text(_SCRIPT_SPEC.format(origin=spec.path.name, script=str(script),
                                        name=spec.name), encoding="utf-8")
    return path


def _wrapper_text(params: dict[str, str]) -> str:
    return fill_template("bundler.pack.builders", "pyinstaller_wrapper.py",
                         "PARAMS: dict = {}  # set by bundler pack", f"PARAMS: dict = {params!r}")


def _run_pyinstaller(spec: Spec, plan: BuildPlan, dist: Path, environ: dict[str, str],
                     dropped: list[str]) -> None:
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--distpath", str(dist),
               "--workpath", str(plan.work / "pyinstaller"), str(plan.wrapper)]
    lines: list[str] = []
    with open(plan.log, "w", encoding="utf-8") as log, \
            line_progress(f"PyInstaller building {spec.name}") as bar:
        log.write(f"bundler: {subprocess.list2cmdline(command)}\n"
                  f"bundler: PATH entries hidden from PyInstaller: "
                  f"{'; '.join(dropped) or 'none'}\n")
        # Run in the app spec's folder, as PyInstaller is run by hand: it resolves
        # some relative paths (runtime_hooks) against the working directory. Pipes,
        # not a file handle: under Wine a Windows Python cannot start with its
        # output redirected straight into a file.
        try:
            child = subprocess.Popen(command, cwd=plan.cwd, env=environ,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, encoding="utf-8",
                                     errors="replace")
        except OSError as exc:   # the system would not start it: say so, not "a file"
            raise BuildError(f"{plan.app_spec}: PyInstaller could not be started ({exc})",
                             f"check that {sys.executable} runs, and pack again") from None
        with child:
            assert child.stdout is not None
            for line in child.stdout:
                log.write(line)
                lines.append(line.rstrip())
                bar.update(1)
    if child.returncode != 0:
        _refuse_onefile(plan)
        tail = "\n".join(f"  {line}" for line in _errors_of(lines))
        raise BuildError(f"{plan.app_spec}: PyInstaller failed (exit {child.returncode}):\n"
                         f"{tail}", f"fix the error above and pack again; full log: {plan.log}")


def _errors_of(lines: list[str]) -> list[str]:
    """The end of PyInstaller's log without its INFO chatter (tracebacks have no level)."""
    tail = [line for line in lines[-20:] if line.strip()]
    errors = [line for line in tail if not _INFO.match(line)]
    return errors or tail


def _refuse_onefile(plan: BuildPlan) -> None:
    if plan.layout.is_file():
        names = json.loads(plan.layout.read_text(encoding="utf-8")).get("onefile", [])
        if names:
            raise RefusedError(f"{plan.app_spec}: EXE {names[0]!r} is a onefile build "
                               "(no exclude_binaries=True)", _ONEFILE_HINT)


def _read_layout(plan: BuildPlan) -> FrozenLayout:
    if not plan.layout.is_file():
        raise BuildError(f"{plan.app_spec}: the spec stopped early (PyInstaller exited "
                         "without error, but the spec never reached its end)",
                         f"remove early exits from the spec; full log: {plan.log}")
    seen = json.loads(plan.layout.read_text(encoding="utf-8"))
    if not seen["analyses"]:
        raise BuildError(f"{plan.app_spec}: the spec made no Analysis through PyInstaller's "
                         "spec names, so bundler could not add its runtime hook",
                         "call Analysis(...) as a plain PyInstaller spec does")
    if len(seen["collects"]) != 1:
        raise BuildError(f"{plan.app_spec}: the spec made {len(seen['collects'])} COLLECT "
                         "folders; bundler ships exactly one app folder",
                         "build one onedir app: one COLLECT(...) in the spec")
    collect = seen["collects"][0]
    return FrozenLayout(folder=Path(collect["folder"]),
                        contents_directory=collect["contents_directory"])


def foreign_copies(app: Path, runtime_names: frozenset[str]) -> list[str]:
    """Files in the built app named like a runtime DLL: bundler ships those itself."""
    return sorted(path.relative_to(app).as_posix() for path in app.rglob("*")
                  if path.name.lower() in runtime_names and path.is_file())


def _refuse_foreign_copies(spec: Spec, app: Path, runtime_names: frozenset[str]) -> None:
    copies = foreign_copies(app, runtime_names)
    if copies:
        raise BuildError(f"{spec.path}: PyInstaller collected {', '.join(copies)} itself; "
                         f"the runtime must be in the app once, in {spec.runtime_dir}/",
                         "remove it from the PyInstaller spec's binaries/datas, or exclude "
                         "the package that brings it (e.g. an nvidia-* wheel)")


def check_pyinstaller_keys(spec: Spec) -> None:
    """What load_spec checks of a PyInstaller spec: one script or .spec to build, and no
    app.entry (the bootstrap comes in through the first runtime hook)."""
    if spec.entry:  # it would be silently ignored: say so
        raise SpecError(f"{spec.path}: app.entry is for builder = \"folder\"; a PyInstaller "
                        "app loads the bootstrap through its first runtime hook",
                        "remove app.entry (app.script names the script to build)")
    if (spec.script is None) == (spec.pyinstaller_spec is None):
        raise SpecError(f"{spec.path}: builder = \"pyinstaller\" needs exactly one of "
                        "app.script and app.pyinstaller_spec",
                        'add script = "main.py" or pyinstaller_spec = "app.spec"')


BUILDER = Builder("pyinstaller", ("script", "pyinstaller_spec", "onefile"),
                  check_pyinstaller_keys, build_pyinstaller_app, inputs_known=False)
