"""The app scan: which CUDA and cuDNN DLLs an app needs, read from what it ships.

Two kinds of evidence (docs/spec-format.md, "[scan]"):

- the static and delay-load imports of every PE file the app ships (.dll, .pyd, .exe,
  a bundled site-packages included): e.g. onnxruntime_providers_cuda.dll imports
  cufft64_11.dll;
- the frameworks installed in it, found by their *.dist-info / *.egg-info metadata, and
  what the framework table (bundler/windows/compat.toml) says that release loads by name
  at run time (TensorFlow 2.10 loads cufft64_10.dll, which no import table shows).

A name counts when it is a CUDA library, a cuDNN DLL, or a DLL some shipped recipe ships.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

from bundler.errors import CheckError
from bundler.library_imports import is_runtime_library
from bundler.pack.builders.folder import outputs_in
from bundler.platforms import DriverTable, FrameworkEntry, Platform, windows

_METADATA_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class Need:
    """One CUDA/cuDNN DLL the app needs, and why."""

    dll: str
    by: str      # the app file (relative, with /) or the framework ("tensorflow 2.10.1")
    how: str     # "imported by" or "loaded by"

    @property
    def reason(self) -> str:
        return f"{self.how} {self.by}"


@dataclass(frozen=True)
class Framework:
    distribution: str
    version: str
    entry: FrameworkEntry | None

    @property
    def title(self) -> str:
        return f"{self.distribution} {self.version}"


@dataclass(frozen=True)
class AppScan:
    needs: tuple[Need, ...]
    frameworks: tuple[Framework, ...]
    shipped: dict[str, str]   # lower-case DLL name -> its path in the app (relative, /)
    # every binary's imports, runtime or not: (its path in the app, the names it imports)
    imports: tuple[tuple[str, tuple[str, ...]], ...] = ()


def scan_app(root: Path, skip: str = "", platform: Platform | None = None) -> AppScan:
    """Scan the app folder `root` (an app for `platform`, by default Windows); `skip` is a
    folder inside it (relative, /) left out (the runtime folder being built)."""
    platform = platform or windows()
    compat = platform.driver_table()
    needs: list[Need] = []
    shipped: dict[str, str] = {}
    imports: list[tuple[str, tuple[str, ...]]] = []
    metadata_dirs: set[Path] = set()
    for path in sorted(_walk(root, skip)):
        relpath = path.relative_to(root).as_posix()
        if any(part.endswith(_METADATA_SUFFIXES) for part in PurePosixPath(relpath).parts):
            metadata_dirs.add(_metadata_parent(path, root))
            continue
        if not (platform.is_library(path.name)
                or platform.name_key(path.name).endswith(platform.binary_suffixes)):
            continue
        if platform.is_library(path.name):
            shipped.setdefault(platform.name_key(path.name), relpath)
        imports.append((relpath, _imports(path, platform)))
        needs += [Need(name, relpath, "imported by") for name in imports[-1][1]
                  if is_runtime_library(name, platform)]
    frameworks = _frameworks(sorted(metadata_dirs), compat)
    for framework in frameworks:
        if framework.entry is not None:
            needs += [Need(name, framework.title, "loaded by") for name in framework.entry.loads]
    return AppScan(needs=tuple(needs), frameworks=tuple(frameworks), shipped=shipped,
                   imports=tuple(imports))


def _walk(root: Path, skip: str) -> list[Path]:
    skipped = (root / skip).resolve() if skip else None
    found = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        outputs = outputs_in(here, dirs, skipped)   # the same folders the copy leaves out
        dirs[:] = [d for d in dirs if d not in outputs
                   and (skipped is None or (here / d).resolve() != skipped)]
        found += [here / f for f in files]
    return found


def _metadata_parent(path: Path, root: Path) -> Path:
    """The folder holding the *.dist-info / *.egg-info that `path` is in (or is)."""
    while path.parent != root and not path.name.endswith(_METADATA_SUFFIXES):
        path = path.parent
    return path.parent


def _imports(path: Path, platform: Platform) -> tuple[str, ...]:
    try:
        return platform.read_library(path).all_imports
    except CheckError:
        return ()   # not a binary (a data file named .dll): nothing it could load


def _frameworks(folders: list[Path], compat: DriverTable) -> list[Framework]:
    """Every distribution in the app's site-packages folders that the table knows of
    (by name), with its row for that version (None: a release the table lacks)."""
    known = {d.lower().replace("_", "-") for d in compat.framework_distributions}
    found: dict[str, Framework] = {}
    for dist in metadata.distributions(path=[str(f) for f in folders]):
        name = dist.metadata["Name"] or ""
        if name.lower().replace("_", "-") in known:
            found.setdefault(name.lower(), Framework(
                name, dist.version, compat.framework_entry(name, dist.version)))
    return [found[k] for k in sorted(found)]
