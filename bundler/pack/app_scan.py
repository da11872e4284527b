"""The app scan: which CUDA and cuDNN DLLs an app needs, read from what it ships.

Two kinds of evidence (docs/spec-format.md, "[scan]"):

- the static and delay-load imports of every PE file the app ships (.dll, .pyd, .exe,
  a bundled site-packages included): e.g. onnxruntime_providers_cuda.dll imports
  cufft64_11.dll;
- the library names a binary that calls a dynamic loader holds as strings: what it loads
  by name at run time (bundler/frameworks/loaded_names.py: Paddle's libpaddle.pyd loads
  cudnn64_8.dll);
- the frameworks installed in it, found by their *.dist-info / *.egg-info metadata: what
  their own build-info files say (bundler/frameworks/facts.py: the CUDA and cuDNN they are
  built for, TensorFlow's cuDNN DLL name) and what the framework table
  (bundler/windows/compat.toml) says that release loads by name at run time (TensorFlow
  2.10's GPU check loads cufft64_10.dll, which no import table shows).

A name counts when it is a CUDA library, a cuDNN DLL, or a DLL some shipped recipe ships.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath

from bundler.errors import CheckError
from bundler.frameworks.facts import (
    FrameworkFacts,
    frameworks_in,
    read_frameworks,
    refuse_unfit,
)
from bundler.frameworks.loaded_names import loaded_by_name
from bundler.pack.builders.folder import outputs_in
from bundler.recipe.library_imports import is_runtime_library
from bundler.releases.catalogue import parse_release_name
from bundler.targets.registry import (
    DriverTable,
    FrameworkEntry,
    Platform,
    platform_for_release,
)

_METADATA_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class Need:
    """One CUDA/cuDNN DLL the app needs, and why."""

    dll: str
    by: str      # the app file (relative, with /) or the framework ("tensorflow 2.10.1")
    how: str     # "imported by", "loaded by name by" (a binary), "loaded by" (the
                 # framework table's row) or "named in" (a framework's build-info file)

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
    # what each installed framework's own files (and its table row) say it needs
    framework_facts: tuple[FrameworkFacts, ...] = ()


def scan_app(root: Path, skip: str = "", *, platform: Platform,
             own: Mapping[Path, str] | None = None) -> AppScan:
    """Scan the app folder `root`, an app for `platform` (its binaries are read as that
    platform's: the recipe's, which the bundle is for); `skip` is a folder inside it
    (relative, /) left out (the runtime folder being built)."""
    compat = platform.driver_table()
    needs: list[Need] = []
    shipped: dict[str, str] = {}
    imports: list[tuple[str, tuple[str, ...]]] = []
    metadata_dirs: set[Path] = set()
    for path in sorted(_walk(root, skip, own)):
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
        if not is_runtime_library(path.name, platform):   # NVIDIA's own: the recipe's
            needs += [Need(name, relpath, "loaded by name by")
                      for name in _loaded_by_name(path, platform)]
    frameworks = _frameworks(sorted(metadata_dirs), compat)
    facts = read_frameworks(root, sorted(metadata_dirs), compat)
    needs += [Need(name, f.file, "named in") for f in facts for name in f.loads]
    for framework in frameworks:
        if framework.entry is not None:
            needs += [Need(name, framework.title, "loaded by") for name in framework.entry.loads]
    return AppScan(needs=tuple(needs), frameworks=tuple(frameworks), shipped=shipped,
                   imports=tuple(imports), framework_facts=facts)


def refuse_unfit_release(release: str, app: Path | None) -> None:
    """Pack's first check, before the recipe is rendered or any input opened: a catalogue
    release (by its name's cuDNN and CUDA) that a framework installed in `app` refuses
    stops here. Only the frameworks' metadata and build-info files are read."""
    parsed = parse_release_name(release)
    platform = platform_for_release(parsed[2]) if parsed else None
    if parsed is None or platform is None or app is None or not app.is_dir():
        return   # a recipe file: select_for_app checks it once it is read
    cudnn, cuda, suffix = parsed
    facts = frameworks_in(app, platform.driver_table(),   # an earlier pack's output: not
                          lambda here, dirs: outputs_in(here, dirs, None))   # the app's
    refuse_unfit(facts, release, cuda, cudnn, suffix)


def _walk(root: Path, skip: str, own: Mapping[Path, str] | None = None) -> list[Path]:
    skipped = (root / skip).resolve() if skip else None
    found = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        # what the copy leaves out: outputs, and bundler's own inputs, store and cache
        outputs = outputs_in(here, dirs + files, skipped, own=own)
        dirs[:] = [d for d in dirs if d not in outputs
                   and (skipped is None or (here / d).resolve() != skipped)]
        found += [here / f for f in files if f not in outputs]
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


def _loaded_by_name(path: Path, platform: Platform) -> tuple[str, ...]:
    try:
        return loaded_by_name(path, platform).names
    except OSError as exc:
        raise CheckError(f"{path}: cannot be read for the libraries it loads by name "
                         f"({exc.strerror or exc})",
                         "make the app folder readable, or set [scan] enabled = false "
                         "in the spec") from exc


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
