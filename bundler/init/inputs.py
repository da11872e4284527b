"""`bundler init`: where this machine keeps a recipe's inputs, for the spec's [sources].

Each source the chosen components use is looked for, in this order: a path given to
init (`--source ID=PATH`); in the project (the spec's folder and its subfolders, a few
levels deep): a zip or wheel holding the source's members, a folder holding them; then
the places `bundler pack` looks itself (the recipe's environment variables, the wheel
cache, pip), which need no line in the spec; last, the folders beside the spec's (a
sibling checkout, a shared downloads or temp folder: anyone may have put a file there),
written with a comment and a warning that say it lies outside the project. What is
found nowhere is left as a comment saying what to give. The cuDNN wheels and zips found
in the project (by NVIDIA's file names) and the pinned wheels in the wheel cache also
name their releases, which init/choice.py prefers; those beside the project do not.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources.fetch import cache_root, cached, cached_file, can_fetch
from bundler.recipe.load import Recipe, SourceSpec
from bundler.recipe.model import WHEEL
from bundler.releases.catalogue import Release, catalogue_releases

MAX_DEPTH = 4          # folders below the spec's folder searched for inputs
MAX_ENTRIES = 20_000   # a spec beside a huge tree (a home folder) must not stall init
_SKIPPED = {"__pycache__", "node_modules", "dist", "build", "site-packages"}
OUTSIDE = "OUTSIDE THE PROJECT"   # the mark of an input found beside the project


@dataclass(frozen=True)
class FoundInput:
    """One source of the recipe: a path to write into [sources] (or None), and a note."""

    source: SourceSpec
    path: Path | None
    note: str
    example: str = ""   # a commented-out line to fill in, where no path is written
    outside: bool = False   # found beside the project, not in it: said loudly


@dataclass(frozen=True)
class Nearby:
    """Zips, wheels and folders beside the app: below the spec's folder first, then
    below the folder it lies in."""

    archives: tuple[Path, ...]   # *.zip and *.whl
    folders: tuple[Path, ...]
    project: Path = Path("/")    # the spec's folder: what lies elsewhere is not the project's

    def outside(self, path: Path) -> bool:
        return self.project != path and self.project not in path.parents


@dataclass(frozen=True)
class ReleaseInput:
    """A cuDNN release's own input found on this machine, which names the release."""

    release: Release
    path: Path
    where: str   # "in the project", "in the wheel cache"


def find_inputs(recipe: Recipe, source_ids: list[str], nearby: Nearby,
                given: Mapping[str, Path], environ: Mapping[str, str]) -> list[FoundInput]:
    for sid, path in given.items():
        if sid not in recipe.sources:
            raise SourceError(f"--source {sid}={path}: recipe {recipe.name} has no source "
                              f"'{sid}'", f"its sources: {', '.join(recipe.sources)}")
        if not path.exists():
            raise SourceError(f"{path}: no such file or folder (--source {sid})",
                              "give the path of the input on this machine")
    cuda = ".".join(recipe.cuda.split(".")[:2])   # the toolkit's folder: v10.1
    # A source given on the command line is written even where no chosen component
    # uses it yet: the user said it is theirs (pack opens only the ones it needs).
    wanted = [sid for sid in recipe.sources if sid in source_ids or sid in given]
    return [_find(recipe.sources[sid], nearby, given, environ, cuda) for sid in wanted]


def _find(spec: SourceSpec, nearby: Nearby, given: Mapping[str, Path],
          environ: Mapping[str, str], cuda: str) -> FoundInput:
    if spec.id in given:
        return FoundInput(spec, given[spec.id], "given to bundler init")
    found = _match(spec, nearby, inside=True)
    if found is not None:
        return FoundInput(spec, found, "found in the project: it holds the files the "
                          f"recipe takes from {_what(spec)}")
    for variable in spec.env:
        if environ.get(variable):
            return FoundInput(spec, None, f"{_what(spec)}: pack takes it from {variable} "
                              f"({environ[variable]}) as it does now")
    if can_fetch(spec):
        in_cache = cached(spec, cache_root(environ))
        where = (f"is in the wheel cache ({in_cache}): pack uses it" if in_cache else
                 "pack fetches it with pip into the wheel cache (--offline refuses to)")
        return FoundInput(spec, None, f"{_what(spec)}: {where}; or give a wheel you "
                          "downloaded:", _example(spec, cuda))
    found = _match(spec, nearby, inside=False)
    if found is not None:
        return FoundInput(spec, found, f"{OUTSIDE}: found in {found.parent}, beside the "
                          f"project's folder, not in it (it holds the files the recipe "
                          f"takes from {_what(spec)}); anyone who can write there chose "
                          "this file: check it is the one you mean, or move it into the "
                          "project", outside=True)
    found_by = f" (or set {' or '.join(spec.env)})" if spec.env else ""
    return FoundInput(spec, None, f"TO DECIDE: {_what(spec)} was not found beside the "
                      f"app: give its path here{found_by}, e.g.", _example(spec, cuda))


def _what(spec: SourceSpec) -> str:
    return spec.source_kind.described(spec)


def _example(spec: SourceSpec, cuda: str) -> str:
    return spec.source_kind.example(spec, cuda)


def nearby(spec_folder: Path, app: Path) -> Nearby:
    """Zips, wheels and folders below the spec's folder, then below its parent (the
    examples' stand-ins lie in ../quickstart; a shared downloads folder beside the
    project), never inside the app, hidden, nor bundles and caches."""
    spec_folder, app = spec_folder.resolve(), app.resolve()
    archives, folders = _walk(spec_folder, {app})
    if spec_folder.parent != spec_folder:
        more = _walk(spec_folder.parent, {app, spec_folder})
        archives, folders = archives + more[0], folders + more[1]
    return Nearby(tuple(archives), tuple(folders), spec_folder)


def _resolved(path: Path) -> Path | None:
    """The folder's real path; None for a link loop (a folder beside the spec's may hold
    anything: init must not stop on it)."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return None


def _walk(root: Path, skip: set[Path]) -> tuple[list[Path], list[Path]]:
    """Breadth-first below `root`, at most MAX_DEPTH deep and MAX_ENTRIES seen."""
    archives: list[Path] = []
    folders: list[Path] = []
    level, seen = [root], 0
    for _ in range(MAX_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue   # unreadable: nothing of it can be an input the user meant
            for entry in entries[:MAX_ENTRIES - seen]:
                seen += 1
                path = Path(entry.path)
                if entry.name.startswith(".") or entry.name in _SKIPPED:
                    continue
                try:
                    is_dir, is_file = entry.is_dir(), entry.is_file()
                except OSError:   # a link loop, a folder gone: not an input
                    continue
                if is_dir and _resolved(path) not in skip:
                    below.append(path)
                    folders.append(path)
                elif is_file and entry.name.lower().endswith((".zip", ".whl")):
                    archives.append(path)
        level = below
    return archives, folders


def release_inputs(found: Nearby, release_suffix: str,
                   environ: Mapping[str, str]) -> list[ReleaseInput]:
    """The releases (of this platform) whose cuDNN wheel or zip lies in the project, by
    NVIDIA's file name, then those whose pinned cuDNN wheel is in the wheel cache (a
    pack of it ran here): each once, the project's first."""
    releases = [r for r in catalogue_releases() if r.platform == release_suffix
                and not (r.wheel is not None and r.wheel.yanked)]
    by_file: dict[str, Release] = {}
    for release in releases:
        names = [release.wheel.file_name] if release.wheel else []
        names += [name for archive in release.archives
                  for name in (archive.file_name, *archive.also_named)]
        for name in names:
            by_file.setdefault(name.lower(), release)
    # Only the project's: a zip in a folder beside it must not choose the release.
    inputs = [ReleaseInput(by_file[path.name.lower()], path, "in the project")
              for path in found.archives
              if path.name.lower() in by_file and not found.outside(path)]
    root = cache_root(environ)
    for release in releases:
        cached_wheel = cached_file(root, release.wheel.sha256, "*.whl") \
            if release.wheel else None
        if cached_wheel is not None:
            inputs.append(ReleaseInput(release, cached_wheel, "in the wheel cache"))
    kept: dict[str, ReleaseInput] = {}
    for item in inputs:
        kept.setdefault(item.release.name, item)
    return list(kept.values())


def _match(spec: SourceSpec, nearby: Nearby, inside: bool) -> Path | None:
    """The first input in the project (`inside`), else beside it, that holds every
    member the source must have."""
    if spec.source_kind.one_file:   # a zip or a wheel among the archives found
        prefix = f"{spec.root}/" if spec.root else ""
        wanted = {prefix + member for member in spec.contents}
        for path in nearby.archives:
            if nearby.outside(path) == inside:
                continue
            if spec.source_kind is WHEEL and path.name != spec.file_name:
                continue   # a pinned wheel has one name; others are not it
            if wanted <= _members(path):
                return path
        return None
    return next((folder for folder in nearby.folders if nearby.outside(folder) != inside
                 and all((folder / member).is_file() for member in spec.contents)), None)


def _members(path: Path) -> set[str]:
    try:
        with zipfile.ZipFile(path) as archive:   # the central directory only
            return set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return set()
