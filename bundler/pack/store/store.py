"""The runtime store: one file per sha256, shared by every bundle on this machine.

Layout under the store root ($BUNDLER_STORE, default the platform's cache folder's
bundler/store: ~/.cache/bundler/store on Linux):

    objects/ab/<sha256>      a runtime file, read-only; bundles hard-link to it
    sources/<fingerprint>    JSON: which input a fingerprint proved, and the sha256 of
                             each member a pack took from it (docs/store.md), sealed
                             with the store's key (store/seal.py)
    signatures/<sha256>      JSON: signature checks that passed for an object, sealed
    used/<sha256>            empty; its modification time is the object's last use
    locks/<sha256 of path>   JSON: a lock file on this machine that pins objects
    tmp/                     files being added; renamed into place when complete

Every write is a complete temporary file renamed into place, so two packs filling the
same entry at once each see either no entry or a whole one. An object is re-hashed
each time a pack takes it: a damaged entry is dropped and the input read again, never
shipped.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import BundlerError
from bundler.pack.store.seal import StoreKeyError, seal, store_key, unseal
from bundler.pack.store.trust import (
    Untrusted,
    check_tree,
    make_folder,
    make_top_folders,
    write_record,
)
from bundler.support.hashing import sha256_file
from bundler.support.json_files import read_json
from bundler.support.user_dirs import user_cache_dir

STORE_VARIABLE = "BUNDLER_STORE"
DISABLED = "off"
_MAX_RECORD_BYTES = 4 << 20
_STATS_KEPT = 8   # copies of one input (apps with their own copy) proven without re-hashing


class StoreError(BundlerError):
    """The store cannot be used as asked (not a folder, unreadable)."""


@dataclass(frozen=True)
class SourceRecord:
    """What a cold pack learned about an input: its identity (the lock's sha256 of it)
    and the sha256 of each member it took. Keyed in the store by the input's
    fingerprint (see Source.fingerprint)."""

    identity: str
    members: dict[str, str]
    # The input files' size, times and file id when their identity was last proven by
    # hashing them, newest first (none for a folder: its fingerprint covers every write).
    input_stats: tuple[str, ...] = ()


def store_root(environ: Mapping[str, str]) -> Path | None:
    """The store's folder, or None when $BUNDLER_STORE is "off"."""
    value = environ.get(STORE_VARIABLE, "")
    if value == DISABLED:
        return None
    return Path(os.path.expanduser(value)) if value else user_cache_dir(environ) / "store"


class Store:
    def __init__(self, root: Path, key: bytes) -> None:
        self.root = root
        self.objects = root / "objects"
        self._tmp = root / "tmp"
        self._key = key

    @property
    def key(self) -> bytes:
        """The key its records are sealed with (store/seal.py)."""
        return self._key

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

    def mark_used(self, sha256: str) -> None:
        """Note that a pack used the object now (what the size cap keeps longest). A
        marker beside it, not the object's own times: bundles share its inode."""
        marker = self.root / "used" / sha256
        make_folder(marker.parent)
        marker.touch(mode=0o644)   # never group-writable, whatever the umask

    def last_used(self, sha256: str) -> float:
        for path in (self.root / "used" / sha256, self.object_path(sha256)):
            with contextlib.suppress(OSError):
                return path.stat().st_mtime
        return 0.0

    def discard(self, sha256: str) -> None:
        """Remove a damaged object: the next pack that needs it reads its input again."""
        remove_read_only(self.object_path(sha256))

    def add(self, path: Path, sha256: str, copy: bool = False) -> None:
        """Make `path` (hashed by the caller to `sha256`) the store's object for it:
        hard-linked (the file and the object become one, read-only) unless `copy` or
        the store is on another volume. Nothing is added if the object exists."""
        target = self.object_path(sha256)
        self.mark_used(sha256)
        if target.exists():
            return
        make_folder(target.parent)
        make_folder(self._tmp)
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
        """What an earlier pack of this machine's user proved, if its seal holds."""
        body = self._unsealed("source", fingerprint, self.root / "sources" / fingerprint)
        if not isinstance(body, dict):
            return None
        identity, members = body.get("identity"), body.get("members")
        stats = body.get("input_stats", [])
        if isinstance(identity, str) and isinstance(members, dict) and \
                isinstance(stats, list) and all(isinstance(s, str) for s in stats) and all(
                    isinstance(k, str) and isinstance(v, str) for k, v in members.items()):
            return SourceRecord(identity, dict(members), tuple(stats))
        return None   # a damaged record only costs a cold read

    def remember(self, fingerprint: str, record: SourceRecord) -> None:
        """Record (or extend) what a fingerprint proves."""
        known = self.record(fingerprint)
        same = known is not None and known.identity == record.identity
        members = dict(known.members) if known and same else {}
        members.update(record.members)
        stats = [*record.input_stats, *(known.input_stats if known and same else ())]
        body = {"identity": record.identity, "members": members,
                "input_stats": list(dict.fromkeys(stats))[:_STATS_KEPT]}
        self._write(self.root / "sources" / fingerprint,
                    seal(self._key, "source", fingerprint, body))

    def forget(self, fingerprint: str) -> None:
        """Drop a record the input contradicts."""
        (self.root / "sources" / fingerprint).unlink(missing_ok=True)

    def signature_verdict(self, sha256: str, trust_key: str) -> dict[str, str] | None:
        """A signature check of the object `sha256` against a trust (`trust_key`) that
        passed before: the check is a function of the bytes and the pinned roots only
        (a timestamped signature does not expire), so it need not run again."""
        path = self.root / "signatures" / sha256
        try:
            entry = read_json(path, _MAX_RECORD_BYTES, StoreError, "").get(trust_key)
        except (StoreError, AttributeError):
            return None
        verdict = unseal(self._key, "signature", f"{sha256}\0{trust_key}", entry)
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
        sealed = seal(self._key, "signature", f"{sha256}\0{trust_key}", verdict)
        self._write(path, {**(known if isinstance(known, dict) else {}), trust_key: sealed})

    def _unsealed(self, kind: str, name: str, path: Path) -> object | None:
        if not path.is_file():
            return None
        try:
            return unseal(self._key, kind, name,
                          read_json(path, _MAX_RECORD_BYTES, StoreError, ""))
        except StoreError:
            return None

    def register_lock(self, lock_path: Path, recipe: str) -> None:
        """Remember a lock on this machine: `bundler cache prune` keeps what it pins."""
        key = _path_key(lock_path)
        self._write(self.root / "locks" / key, {"lock": str(lock_path), "recipe": recipe})

    def registered_locks(self) -> list[tuple[Path, Path, str]]:
        """(registration file, lock path, recipe) for each lock a pack registered."""
        found = []
        for entry in sorted((self.root / "locks").glob("*")):
            if entry.name.startswith("."):
                continue   # a registration being written (_write's temporary file)
            try:
                data = read_json(entry, _MAX_RECORD_BYTES, StoreError, "")
                found.append((entry, Path(data["lock"]), str(data.get("recipe", ""))))
            except (StoreError, KeyError, TypeError):
                found.append((entry, Path(), ""))
        return found

    def all_objects(self) -> Iterable[Path]:
        return sorted(self.objects.glob("*/*")) if self.objects.is_dir() else []

    def _write(self, path: Path, data: object) -> None:
        write_record(path, data)


def open_store(environ: Mapping[str, str]) -> Store | None:
    """The store, or None when it is off. StoreError when it cannot be used: the pack
    goes on without it (the store is a cache), saying why."""
    root = store_root(environ)
    if root is None:
        return None
    if root.exists() and not root.is_dir():
        raise StoreError(f"{root}: the runtime store is not a folder",
                         f"set {STORE_VARIABLE} to a folder, or to '{DISABLED}'")
    try:   # every folder and file this user's, writable by no one else (store/trust.py)
        check_tree(root)
    except Untrusted as exc:
        what = "is" if exc.path == root else f"holds {exc.path}, which is"
        raise StoreError(f"{root}: the runtime store {what} {exc.why}: not used",
                         f"{exc.fix}, or set {STORE_VARIABLE} to a folder of your own"
                         ) from None
    try:
        store = Store(root, store_key(environ))
    except StoreKeyError as exc:
        raise StoreError(exc.message, exc.hint) from None
    make_top_folders(root)
    return store


class ObjectGone(Exception):
    """The file checked at a path is no longer the one there when it is placed: another
    pack's eviction, `bundler cache prune` or the size cap removed it in between. The
    store is a cache: the caller reads the input instead."""


FileStamp = tuple[int, int, int, int]   # device, file id, size, modification time (ns)


def file_stamp(facts: os.stat_result) -> FileStamp:
    """Which file a path names: a file removed and added again, or replaced, differs."""
    return facts.st_dev, facts.st_ino, facts.st_size, facts.st_mtime_ns


def place(origin: Path, target: Path, copy: bool, stamp: FileStamp) -> bool:
    """Put `origin`'s bytes at `target`: a hard link unless `copy` (or the two are on
    different volumes, or the file system has no links). True if linked. `stamp` is the
    file `origin` named when it was hashed: ObjectGone if it is not the file placed (it
    vanished or was replaced since), and nothing is left at `target`."""
    if not copy and _try_link(origin, target):
        if file_stamp(target.stat()) != stamp:
            target.unlink()
            raise ObjectGone(origin)
        return True
    try:   # the bytes come from the file compared, whatever happens to the path meanwhile
        handle = os.open(origin, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise ObjectGone(origin) from None
    with open(handle, "rb") as source:
        if file_stamp(os.fstat(source.fileno())) != stamp:
            raise ObjectGone(origin)
        try:
            with open(target, "wb") as out:
                _copy_open(source.fileno(), out.fileno())
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):   # the bundle's disk, not the store's
                raise OSError(exc.errno, exc.strerror, str(target)) from None
            raise
    return False


def _copy_open(source: int, out: int) -> None:
    """Copy one open file into another: in the kernel where it can (sendfile, as
    shutil.copyfile does on Linux: about 3x faster than through Python), else in 1 MiB
    chunks."""
    sent = 0
    if hasattr(os, "sendfile"):   # the kernel copy where the OS has one
        try:
            while chunk := os.sendfile(out, source, sent, 1 << 30):
                sent += chunk
            return
        except OSError as exc:
            if sent or exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise   # not "sendfile unsupported here": a real failure
    while chunk_bytes := os.read(source, 1 << 20):
        left = memoryview(chunk_bytes)
        while left:
            left = left[os.write(out, left):]


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


def remove_read_only(path: Path) -> None:
    """Remove a store object without changing the file: it is the same inode as every
    bundle's hard link to it, so a chmod here would change those bundles' files (made
    unreadable to other users, and writable). Unlinking needs write permission on the
    folder only; a folder made read-only is made writable for the unlink instead."""
    for attempt in (_as_it_is, _folder_writable, _file_unlinked_or_aside):
        try:
            attempt(path)
            path.unlink()
            return
        except FileNotFoundError:
            return
        except PermissionError:
            continue
        except OSError:
            return


def _as_it_is(path: Path) -> None:
    pass


def _folder_writable(path: Path) -> None:
    folder = path.parent
    folder.chmod(stat.S_IMODE(folder.stat().st_mode) | stat.S_IWUSR | stat.S_IXUSR)


def _file_unlinked_or_aside(path: Path) -> None:
    """Where a writable folder is not enough (Windows refuses to delete a read-only
    file, and its read-only attribute belongs to the file, so clearing it would make
    every bundle's link writable): a file no bundle links is made writable; a linked one
    is moved aside into tmp/ (a rename keeps the attribute) — removing debris tries it
    again later — and FileNotFoundError ends the removal."""
    if path.stat().st_nlink <= 1:
        path.chmod(stat.S_IWUSR | stat.S_IRUSR)
        return
    if path.parent.name != "tmp":   # objects/ab/<sha256>: moved to tmp/; in tmp/: kept
        aside = path.parents[2] / "tmp" / f"evicted-{path.name}"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, aside)
    raise FileNotFoundError(path)


def _path_key(path: Path) -> str:
    return hashlib.sha256(str(path.resolve()).encode("utf-8", "surrogatepass")).hexdigest()
