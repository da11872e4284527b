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

Each platform's first GPU binary is kept too (`gpu_binaries`: by its header, a library
that is, imports or loads by name a CUDA/cuDNN library of its own platform): pack
refuses an app whose GPU binaries are all another platform's than the recipe's, and
init takes the spec's platform from them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath

from bundler.errors import CheckError
from bundler.frameworks.facts import (
    FrameworkFacts,
    frameworks_in,
    read_frameworks,
    refuse_unfit,
)
from bundler.frameworks.installed import installed
from bundler.frameworks.loaded_names import (
    loaded_by_name,
    loaded_from,
    names_held,
    require_scannable,
)
from bundler.pack.builders.folder import outputs_in
from bundler.pack.scan_memo import Held, ScanMemo
from bundler.recipe.library_imports import is_runtime_library
from bundler.releases.catalogue import parse_release_name
from bundler.targets.registry import (
    DriverTable,
    FrameworkEntry,
    Platform,
    all_platforms,
    platform_for_release,
    platform_of_file,
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
class GpuBinary:
    """A binary of the app that uses CUDA or cuDNN, and the platform its header says."""

    path: str            # relative to the app, with /
    platform: Platform
    uses: str            # "imports libcudnn.so.9", "loads cudnn64_8.dll by name", "is ..."

    @property
    def described(self) -> str:
        """'app/x.so (a Linux x86-64 library that imports libcudnn.so.9)'"""
        return f"{self.path} (a {self.platform.label} {self.platform.library_word} " \
               f"that {self.uses})"


@dataclass(frozen=True)
class AppScan:
    needs: tuple[Need, ...]
    frameworks: tuple[Framework, ...]
    shipped: dict[str, str]   # lower-case DLL name -> its path in the app (relative, /)
    # every binary's imports, runtime or not: (its path in the app, the names it imports)
    imports: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # what each installed framework's own files (and its table row) say it needs
    framework_facts: tuple[FrameworkFacts, ...] = ()
    # the first GPU binary of each platform the app holds, the scan's platform's included
    gpu_binaries: tuple[GpuBinary, ...] = ()


def scan_app(root: Path, skip: str = "", *, platform: Platform,
             own: Mapping[Path, str] | None = None, memo: ScanMemo | None = None) -> AppScan:
    """Scan the app folder `root`, an app for `platform` (its binaries are read as that
    platform's: the recipe's, which the bundle is for); `skip` is a folder inside it
    (relative, /) left out (the runtime folder being built). `memo`: what earlier scans
    read from files of known sha256 (pack/scan_memo.py)."""
    compat = platform.driver_table()
    needs: list[Need] = []
    shipped: dict[str, str] = {}
    imports: list[tuple[str, tuple[str, ...]]] = []
    metadata_dirs: set[Path] = set()
    gpu: dict[str, GpuBinary] = {}   # platform name -> its first GPU binary
    for path in sorted(_walk(root, skip, own)):
        relpath = path.relative_to(root).as_posix()
        if any(part.endswith(_METADATA_SUFFIXES) for part in PurePosixPath(relpath).parts):
            metadata_dirs.add(_metadata_parent(path, root))
            continue
        if any(_binary_of(path.name, p) for p in all_platforms()):
            require_scannable(path, str(path))   # a pipe or /dev/zero: before any read
        if not _binary_of(path.name, platform):
            _note_gpu_binary(gpu, path, relpath)   # another platform's, by its name
            continue
        if platform.is_library(path.name):
            shipped.setdefault(platform.name_key(path.name), relpath)
        by_name = not is_runtime_library(path.name, platform)   # NVIDIA's own: the recipe's
        held = memo.held(relpath, platform.name, partial(_held, path, platform), by_name) \
            if memo else _held(path, platform, by_name)
        imports.append((relpath, held.imports))
        runtime = [name for name in imports[-1][1] if is_runtime_library(name, platform)]
        needs += [Need(name, relpath, "imported by") for name in runtime]
        loaded: tuple[str, ...] = ()
        if by_name and held.names is not None:
            loaded = loaded_from(held.names, platform).names
            needs += [Need(name, relpath, "loaded by name by") for name in loaded]
        uses = (f"imports {runtime[0]}" if runtime else f"loads {loaded[0]} by name"
                if loaded else f"is {path.name}" if is_runtime_library(path.name, platform)
                else "")
        if uses and platform.name not in gpu and platform.is_library_file(path):
            gpu[platform.name] = GpuBinary(relpath, platform, uses)
    frameworks = _frameworks(sorted(metadata_dirs), compat)
    facts = read_frameworks(root, sorted(metadata_dirs), compat)
    needs += [Need(name, f.file, "named in") for f in facts for name in f.loads]
    for framework in frameworks:
        if framework.entry is not None:
            needs += [Need(name, framework.title, "loaded by") for name in framework.entry.loads]
    return AppScan(needs=tuple(needs), frameworks=tuple(frameworks), shipped=shipped,
                   imports=tuple(imports), framework_facts=facts,
                   gpu_binaries=tuple(gpu.values()))


def app_gpu_binaries(root: Path) -> tuple[GpuBinary, ...]:
    """The first GPU binary of each platform in the app folder `root` (what init tells
    the app's platform by), in the order the scan meets them."""
    gpu: dict[str, GpuBinary] = {}
    for path in sorted(_walk(root, "")):
        relpath = path.relative_to(root).as_posix()
        if not any(part.endswith(_METADATA_SUFFIXES)
                   for part in PurePosixPath(relpath).parts):
            _note_gpu_binary(gpu, path, relpath)
    return tuple(gpu.values())


def _binary_of(name: str, platform: Platform) -> bool:
    """Whether the scan reads a file of this name as `platform`'s binary."""
    return platform.is_library(name) or platform.name_key(name).endswith(
        platform.binary_suffixes)


def _note_gpu_binary(gpu: dict[str, GpuBinary], path: Path, relpath: str) -> None:
    """Keep `path` in `gpu` if it is the first GPU binary of the platform its header
    says (a binary of a platform already noted is not read again)."""
    if not any(_binary_of(path.name, p) for p in all_platforms() if p.name not in gpu) \
            or not path.is_file():   # a FIFO named .so must not block the scan
        return
    try:
        platform = platform_of_file(path)
    except OSError:
        return   # unreadable: the scan of the recipe's platform says so where it matters
    if platform is None or platform.name in gpu or not _binary_of(path.name, platform):
        return
    uses = _gpu_use(path, platform)
    if uses:
        gpu[platform.name] = GpuBinary(relpath, platform, uses)


def _gpu_use(path: Path, platform: Platform) -> str:
    """How a binary of `platform` uses CUDA/cuDNN ("" if it does not)."""
    if is_runtime_library(path.name, platform):
        return f"is {path.name}"
    runtime = [n for n in _imports(path, platform) if is_runtime_library(n, platform)]
    if runtime:
        return f"imports {runtime[0]}"
    try:
        loaded = loaded_by_name(path, platform).names
    except OSError:
        return ""
    return f"loads {loaded[0]} by name" if loaded else ""


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


def _held(path: Path, platform: Platform, with_names: bool) -> Held:
    """What the scan reads from a binary: its imports, and the names it holds."""
    return Held(_imports(path, platform),
                _names_held(path, platform) if with_names else None)


def _names_held(path: Path, platform: Platform) -> tuple[bool, tuple[str, ...]]:
    try:
        return names_held(path, platform)
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
    for dist in installed(folders):
        name = dist.metadata["Name"] or ""
        if name.lower().replace("_", "-") in known:
            found.setdefault(name.lower(), Framework(
                name, dist.version, compat.framework_entry(name, dist.version)))
    return [found[k] for k in sorted(found)]
