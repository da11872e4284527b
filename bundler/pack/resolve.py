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
from bundler.formats.manifest import FileEntry
from bundler.pack.stage import StagedFile
from bundler.recipe.library_imports import MISSING, resolve_import
from bundler.recipe.load import Component, Recipe
from bundler.targets.registry import LibraryFacts, Platform


@dataclass(frozen=True)
class ResolvedRuntime:
    files: list[FileEntry]
    load_order: list[str]   # relpaths of the DLLs, dependencies first
    # source id -> what could not be checked (an era whose files bundler never saw)
    unchecked: Mapping[str, list[str]] = field(default_factory=dict)
    min_glibc: str = ""     # the newest glibc a library needs (ELF); "" if none
    # source id -> what this pack checked of the input (signatures.check_signatures)
    trust: Mapping[str, str] = field(default_factory=dict)


class LibraryReader:
    """Reads each staged library's facts on a thread of its own as soon as the file is
    staged. Parsing a PE or ELF file is Python (~0.4 s for the cuDNN 8.9 set): here it
    runs while the other files still inflate and hash (C code that lets go of the GIL)
    instead of after them. Use as a context manager."""

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="library-facts")
        self._started: dict[Path, Future[LibraryFacts | None]] = {}
        self._numbers: dict[Path, Future[int | None]] = {}

    def start(self, item: StagedFile) -> None:
        self._started[item.path] = self._pool.submit(_library_facts, self._platform, item)
        self._numbers[item.path] = self._pool.submit(_release_number_in, self._platform, item)

    def release_numbers(self, staged: list[StagedFile]) -> dict[str, int | None]:
        """What each staged library's cudnnGetVersion returns, read from its code, by
        file name (None: no such export, or code bundler cannot read)."""
        return {item.file.name: (started.result() if (started := self._numbers.get(item.path))
                                 else _release_number_in(self._platform, item))
                for item in staged}

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


def _release_number_in(platform: Platform, item: StagedFile) -> int | None:
    if not platform.is_library_file(item.path):
        return None
    return platform.returned_constant(item.path, "cudnnGetVersion")


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
    numbers = reader.release_numbers(staged)
    found = _check_all(recipe, staged, infos)
    found += _check_release_evidence(recipe, staged, infos, numbers)
    if found:
        where = ", ".join(sorted({origins[item.file.source] for item, _ in found}))
        texts = "; ".join(problem.text for _, problem in found)
        kinds = dict.fromkeys(problem.kind for _, problem in found)
        raise CheckError(f"{where}: {texts}", "; ".join(HINTS[kind] for kind in kinds))
    files = [_bundled(s, infos.get(s.file.name)) for s in staged]
    order = load_order(recipe, components, infos)
    relpath = {s.file.name: s.relpath for s in staged}
    unchecked = _without_evidence(recipe, staged, infos, numbers)
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
    # Every library staged, read or not: one that is damaged is said once, not again as
    # "not selected" for each library importing it.
    bundled = {platform.name_key(item.file.name) for item in staged}
    found = []
    for item in staged:
        name = item.file.name
        if platform.is_library(name) and name not in infos:
            found.append((item, Problem("not_pe", f"{name} is not a valid {platform.os_name} "
                                                  f"{platform.library_word}")))
        elif name in infos:
            found += [(item, problem) for problem in _check_one(
                recipe, name, item.file.version, infos[name], bundled)]
    return found


def release_number(cudnn: str) -> int:
    """What cudnnGetVersion returns for a release (CUDNN_VERSION): 7605 for 7.6.5, 8003
    for 8.0.3, 90100 for 9.1.0 (cuDNN 9 gave the minor two more digits)."""
    major, minor, patch = (int(part) for part in (cudnn.split(".") + ["0", "0"])[:3])
    return major * (10000 if major >= 9 else 1000) + minor * 100 + patch


def _is_cudnn(platform: Platform, name: str) -> bool:
    """A cuDNN library by its name (cudnn64_8.dll, cudnn_ops64_9.dll, libcudnn.so.9)."""
    return platform.name_key(name).startswith(("cudnn", "libcudnn"))


def _release_of_file_version(version: str, cudnn: str) -> str:
    """`version` where it reads as a cuDNN release of the recipe's major ("8.0.5.39" for
    8.0.3.33), else "" (NVIDIA's stale 6.14.11.6050 of cuDNN 8.0-8.9.3, the CUDA version
    cuDNN 7 carries there: no claim about the release)."""
    parts = version.split(".")
    if len(parts) < 3 or not all(part.isdigit() for part in parts):
        return ""
    return version if parts[0] == cudnn.split(".")[0] else ""


def _check_release_evidence(recipe: Recipe, staged: list[StagedFile],
                            infos: Mapping[str, LibraryFacts],
                            numbers: Mapping[str, int | None]) -> list[tuple[StagedFile, Problem]]:
    """Every readable fact about the release must agree with the recipe: what any DLL's
    cudnnGetVersion returns (the shim's included), and a FileVersion that reads as a
    cuDNN release. The recipe's own `version` and `cudnn_get_version` checks stay where
    they are given (a stale FileVersion is never compared)."""
    found = []
    for item in staged:
        name, file = item.file.name, item.file
        wanted = file.cudnn_get_version or release_number(recipe.cudnn)
        number = numbers.get(name)
        if number is None and file.cudnn_get_version and name in infos \
                and not file.cudnn_get_version_where_readable:
            found.append((item, Problem("version", f"{name}: its cudnnGetVersion cannot be "
                                                   f"read, the recipe expects {wanted}")))
        elif number is not None and number != wanted:
            found.append((item, Problem("version", f"{name}: its cudnnGetVersion returns "
                                                   f"{number}, the recipe expects {wanted}")))
        info = infos.get(name)
        said = _release_of_file_version(info.file_version, recipe.cudnn) if info else ""
        if said and not file.version and _is_cudnn(recipe.target, name) and \
                said.split(".") != recipe.cudnn.split(".")[:len(said.split("."))]:
            found.append((item, Problem("version", f"{name} has version {said}, a cuDNN "
                                                   f"release other than the recipe's "
                                                   f"{recipe.cudnn}")))
    return found


def _without_evidence(recipe: Recipe, staged: list[StagedFile],
                      infos: Mapping[str, LibraryFacts], numbers: Mapping[str, int | None]
                      ) -> dict[str, list[str]]:
    """What could not be checked, by source: a file whose cudnnGetVersion the recipe
    names but whose code bundler cannot read (an era it never saw). Absence of evidence
    is a note; evidence that disagrees is refused (_check_release_evidence)."""
    notes: dict[str, list[str]] = {}
    for item in staged:
        name = item.file.name
        if item.file.cudnn_get_version and name in infos and numbers.get(name) is None:
            notes.setdefault(item.file.source, []).append(
                f"{name}'s cudnnGetVersion is code bundler cannot read: its release is not "
                "checked")
    return notes


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
