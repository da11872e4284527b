"""Resolve: check each staged runtime DLL and work out the order to load them in.

Checks (docs/architecture.md, "Checks at pack time"): the machine type fits the
platform, the version resource matches the recipe, every static import is bundled or
is a known Windows/driver DLL, and no DLL was built for another CUDA major.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bundler.errors import CheckError
from bundler.library_imports import MISSING, resolve_import
from bundler.manifest import FileEntry
from bundler.pack.stage import StagedFile
from bundler.platforms import LibraryFacts, Platform
from bundler.recipe import Component, Recipe


@dataclass(frozen=True)
class ResolvedRuntime:
    files: list[FileEntry]
    load_order: list[str]   # relpaths of the DLLs, dependencies first
    # source id -> what could not be checked (an era whose files bundler never saw)
    unchecked: Mapping[str, list[str]] = field(default_factory=dict)
    min_glibc: str = ""     # the newest glibc a library needs (ELF); "" if none


class LibraryReader:
    """Reads each staged library's facts on a thread of its own as soon as the file is
    staged. Parsing a PE or ELF file is Python (~0.4 s for the cuDNN 8.9 set): here it
    runs while the other files still inflate and hash (C code that lets go of the GIL)
    instead of after them. Use as a context manager."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="library-facts")
        self._started: dict[Path, Future[LibraryFacts | None]] = {}

    def start(self, item: StagedFile) -> None:
        self._started[item.path] = self._pool.submit(_library_facts, self._platform, item)

    def infos(self, staged: list[StagedFile]) -> dict[str, LibraryFacts]:
        """Each staged library's facts, by file name (one that cannot be read is left out:
        _check_all reports it under its source's name)."""
        infos = {}
        for item in staged:
            started = self._started.get(item.path)
            info = started.result() if started else _library_facts(self._platform, item)
            if info is not None:
                infos[item.file.name] = info
        return infos

    def __enter__(self) -> LibraryReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def _library_facts(platform: Platform, item: StagedFile) -> LibraryFacts | None:
    try:
        return platform.read_library(item.path) if platform.is_library_file(item.path) else None
    except CheckError:
        return None   # reported by _check_all under the source's name, not the staging path


def resolve(recipe: Recipe, components: list[Component], staged: list[StagedFile],
            origins: Mapping[str, str], reader: LibraryReader) -> ResolvedRuntime:
    """`origins` maps a source id to where it was read from, for the error message.
    `reader`: where the libraries' facts were started as the files were staged."""
    infos = reader.infos(staged)
    found = _check_all(recipe, staged, infos)
    if found:
        where = ", ".join(sorted({origins[item.file.source] for item, _ in found}))
        texts = "; ".join(problem.text for _, problem in found)
        kinds = dict.fromkeys(problem.kind for _, problem in found)
        raise CheckError(f"{where}: {texts}", "; ".join(HINTS[kind] for kind in kinds))
    files = [_bundled(s, infos.get(s.file.name)) for s in staged]
    order = load_order(recipe, components, infos)
    relpath = {s.file.name: s.relpath for s in staged}
    unchecked: dict[str, list[str]] = {}
    for item in staged:
        if item.file.cudnn_get_version and item.file.name in infos \
                and recipe.target.returned_constant(item.path, "cudnnGetVersion") is None:
            unchecked.setdefault(item.file.source, []).append(
                f"{item.file.name}'s cudnnGetVersion is code bundler cannot read: its "
                "release is not checked")
    glibc = [info.glibc for info in infos.values() if info.glibc]
    return ResolvedRuntime(files=files, load_order=[relpath[name] for name in order],
                           unchecked=unchecked,
                           min_glibc=max(glibc, key=_version_key) if glibc else "")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _bundled(staged: StagedFile, info: LibraryFacts | None) -> FileEntry:
    return FileEntry(path=staged.relpath, name=staged.file.name, size=staged.size,
                       sha256=staged.sha256, component=staged.file.component,
                       source=staged.file.source, machine=info.machine if info else "",
                       version=info.file_version if info else "")


@dataclass(frozen=True)
class Problem:
    kind: str   # a key of HINTS
    text: str


# What to do about each kind of problem, said once in the error's hint line.
HINTS = {
    "not_pe": "the file is damaged or not a DLL: get the original download again",
    "machine": "use the 64-bit (win-amd64) download of the runtime",
    "version": "the source holds another release than the recipe names: use the right one",
    "cuda_major": "use the cuDNN build for the recipe's CUDA, or a recipe for that CUDA",
    "unselected": "add the component to [runtime] components, or fix the recipe's requires",
    "unknown_import": "the source does not match the recipe: check you have the right "
                      "download, or add the DLL to the recipe",
}


def _check_all(recipe: Recipe, staged: list[StagedFile], infos: dict[str, LibraryFacts]
               ) -> list[tuple[StagedFile, Problem]]:
    platform = recipe.target
    bundled = {platform.name_key(name) for name in infos}
    found = []
    for item in staged:
        name = item.file.name
        if platform.is_library(name) and name not in infos:
            found.append((item, Problem("not_pe", f"{name} is not a valid {platform.os_name} "
                                                  f"{platform.library_word}")))
        elif name in infos:
            found += [(item, problem) for problem in _check_one(
                recipe, name, item.file.version, infos[name], bundled)]
            found += [(item, problem) for problem in _check_api_version(platform, item)]
    return found


def _check_api_version(platform: Platform, item: StagedFile) -> list[Problem]:
    """cuDNN's own number for its release, where the version resource is not it (cuDNN 7
    carries the CUDA version there): what cudnnGetVersion returns, read from its code."""
    wanted = item.file.cudnn_get_version
    if not wanted:
        return []
    found = platform.returned_constant(item.path, "cudnnGetVersion")
    if found == wanted or (found is None and item.file.cudnn_get_version_where_readable):
        return []
    said = "cannot be read" if found is None else f"returns {found}"
    return [Problem("version", f"{item.file.name}: its cudnnGetVersion {said}, the recipe "
                               f"expects {wanted}")]


def _check_one(recipe: Recipe, name: str, expected_version: str, info: LibraryFacts,
               bundled: set[str]) -> list[Problem]:
    platform = recipe.target
    if info.machine != platform.machine:
        bits = "32-bit" if info.machine == "I386" else "wrong architecture"
        # Its imports would only repeat the same story.
        return [Problem("machine", f"{name} is a {info.machine} {platform.library_word}, "
                                   f"not {platform.machine} ({bits})")]
    problems = []
    if expected_version and info.file_version != expected_version:
        problems.append(Problem("version", f"{name} has version {info.file_version or 'none'}"
                                           f", the recipe expects {expected_version}"))
    for imported in info.all_imports:
        problem = _check_import(recipe, name, imported, bundled)
        if problem:
            problems.append(problem)
    return problems


def _check_import(recipe: Recipe, name: str, imported: str, bundled: set[str]
                  ) -> Problem | None:
    platform = recipe.target
    found = resolve_import(imported, bundled, (recipe,), platform)
    if found.status != MISSING:
        return None
    majors = found.cuda_majors
    if majors and recipe.cuda_major not in majors:
        which = "/".join(map(str, majors))
        return Problem("cuda_major", f"{name} imports {imported}, a CUDA {which} library: it "
                                     f"is a build for CUDA {which}, not CUDA {recipe.cuda}")
    if found.owner is not None:
        return Problem("unselected", f"{name} imports {imported} of component "
                                     f"'{found.owner[1].component}', which is not selected")
    return Problem("unknown_import", f"{name} imports {imported}, which is neither bundled "
                                     f"nor a {platform.os_name}/driver "
                                     f"{platform.library_word}")


def load_order(recipe: Recipe, components: list[Component],
               infos: dict[str, LibraryFacts]) -> list[str]:
    """DLL names, dependencies first: static imports plus component requirements.

    Ties break by name so the order (and so the manifest) is deterministic.
    """
    key = recipe.target.name_key
    by_key = {key(name): name for name in infos}
    depends: dict[str, set[str]] = {name: set() for name in infos}
    for name, info in infos.items():
        depends[name] |= {by_key[key(i)] for i in info.all_imports
                          if key(i) in by_key and by_key[key(i)] != name}
    for component in components:
        needed = {f for req in component.requires for f in recipe.components[req].files}
        for name in component.files:
            if name in depends:
                depends[name] |= {f for f in needed if f in depends and f != name}
    return _topological(depends)


def _topological(depends: dict[str, set[str]]) -> list[str]:
    waiting = {name: set(deps) for name, deps in depends.items()}
    ready = [(name.lower(), name) for name, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for other, deps in waiting.items():
            if name in deps:
                deps.discard(name)
                if not deps:
                    heapq.heappush(ready, (other.lower(), other))
    if len(order) != len(depends):
        stuck = sorted(set(depends) - set(order))
        raise CheckError(f"the runtime DLLs depend on each other in a cycle: "
                         f"{', '.join(stuck)}", "fix the recipe's component requires")
    return order
