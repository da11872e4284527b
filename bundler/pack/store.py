"""The runtime store: one file per sha256, shared by every bundle on this machine.

Layout under the store root ($BUNDLER_STORE, default ~/.cache/bundler/store):

    objects/ab/<sha256>      a runtime file, read-only; bundles hard-link to it
    sources/<fingerprint>    JSON: which input a fingerprint proved, and the sha256 of
                             each member a pack took from it (docs/store.md)
    locks/<sha256 of path>   JSON: a lock file on this machine that pins objects
    tmp/                     files being added; renamed into place when complete

Every write is a complete temporary file renamed into place, so two packs filling the
same entry at once each see either no entry or a whole one. An object is re-hashed
each time a pack takes it: a damaged entry is dropped and the input read again, never
shipped.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import BundlerError
from bundler.pack.lock import read_lock
from bundler.support.hashing import sha256_file
from bundler.support.json_files import json_bytes, read_json

STORE_VARIABLE = "BUNDLER_STORE"
DEFAULT_STORE = "~/.cache/bundler/store"
DISABLED = "off"
_MAX_RECORD_BYTES = 4 << 20


class StoreError(BundlerError):
    """The store cannot be used as asked (not a folder, unreadable)."""


@dataclass(frozen=True)
class SourceRecord:
    """What a cold pack learned about an input: its identity (the lock's sha256 of it)
    and the sha256 of each member it took. Keyed in the store by the input's
    fingerprint (see Source.fingerprint)."""

    identity: str
    members: dict[str, str]


def store_root(environ: Mapping[str, str]) -> Path | None:
    """The store's folder, or None when $BUNDLER_STORE is "off"."""
    value = environ.get(STORE_VARIABLE) or DEFAULT_STORE
    return None if value == DISABLED else Path(os.path.expanduser(value))


class Store:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.objects = root / "objects"
        self._tmp = root / "tmp"

    # ------------------------------------------------------------------- objects

    def object_path(self, sha256: str) -> Path:
        return self.objects / sha256[:2] / sha256

    def checked_object(self, sha256: str) -> Path | None:
        """The object for `sha256` if it is there and its bytes still hash to it; a
        damaged one (truncated, a byte changed) is removed."""
        path = self.object_path(sha256)
        try:
            if sha256_file(path, f"checking stored {sha256[:12]}") == sha256:
                return path
        except OSError:
            return None
        self.discard(sha256)
        return None

    def discard(self, sha256: str) -> None:
        """Remove a damaged object: the next pack that needs it reads its input again."""
        _remove(self.object_path(sha256))

    def add(self, path: Path, sha256: str, copy: bool = False) -> None:
        """Make `path` (hashed by the caller to `sha256`) the store's object for it:
        hard-linked (the file and the object become one, read-only) unless `copy` or
        the store is on another volume. Nothing is added if the object exists."""
        target = self.object_path(sha256)
        if target.exists():
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix="add-", dir=self._tmp)) / sha256
        try:
            if copy or not _try_link(path, temporary):
                shutil.copyfile(path, temporary)
            _make_read_only(temporary)
            with contextlib.suppress(FileExistsError):   # another pack added it first
                os.link(temporary, target)
        finally:
            shutil.rmtree(temporary.parent, ignore_errors=True)

    # ------------------------------------------------------------------- records

    def record(self, fingerprint: str) -> SourceRecord | None:
        path = self.root / "sources" / fingerprint
        if not path.is_file():
            return None
        try:
            data = read_json(path, _MAX_RECORD_BYTES, StoreError, "")
            members = data["members"]
            if isinstance(data["identity"], str) and all(
                    isinstance(k, str) and isinstance(v, str) for k, v in members.items()):
                return SourceRecord(data["identity"], dict(members))
        except (StoreError, KeyError, TypeError, AttributeError):
            pass
        return None   # a damaged record only costs a cold read

    def remember(self, fingerprint: str, record: SourceRecord) -> None:
        """Record (or extend) what a fingerprint proves."""
        known = self.record(fingerprint)
        members = dict(known.members) if known and known.identity == record.identity else {}
        members.update(record.members)
        self._write(self.root / "sources" / fingerprint,
                    {"identity": record.identity, "members": members})

    def signature_verdict(self, sha256: str, trust_key: str) -> dict[str, str] | None:
        """A signature check of the object `sha256` against a trust (`trust_key`) that
        passed before: the check is a function of the bytes and the pinned roots only
        (a timestamped signature does not expire), so it need not run again."""
        path = self.root / "signatures" / sha256
        try:
            verdict = read_json(path, _MAX_RECORD_BYTES, StoreError, "").get(trust_key)
        except (StoreError, AttributeError):
            return None
        if isinstance(verdict, dict) and all(isinstance(v, str) for v in verdict.values()):
            return verdict
        return None

    def remember_signature(self, sha256: str, trust_key: str, verdict: dict[str, str]
                           ) -> None:
        path = self.root / "signatures" / sha256
        try:
            known = read_json(path, _MAX_RECORD_BYTES, StoreError, "")
        except StoreError:
            known = {}
        self._write(path, {**(known if isinstance(known, dict) else {}),
                           trust_key: verdict})

    def register_lock(self, lock_path: Path, recipe: str) -> None:
        """Remember a lock on this machine: `bundler cache prune` keeps what it pins."""
        key = _path_key(lock_path)
        self._write(self.root / "locks" / key, {"lock": str(lock_path), "recipe": recipe})

    def registered_locks(self) -> list[tuple[Path, Path, str]]:
        """(registration file, lock path, recipe) for each lock a pack registered."""
        found = []
        for entry in sorted((self.root / "locks").glob("*")):
            try:
                data = read_json(entry, _MAX_RECORD_BYTES, StoreError, "")
                found.append((entry, Path(data["lock"]), str(data.get("recipe", ""))))
            except (StoreError, KeyError, TypeError):
                found.append((entry, Path(), ""))
        return found

    def all_objects(self) -> Iterable[Path]:
        return sorted(self.objects.glob("*/*")) if self.objects.is_dir() else []

    def _write(self, path: Path, data: object) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(json_bytes(data))
        os.replace(temporary, path)


def open_store(environ: Mapping[str, str]) -> Store | None:
    root = store_root(environ)
    if root is None:
        return None
    if root.exists() and not root.is_dir():
        raise StoreError(f"{root}: the runtime store is not a folder",
                         f"set {STORE_VARIABLE} to a folder, or to '{DISABLED}'")
    return Store(root)


def place(origin: Path, target: Path, copy: bool) -> bool:
    """Put `origin`'s bytes at `target`: a hard link unless `copy` (or the two are on
    different volumes, or the file system has no links). True if linked."""
    if not copy and _try_link(origin, target):
        return True
    shutil.copyfile(origin, target)
    return False


def _try_link(origin: Path, target: Path) -> bool:
    try:
        os.link(origin, target)
        return True
    except OSError:
        return False   # another volume (EXDEV), FAT, too many links: copy instead


def _make_read_only(path: Path) -> None:
    """Shared by every bundle that links it: a write through one would change all."""
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _remove(path: Path) -> None:
    try:
        path.chmod(stat.S_IWUSR | stat.S_IRUSR)
        path.unlink()
    except OSError:
        pass


def _path_key(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass")).hexdigest()


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
                                                   sorted(sizes.items()) if sha not in pinned))


def prune(store: Store) -> StoreReport:
    """Remove every object no registered lock on this machine pins, the registrations of
    locks that are gone, and the records of inputs whose files went with them."""
    report = examine(store)
    for sha256, _ in report.unpinned:
        _remove(store.object_path(sha256))
    for entry, lock, _ in store.registered_locks():
        if not lock.is_file():
            entry.unlink(missing_ok=True)
    for record_path in sorted((store.root / "sources").glob("*")):
        record = store.record(record_path.name)
        if record is None or not all(store.object_path(h).exists()
                                     for h in record.members.values()):
            record_path.unlink(missing_ok=True)
    return StoreReport(report.root, report.objects, report.size, report.locks,
                       report.unpinned, removed=True)


def _pinning(lock: Path, recipe: str) -> PinningLock:
    try:
        read = read_lock(lock) if lock.is_file() else None
    except BundlerError:
        read = None   # a damaged lock pins nothing it can name; the objects stay until
        # prune, which then removes them: the next pack reads the inputs again
    return PinningLock(lock=lock, recipe=recipe, exists=lock.is_file(),
                       pinned=frozenset(read.files.values()) if read else frozenset())
