"""The caches bundler keeps beside the runtime store, which `bundler cache` reports and
`bundler cache prune` trims (the store itself is upkeep.py's):

- the wheel cache (`$BUNDLER_CACHE`, pack/sources/fetch.py): `<sha256>/<file>.whl`, the
  recipes' wheels pip fetched by their pin, `python/cp3X-win_amd64/`, the wheels pip
  resolved for an embedded-python app's requirements (pack/builders/pip_wheels.py), and
  `frameworks/<wheel>/`, the two files init/wheel_facts.py read of a framework's wheel;
- the embedded Python downloads, in the same folder: `<sha256>/<file>.tar.gz`, the
  embeddable CPython sdists (pack/builders/cpython_embed.py);
- the store's `zip-streams/` (zip_streams.py), the deflate streams `--zip` keeps.

What a lock on this machine names (the locks the store registered: a recipe wheel by
the sha256 of its `sources`, an app wheel by its `wheels` file name, the embeddable
CPython of its `app.python`) is never removed: a re-pack, `--offline` too, still finds
it; except, with $BUNDLER_KEEP_WHEELS=none, a recipe wheel the store holds whole
(store/pins.py), whose re-pack takes the store's files. Such wheels are counted for the
report either way: the runtime held twice. Prune removes the rest of the wheel cache
and the downloads, least recently used first, until both together fit
$BUNDLER_CACHE_MAX (default 0: remove all of it), and the zip streams beyond the
store's own cap ($BUNDLER_STORE_MAX, as a `--zip` pack does).
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from bundler.errors import BundlerError
from bundler.pack.builders.cpython_embed import KNOWN
from bundler.pack.builders.embedded_python import BUILDER as EMBEDDED_PYTHON
from bundler.pack.lock import read_lock
from bundler.pack.sources.fetch import cache_root
from bundler.pack.store import pins
from bundler.pack.store.store import Store
from bundler.pack.store.upkeep import DEBRIS_AGE, size_cap
from bundler.pack.store.zip_streams import FOLDER as STREAMS_FOLDER
from bundler.pack.store.zip_streams import StreamCache

CACHE_MAX_VARIABLE = "BUNDLER_CACHE_MAX"
DEFAULT_CACHE_MAX = "0"
_SHA256 = re.compile(r"[0-9a-f]{64}")
APP_WHEELS = "python"   # pip_wheels.wheel_cache: <cache>/python/cp3X-<tag>/
# init/wheel_facts.py: <cache>/frameworks/<wheel file name>/, what was read of a GPU
# framework's wheel (its METADATA and build-info file; the wheel is not kept)
FRAMEWORKS = "frameworks"

WHEELS = "wheels"
EMBEDDED = EMBEDDED_PYTHON.name   # the sdists that builder downloads: named after it
STREAMS = "zip-streams"


@dataclass(frozen=True)
class CacheReport:
    """One cache: where it is, what it holds, and what prune removes (or removed)."""

    name: str
    root: str
    keeps: str        # what puts files there and keeps them
    files: int
    size: int
    kept_for_locks: int   # files a lock on this machine names
    removable: tuple[tuple[str, int], ...]   # (path, bytes) prune removes
    removed: bool = False
    # recipe wheels the runtime store also holds unpacked, whole (store/pins.py): what
    # $BUNDLER_KEEP_WHEELS=none frees
    in_store: int = 0
    in_store_size: int = 0

    @property
    def removable_size(self) -> int:
        return sum(size for _, size in self.removable)


@dataclass(frozen=True)
class Named:
    """What the registered locks name in the wheel cache."""

    sha256s: frozenset[str]      # recipe wheels and embeddable CPython sdists
    app_wheels: frozenset[str]   # app wheels' file names


def named_by_locks(store: Store | None) -> Named:
    sha256s: set[str] = set()
    app_wheels: set[str] = set()
    for _, path, _ in store.registered_locks() if store else []:
        try:
            lock = read_lock(path) if path.is_file() else None
        except BundlerError:
            lock = None   # a damaged lock names nothing it can be read for
        if lock is None:
            continue
        sha256s.update(pins.sha256 for pins in lock.sources.values())
        app = (lock.spec or {}).get("app", {})
        embed = KNOWN.get(str(app.get("python", ""))) if isinstance(app, dict) else None
        if embed is not None:
            sha256s.add(embed.sha256)
        app_wheels.update(pins.file for pins in (lock.wheels or {}).values())
    return Named(frozenset(sha256s), frozenset(app_wheels))


@dataclass(frozen=True)
class _Entry:
    path: Path
    size: int
    files: int
    used: float      # modification time: when it was fetched or last kept
    named: bool
    cache: str       # WHEELS or EMBEDDED


def _entries(root: Path, named: Named, now: float) -> list[_Entry]:
    entries = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if _SHA256.fullmatch(folder.name) and folder.is_dir():
            files = [p for p in folder.iterdir() if p.is_file()]
            cache = EMBEDDED if any(p.name.endswith(".tar.gz") for p in files) else WHEELS
            entries.append(_Entry(folder, sum(p.stat().st_size for p in files), len(files),
                                  folder.stat().st_mtime, folder.name in named.sha256s, cache))
        elif folder.name == FRAMEWORKS and folder.is_dir():   # small; never lock-named
            entries += [_Entry(read, _tree_size(read), sum(1 for _ in _files(read)),
                               read.stat().st_mtime, False, WHEELS)
                        for read in sorted(folder.iterdir()) if read.is_dir()]
        elif folder.name == APP_WHEELS and folder.is_dir():
            entries += [_Entry(wheel, wheel.stat().st_size, 1, wheel.stat().st_mtime,
                               wheel.name in named.app_wheels, WHEELS)
                        for wheel in sorted(folder.glob("*/*.whl"))]
        elif folder.name.startswith(".download-") and folder.stat().st_mtime < now - DEBRIS_AGE:
            # what a killed fetch left: never named, removed first
            entries.append(_Entry(folder, _tree_size(folder), sum(1 for _ in _files(folder)),
                                  0.0, False, WHEELS))
    return entries


def _files(folder: Path) -> Iterable[Path]:
    return (p for p in folder.rglob("*") if p.is_file())


def _tree_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in _files(folder))


def examine_caches(store: Store | None, environ: Mapping[str, str],
                   now: float | None = None) -> list[CacheReport]:
    """The wheel cache, the embedded Python downloads and the zip streams, each with
    what prune would remove."""
    root = cache_root(environ)
    entries = _entries(root, named_by_locks(store), time.time() if now is None else now)
    held = [e for e in entries if store is not None and e.cache == WHEELS and
            e.path.parent == root and pins.held_whole(store, e.path.name)]
    # Held whole by the store, a wheel is the runtime's second copy: with
    # $BUNDLER_KEEP_WHEELS=none it goes, named by a lock or not (--offline takes the store's)
    removable = [] if pins.keep_wheels(environ) else list(held)
    cap = size_cap(environ, CACHE_MAX_VARIABLE, DEFAULT_CACHE_MAX)
    excess = sum(e.size for e in entries if e not in removable) - cap if cap else None
    for entry in sorted((e for e in entries if not e.named and e not in removable),
                        key=lambda e: e.used):
        if excess is not None and excess <= 0:
            break
        removable.append(entry)
        excess = None if excess is None else excess - entry.size
    reports = []
    for name, keeps in ((WHEELS, "the recipes' wheels pip fetched by their pin, the "
                         "wheels pip resolved for embedded-python apps (python/), and what "
                         "recipes --for and init read of framework wheels (frameworks/)"),
                        (EMBEDDED, "the embeddable CPython sdists embedded-python packs "
                         "fetched")):
        mine = [e for e in entries if e.cache == name]
        reports.append(CacheReport(
            name, str(root), keeps, sum(e.files for e in mine), sum(e.size for e in mine),
            sum(e.files for e in mine if e.named),
            tuple((str(e.path), e.size) for e in removable if e.cache == name),
            in_store=sum(1 for e in held if e.cache == name),
            in_store_size=sum(e.size for e in held if e.cache == name)))
    if store is not None:
        reports.append(_streams(store, environ))
    return reports


def _streams(store: Store, environ: Mapping[str, str]) -> CacheReport:
    folder = store.root / STREAMS_FOLDER
    streams = [p for p in folder.glob("*/*") if p.is_file()] if folder.is_dir() else []
    over = StreamCache(store.root, b"", "", size_cap(environ)).overflow(frozenset())
    return CacheReport(STREAMS, str(folder), "the deflate streams --zip packs compressed, "
                       "for the next zip", len(streams), sum(p.stat().st_size for p in streams),
                       0, tuple((key, size) for key, size in over))


def prune_caches(store: Store | None, environ: Mapping[str, str]) -> list[CacheReport]:
    """Remove what examine_caches names as removable; the reports, marked removed."""
    reports = examine_caches(store, environ)
    for report in reports:
        if report.name == STREAMS and store is not None:
            streams = StreamCache(store.root, b"", "", size_cap(environ))
            for key, _ in report.removable:
                streams.drop(key)
            streams.drop_orphans()   # records of streams deleted by hand
            continue
        for path, _ in report.removable:
            target = Path(path)
            if target.is_dir():
                shutil.rmtree(target, ignore_errors=True)
            else:
                target.unlink(missing_ok=True)
    return [replace(report, removed=True) for report in reports]
