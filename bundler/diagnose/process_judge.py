"""Judge what a traced run mapped (bundler/platforms/process_trace.py) against the bundle's
manifest, by what each object is, not what it is called.

An object is a cuDNN/CUDA library when its SONAME (read from its bytes: a copy renamed
g.bin still declares libcudnn.so.9) or, without one, its file name is one by the
platform's naming; when its content is a bundled file's; or when it defines cuDNN/CUDA
API functions (an interposer under an innocent name). The driver's libraries are the
machine's. It is the bundle's only when it was mapped from the bundle folder given on
the command line, at a path the manifest lists, with the content the manifest pins, and
still there: anything else is foreign. Two objects of one library name in one process
are a library mapped twice."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bundler.diagnose.api_exports import api_names
from bundler.errors import BundlerError
from bundler.formats.manifest import FoundManifest
from bundler.platforms.library_facts import LibraryFacts
from bundler.platforms.process_trace import MappedObject, Trace, sha256_of
from bundler.targets.registry import Platform

__all__ = ["MappedModule", "Judged", "judge_trace", "library_name", "counts_by_name",
           "read_facts"]


@dataclass(frozen=True)
class MappedModule:
    """One cuDNN/CUDA object a process mapped."""

    pid: int
    name: str          # its SONAME (Linux) or file name (Windows): what a load asks for
    path: str          # as the kernel named it when it was mapped (or the process, untraced)
    from_bundle: bool
    sha256: str = ""
    deleted: bool = False
    why: str = ""      # what makes it foreign: "another file than the bundle's" ...
    exports: tuple[str, ...] = ()   # the cuDNN/CUDA API it defines, when that is why it counts


@dataclass(frozen=True)
class Judged:
    modules: tuple[MappedModule, ...]
    foreign: tuple[str, ...]      # "pid: path": the module's `why` says why
    doubled: tuple[str, ...]      # "pid: name: path, path"


class _Bundle:
    def __init__(self, found: FoundManifest, platform: Platform, tops: tuple[str, ...]
                 ) -> None:
        self.platform = platform
        self.tops = tuple(key(platform, top).rstrip("/") + "/" for top in tops)
        self.pinned = {key(platform, f.path): f.sha256.lower() for f in found.manifest.files}
        self.hashes = {f.sha256.lower() for f in found.manifest.files}
        self.sizes = {f.size for f in found.manifest.files}
        self.names = {name.rsplit("/", 1)[-1] for name in self.pinned}

    def relative(self, path: str) -> str:
        """`path`'s place in the bundle ("" outside it), exactly as named: no stripping."""
        mapped = key(self.platform, path)
        return next((mapped[len(top):] for top in self.tops if mapped.startswith(top)), "")


def key(platform: Platform, path: str) -> str:
    """A path in the form two paths are compared in (the platform's letter case)."""
    return platform.name_key(path.replace("\\", "/"))


def file_name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def read_facts(platform: Platform, path: str, readable: str = "") -> LibraryFacts | None:
    """What the library declares (its SONAME, its exports), read from its bytes through
    `readable`, else `path`; None for a file that is not one of the platform's."""
    source = readable or path
    try:
        if Path(source).is_file() and platform.is_library_file(Path(source)):
            return platform.read_library(Path(source), exports=True)
    except (BundlerError, OSError, ValueError):
        pass
    return None


def library_name(platform: Platform, path: str, facts: LibraryFacts | None) -> str:
    """The name a load asks for: the SONAME the library declares where it declares one,
    else its file name."""
    return facts.soname if facts is not None and facts.soname else file_name(path)


def counts_by_name(platform: Platform, name: str, bundled_names: set[str]) -> bool:
    """Whether a library of this name is cuDNN/CUDA by the platform's naming."""
    facts = platform.facts()
    if not platform.is_library(name) or facts.is_driver(name):
        return False
    return (facts.is_cuda_library(name) or platform.library_stem(name).startswith("cudnn")
            or platform.name_key(name) in bundled_names)


def judge_trace(found: FoundManifest, platform: Platform, trace: Trace,
                tops: tuple[str, ...]) -> Judged:
    """Every cuDNN/CUDA object any process mapped, each judged; `tops`: the bundle
    folder given on the command line, in each form a process names it (its Wine path)."""
    bundle = _Bundle(found, platform, tops)
    judged: dict[str, MappedModule | None] = {}
    modules, foreign, doubled = [], [], []
    for pid, identities in sorted(trace.mappings.items()):
        seen: list[tuple[str, MappedModule]] = []
        for identity in identities:
            obj = trace.objects[identity]
            if identity not in judged:
                judged[identity] = _judge(bundle, obj)
            module = judged[identity]
            if module is None:
                continue
            module = MappedModule(**{**module.__dict__, "pid": pid})
            seen.append((identity, module))
            modules.append(module)
            if not module.from_bundle:
                foreign.append(f"{pid}: {module.path}")
        doubled += _doubled(platform, pid, seen)
    return Judged(tuple(modules), tuple(foreign), tuple(doubled))


def _judge(bundle: _Bundle, obj: MappedObject) -> MappedModule | None:
    platform = bundle.platform
    facts = read_facts(platform, obj.path, obj.readable)   # read once, exports included
    name = library_name(platform, obj.path, facts)
    if platform.facts().is_driver(name) or platform.facts().is_driver(file_name(obj.path)):
        return None
    digest = obj.sha256 or (_sha256(obj.readable) if _size(obj.readable) in bundle.sizes
                            else "")
    exports: tuple[str, ...] = ()
    if not (counts_by_name(platform, name, bundle.names)
            or counts_by_name(platform, file_name(obj.path), bundle.names)
            or digest.lower() in bundle.hashes):
        exports = api_names(facts.exports) if facts is not None else ()
        if not exports:
            return None
    digest = digest or _sha256(obj.readable)   # hashed only when it counts: big files
    relative = bundle.relative(obj.path)
    pinned = bundle.pinned.get(relative)
    why = ""
    if not relative:
        why = "mapped from outside the bundle"
    elif pinned is None:
        why = "a file the bundle's manifest does not list"
    elif digest.lower() != pinned:
        why = "not the content the manifest pins"
    elif obj.deleted:
        why = "deleted while mapped"
    if why and exports:
        why += f"; defines {', '.join(exports)} under the name {name}"
    elif why and file_name(obj.path) != name:
        why += f"; the file declares itself {name}"
    return MappedModule(pid=0, name=name, path=obj.path, from_bundle=not why,
                        sha256=digest, deleted=obj.deleted, why=why, exports=exports)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size if path else -1
    except OSError:
        return -1


def _sha256(path: str) -> str:
    """The content's sha256; "" for a file no longer readable (then it is not the
    bundle's: nothing shows it is)."""
    try:
        return sha256_of(path) if path else ""
    except OSError:
        return ""


def _doubled(platform: Platform, pid: int, seen: list[tuple[str, MappedModule]]) -> list[str]:
    by_name: dict[str, list[tuple[str, str]]] = {}
    for identity, module in seen:
        by_name.setdefault(platform.name_key(module.name), []).append((identity, module.path))
    rows = []
    for name, objects in by_name.items():
        distinct = list(dict(objects).values())
        if len(distinct) > 1:
            rows.append(f"{pid}: {name}: {', '.join(distinct)}")
    return rows
