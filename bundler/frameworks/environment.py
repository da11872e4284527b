"""The Python environment a packed app runs in, as far as "one copy in the process" goes.

Frameworks from PyPI load NVIDIA's libraries by path from the `nvidia-*` wheels of
their environment, after the bundle's bootstrap ran (the OS's `framework_opens`: JAX's
`_load_nvidia_libraries()`, onnxruntime's `preload_dlls()`, torch's and Paddle's
loaders). A library loaded by path is a second copy beside the bundle's same-named one,
so the process maps both. This module reads an environment (its frameworks that load
by path, its nvidia-* wheels and their libraries, from each wheel's installed RECORD)
and says which of those libraries a bundle also provides. Pack refuses or leaves the
wheels out (pack/one_copy.py); doctor reports them (diagnose/doctor).

Which environment (docs/spec-format.md, "One copy in the process"): the site-packages
folders inside the app (an embedded-python app's, or a folder app that carries one),
plus the one a spec names; an app with neither runs with an outside interpreter, taken
to be the one bundler runs under when the app is for this machine's platform, and
there only the frameworks the app's own scripts import count. A "preload" framework
(onnxruntime) counts where the app's scripts name its preload function.
"""

from __future__ import annotations

import ast
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath

from bundler.frameworks.installed import BoundedDistribution
from bundler.support.regular_files import read_bounded
from bundler.targets.registry import Platform, this_machine

_METADATA = ".dist-info"
_NVIDIA = "nvidia-"
_SITE_NAMES = ("site-packages", "dist-packages")
_LARGEST_SCRIPT = 4 << 20   # bytes; a bigger .py is data, not the app's imports


@dataclass(frozen=True)
class PathLoader:
    """A framework in the environment that loads NVIDIA's libraries by path."""

    distribution: str
    version: str
    opens: str      # "absolute" or "preload" (the OS TOML's framework_opens)

    @property
    def title(self) -> str:
        return f"{self.distribution} {self.version}"


@dataclass(frozen=True)
class NvidiaWheel:
    """An installed nvidia-* wheel: its libraries and every file its RECORD lists."""

    distribution: str
    version: str
    site: Path                     # the site-packages folder it is installed in
    libraries: tuple[str, ...]     # its library files, relative to `site`, with /
    files: tuple[str, ...]         # every file it installed (RECORD), relative, with /

    @property
    def title(self) -> str:
        return f"{self.distribution} {self.version}"


@dataclass(frozen=True)
class Environment:
    described: str                 # what was examined, said in the pack summary
    folders: tuple[Path, ...]
    loaders: tuple[PathLoader, ...]
    wheels: tuple[NvidiaWheel, ...]


@dataclass(frozen=True)
class SecondCopy:
    """An nvidia-* wheel holding libraries a bundle also provides (their file names)."""

    wheel: NvidiaWheel
    libraries: tuple[str, ...]


def app_environment(root: Path, platform: Platform, named: Path | None = None,
                    skip: Path | None = None) -> Environment:
    """The environment of the app in `root` (`skip`: a folder of it left out, the
    runtime being built); `named`: a site-packages folder the spec names."""
    own = site_packages_in(root, skip)
    code = AppCode(root, skip)
    parts = [_part(own, f"the app's own site-packages "
                   f"({', '.join(_shown(f, root) for f in own)})", platform, code)] \
        if own else []
    if named is not None:
        parts.append(_part((named,), f"[scan] environment {named}", platform, code))
    here = this_machine()
    if not parts and here is not None and here.name == platform.name:
        folders = interpreter_site_packages()
        parts.append(_part(folders, f"the Python bundler runs under ({sys.executable}: "
                           f"{', '.join(str(f) for f in folders) or 'no site-packages'}; "
                           "a framework counts where the app's scripts import it)", platform,
                           code, imports_count=True))
    if not parts:
        return Environment("none (the app carries no site-packages, and the Python that "
                           "runs it is not on this machine: name its site-packages with "
                           "[scan] environment)", (), (), ())
    return Environment("; ".join(p.described for p in parts),
                       tuple(f for p in parts for f in p.folders),
                       tuple(x for p in parts for x in p.loaders),
                       tuple(w for p in parts for w in p.wheels))


def read_environment(folders: Iterable[Path], platform: Platform, described: str = ""
                     ) -> Environment:
    """The frameworks and wheels in `folders`, every framework counted."""
    return _part(tuple(folders), described, platform, None)


def second_copies(environment: Environment, provided: Iterable[str], platform: Platform
                  ) -> tuple[SecondCopy, ...]:
    """Each nvidia-* wheel with libraries named like one of `provided` (a bundle's)."""
    keys = {platform.name_key(name) for name in provided}
    found = []
    for wheel in environment.wheels:
        names = sorted({PurePosixPath(lib).name for lib in wheel.libraries
                        if platform.name_key(PurePosixPath(lib).name) in keys})
        if names:
            found.append(SecondCopy(wheel, tuple(names)))
    return tuple(found)


def site_packages_in(root: Path, skip: Path | None = None) -> tuple[Path, ...]:
    """The folders inside `root` that hold a *.dist-info (where pip installed wheels)."""
    skipped = skip.resolve() if skip is not None else None
    found = []
    for folder, dirs, _ in os.walk(root):
        here = Path(folder)
        if any(d.endswith(_METADATA) for d in dirs):
            found.append(here)
        dirs[:] = sorted(d for d in dirs if not d.endswith(_METADATA) and d != "__pycache__"
                         and (skipped is None or (here / d).resolve() != skipped))
    return tuple(sorted(found))


def interpreter_site_packages() -> tuple[Path, ...]:
    """The site-packages folders on this Python's path (a venv's, the user's, the
    system's), in sys.path's order."""
    found: list[Path] = []
    for entry in sys.path:
        path = Path(entry) if entry else None
        if path is not None and path.name in _SITE_NAMES and path.is_dir() \
                and path not in found:
            found.append(path)
    return tuple(found)


class AppCode:
    """What the app's own scripts import (`import jax.numpy` -> jax) and the names they
    use (`ort.preload_dlls()` -> preload_dlls), read with ast once, when first asked;
    site-packages folders left out."""

    def __init__(self, root: Path, skip: Path | None = None) -> None:
        self.root, self.skip = root, skip

    @cached_property
    def _read(self) -> tuple[int, frozenset[str], frozenset[str]]:
        sites = set(site_packages_in(self.root, self.skip))
        skipped = self.skip.resolve() if self.skip is not None else None
        scripts, modules, names = 0, set(), set()
        for folder, dirs, files in os.walk(self.root):
            here = Path(folder)
            dirs[:] = [d for d in dirs if here / d not in sites and d != "__pycache__"
                       and (skipped is None or (here / d).resolve() != skipped)]
            for name in files:
                tree = _tree(here / name) if name.endswith(".py") else None
                if tree is not None:
                    scripts += 1
                    modules |= _imports(tree)
                    names |= {n.attr if isinstance(n, ast.Attribute) else n.id
                              for n in ast.walk(tree) if isinstance(n, ast.Attribute | ast.Name)}
        return scripts, frozenset(modules), frozenset(names)

    @property
    def modules(self) -> frozenset[str]:
        return self._read[1]

    def may_call(self, function: str) -> bool:
        """Whether the app may call `function`: it names it, or no script is readable
        (a frozen app's code is not), so it cannot be told."""
        scripts, _, names = self._read
        return not scripts or function in names


def _tree(path: Path) -> ast.AST | None:
    try:   # a pipe or a link to /dev/zero named x.py is refused, not waited on
        return ast.parse(read_bounded(path, _LARGEST_SCRIPT), str(path))
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None   # not Python this interpreter reads: it uses nothing we can see


def _imports(tree: ast.AST) -> set[str]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _part(folders: tuple[Path, ...], described: str, platform: Platform,
          code: AppCode | None, imports_count: bool = False) -> Environment:
    """One environment's frameworks and wheels. With the app's `code`: a "preload"
    framework counts where the app may call its preload function, and, where
    `imports_count`, a framework only where the app's scripts import it."""
    facts = platform.facts()
    opens = {_normal(name): how for name, how in facts.framework_opens}
    modules = {_normal(name): module for name, module in facts.framework_imports}
    calls = {_normal(name): function for name, function in facts.framework_preload}
    loaders: dict[str, PathLoader] = {}
    wheels: dict[str, NvidiaWheel] = {}
    for folder in folders:
        for info in sorted(folder.glob(f"*{_METADATA}")) if folder.is_dir() else []:
            dist = BoundedDistribution(info)
            name = dist.metadata["Name"] or ""
            key = _normal(name)
            if key in opens:
                if code is None or ((not imports_count
                                     or modules.get(key, key) in code.modules)
                                    and (key not in calls or code.may_call(calls[key]))):
                    loaders.setdefault(key, PathLoader(name, dist.version, opens[key]))
            elif key.startswith(_NVIDIA) and key not in wheels:
                files = tuple(sorted(str(f).replace(os.sep, "/") for f in dist.files or ()))
                # Present ones only: a library left out of a wheel stays in its RECORD.
                libraries = tuple(f for f in files if platform.is_library(PurePosixPath(f).name)
                                  and not f.startswith("..") and (folder / f).is_file())
                wheels[key] = NvidiaWheel(name, dist.version, folder, libraries, files)
    return Environment(described, folders, tuple(loaders[k] for k in sorted(loaders)),
                       tuple(wheels[k] for k in sorted(wheels)))


def _normal(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _shown(folder: Path, root: Path) -> str:
    return folder.relative_to(root).as_posix() if folder != root else "."
