"""Keeping the store small and tidy: what `bundler cache` shows and prunes, the size cap
a pack enforces (least recently used first), and the debris of killed packs."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from bundler.errors import BundlerError
from bundler.pack.lock import read_lock
from bundler.pack.store import hashed, pins
from bundler.pack.store.store import Store, StoreError, remove_read_only
from bundler.pack.up_to_date import stale_records

DEFAULT_MAX = "20G"
MAX_VARIABLE = "BUNDLER_STORE_MAX"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"(?P<number>[0-9]+(\.[0-9]*)?|\.[0-9]+)(?P<unit>[KMGT]?)")
_MAX_DIGITS = 24   # a yottabyte: more is a typo, and would overflow float()
# A file in tmp/ older than this is debris of a pack that was killed, not one running.
DEBRIS_AGE = 15 * 60


def size_cap(environ: Mapping[str, str], variable: str = MAX_VARIABLE,
             default: str = DEFAULT_MAX) -> int:
    """$BUNDLER_STORE_MAX (or another cap's `variable`) in bytes ("20G", "500M", "0" for
    no cap); StoreError if it is not a size."""
    text = (environ.get(variable) or default).strip().upper().removesuffix("B")
    # Digits only: float() would also take "inf", "nan" and "1e400", which no int holds.
    size = _SIZE.fullmatch(text)
    if size is None or len(size["number"]) > _MAX_DIGITS:
        raise StoreError(f"{variable}={environ.get(variable)!r} is not a size",
                         f"give bytes with an optional K, M, G or T: e.g. {default}, "
                         "or 0 for no cap")
    return int(float(size["number"]) * _UNITS[size["unit"]])


def trim(store: Store, cap: int, keep: frozenset[str]) -> list[str]:
    """Remove the least recently used objects (never `keep`, this pack's) until the
    store holds at most `cap` bytes (0: no cap), and the records that named them.
    Returns the sha256 of each removed object."""
    if cap <= 0:
        return []
    sizes = {path.name: path.stat().st_size for path in store.all_objects()}
    excess = sum(sizes.values()) - cap
    removed: list[str] = []
    for sha256 in sorted(set(sizes) - keep, key=store.last_used):
        if excess <= 0:
            break
        remove_read_only(store.object_path(sha256))
        (store.root / "used" / sha256).unlink(missing_ok=True)
        excess -= sizes[sha256]
        removed.append(sha256)
    if removed:
        _drop_orphan_records(store)
    return removed


def _drop_orphan_records(store: Store) -> None:
    for record_path in sorted((store.root / "sources").glob("*")):
        record = store.record(record_path.name)
        if record is None or not all(store.object_path(h).exists()
                                     for h in record.members.values()):
            record_path.unlink(missing_ok=True)
    pins.drop_orphans(store)   # a wheel's pin record too: its next pack fetches it
    # what the store knew of an object's bytes goes with the object (store/hashed.py)
    for record_path in sorted((store.root / hashed.FOLDER).glob("*/*.json")):
        if not store.object_path(record_path.stem).exists():
            record_path.unlink(missing_ok=True)


def debris(store: Store, now: float | None = None) -> list[Path]:
    """What killed packs left in tmp/ (a running pack's files are younger)."""
    folder = store.root / "tmp"
    cutoff = (time.time() if now is None else now) - DEBRIS_AGE
    return sorted(p for p in folder.iterdir() if p.lstat().st_mtime < cutoff) \
        if folder.is_dir() else []


@dataclass(frozen=True)
class PinningLock:
    lock: Path
    recipe: str
    pinned: frozenset[str]   # sha256 of the files it pins; empty if it is gone
    exists: bool


@dataclass(frozen=True)
class StoreReport:
    """What `bundler cache` shows, and what `bundler cache prune` removes."""

    root: str
    objects: int
    size: int                 # bytes, each object once
    locks: tuple[PinningLock, ...]
    unpinned: tuple[tuple[str, int], ...]   # (sha256, size) pinned by no lock here
    debris: int = 0           # bytes in tmp/ that killed packs left (prune removes them)
    removed: bool = False

    @property
    def unpinned_size(self) -> int:
        return sum(size for _, size in self.unpinned)


def examine(store: Store) -> StoreReport:
    locks = tuple(_pinning(lock, recipe) for _, lock, recipe in store.registered_locks())
    pinned = frozenset().union(*(lock.pinned for lock in locks))
    sizes = {path.name: path.stat().st_size for path in store.all_objects()}
    return StoreReport(root=str(store.root), objects=len(sizes), size=sum(sizes.values()),
                       locks=locks, unpinned=tuple((sha, size) for sha, size in
                                                   sorted(sizes.items()) if sha not in pinned),
                       debris=sum(_tree_size(p) for p in debris(store)))


def _tree_size(path: Path) -> int:
    if path.is_dir() and not path.is_symlink():
        return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_dir())
    return path.lstat().st_size


def prune(store: Store) -> StoreReport:
    """Remove every object no registered lock on this machine pins, the registrations of
    locks that are gone, the records of inputs whose files went with them and the
    up-to-date records of packs whose lock is gone."""
    report = examine(store)
    for sha256, _ in report.unpinned:
        remove_read_only(store.object_path(sha256))
    for entry, lock, _ in store.registered_locks():
        if not lock_exists(lock):
            _drop_registration(store, entry, lock)
    _drop_unfinished_registrations(store)
    _drop_orphan_records(store)
    for record in stale_records(store.root):   # "up to date" records of packs now gone
        record.unlink(missing_ok=True)
    for leftover in debris(store):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            remove_read_only(leftover)   # an object moved aside may still be a bundle's
    return replace(report, removed=True)


def lock_exists(lock: Path) -> bool:
    return lock.is_file()


def _drop_registration(store: Store, entry: Path, lock: Path) -> None:
    """Forget a lock that is gone, never a pack's registration of it made meanwhile (a
    pack registers its lock once the lock is in place; the swap of a lock may leave it
    absent for a moment): the entry is moved aside first, then the lock looked at again
    — a registration written after the move is a new file, left alone — and put back if
    the lock is there."""
    aside = store.root / "tmp" / f"lock-{entry.name}-{os.getpid()}"
    try:
        aside.parent.mkdir(exist_ok=True)
        os.replace(entry, aside)
    except OSError:
        return   # gone already, or the store is read-only: nothing pruned
    try:
        if lock_exists(lock):
            with contextlib.suppress(OSError):   # FileExistsError: registered anew
                os.link(aside, entry)
    finally:
        aside.unlink(missing_ok=True)


def _drop_unfinished_registrations(store: Store, now: float | None = None) -> None:
    """The temporary files of registrations a killed pack never finished (older than
    DEBRIS_AGE: a running pack's is being written now)."""
    cutoff = (time.time() if now is None else now) - DEBRIS_AGE
    for path in (store.root / "locks").glob(".*"):
        with contextlib.suppress(OSError):
            if path.lstat().st_mtime < cutoff:
                path.unlink()


def _pinning(lock: Path, recipe: str) -> PinningLock:
    try:
        read = read_lock(lock) if lock.is_file() else None
    except BundlerError:
        read = None   # a damaged lock pins nothing it can name; the objects stay until
        # prune, which then removes them: the next pack reads the inputs again
    return PinningLock(lock=lock, recipe=recipe, exists=lock.is_file(),
                       pinned=frozenset(read.files.values()) if read else frozenset())
