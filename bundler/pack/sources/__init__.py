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
from bundler.pack.sources.stored_wheel import StoredWheel
from bundler.pack.sources.wheel_source import WheelSource
from bundler.pack.store import pins
from bundler.pack.store.store import Store
from bundler.recipe.load import Recipe, SourceSpec

__all__ = ["SOURCE_CLASSES", "ArchiveSource", "FolderSource", "Source", "StoredWheel",
           "WheelSource", "close_all", "given_path", "locate", "open_sources",
           "wheel_cache_folders"]


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


def _stored(spec: SourceSpec, takes: Collection[str], given: Mapping[str, tuple[str, str]],
            base: Path, environ: Mapping[str, str], store: Store | None, offline: bool
            ) -> StoredWheel | None:
    """A pinned wheel neither given nor in the wheel cache whose every member this pack
    takes the store holds (store/pins.py): taken from the store, the wheel not fetched."""
    if store is None or not can_fetch(spec) or _given(spec, given, base, environ):
        return None
    root = cache_root(environ)
    if cached(spec, root):
        return None
    record = pins.covering(store, spec.sha256, takes)
    if record is None:
        return None

    def fetch_instead() -> Source:   # the store did not prove the members after all
        if offline:
            raise offline_error([spec], root, stored=True)
        location = cached(spec, root) or fetch(spec, root)
        return WheelSource(spec, location, f"fetched with pip into {root}", takes)

    # Where the wheel would lie: absent, stamped so (a wheel fetched there later is news)
    location = root / spec.sha256 / (spec.file_name or f"{spec.package}.whl")
    return StoredWheel(spec, location, f"from the runtime store {store.root}, its wheel "
                       "not kept", takes, record, fetch_instead)


def _refuse_fetching(recipe: Recipe, takes: Mapping[str, Collection[str]],
                     given: Mapping[str, tuple[str, str]], base: Path,
                     environ: Mapping[str, str], store: Store | None) -> None:
    """--offline: name every wheel that would have to be fetched, and how to give it."""
    root = cache_root(environ)
    specs = [recipe.sources[sid] for sid in sorted(takes)]
    to_fetch = [s for s in specs if can_fetch(s) and not _given(s, given, base, environ)
                and not cached(s, root)
                and not _stored(s, takes[s.id], given, base, environ, store, True)]
    if to_fetch:
        raise offline_error(to_fetch, root)


def open_sources(recipe: Recipe, takes: Mapping[str, Collection[str]],
                 given: Mapping[str, tuple[str, str]], base: Path, environ: Mapping[str, str],
                 offline: bool = False, store: Store | None = None) -> dict[str, Source]:
    """Open each source the selected files need; `takes` maps id -> the members taken
    from it. `given` maps id -> (path, origin). `offline` refuses to fetch a pinned
    wheel that is neither given nor cached nor held by `store`."""
    needed = set(takes)
    unknown = sorted(set(given) - set(recipe.sources))
    if unknown:
        raise SourceError(f"source(s) {', '.join(unknown)} are not in recipe {recipe.name}",
                          f"the recipe's sources are: {', '.join(recipe.sources)}")
    if offline:
        _refuse_fetching(recipe, takes, given, base, environ, store)
    opened: dict[str, Source] = {}
    try:
        for sid in sorted(needed):
            spec = recipe.sources[sid]  # its kind is one of SOURCE_CLASSES: the recipe checked
            stored = _stored(spec, takes[sid], given, base, environ, store, offline)
            if stored is not None:
                opened[sid] = stored
                continue
            location, origin = locate(spec, given, base, environ)
            opened[sid] = SOURCE_CLASSES[spec.kind](spec, location, origin, takes[sid])
    except BaseException:
        close_all(opened)
        raise
    return opened


def wheel_cache_folders(sources: Mapping[str, Source], given: Mapping[str, tuple[str, str]],
                        base: Path, environ: Mapping[str, str]) -> dict[str, Path]:
    """pin -> the wheel cache's folder, for each pinned wheel this pack found there or
    fetched into it (never one the spec, --source or a variable gives)."""
    root = cache_root(environ)
    return {s.spec.sha256: root / s.spec.sha256 for s in sources.values()
            if can_fetch(s.spec) and not _given(s.spec, given, base, environ)
            and s.location.parent == root / s.spec.sha256 and s.location.is_file()}


def close_all(sources: Mapping[str, Source]) -> None:
    for source in sources.values():
        source.close()
