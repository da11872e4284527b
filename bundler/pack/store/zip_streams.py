"""The zip streams a `--zip` pack compressed, kept for the next one.

Compressing is most of the work of `--zip` (a 1.7 GB bundle: minutes on two cores), and
a re-pack zips mostly the same bytes again. Each member's deflate stream is kept in the
runtime store's folder, under `zip-streams/`, keyed by the sha256 of the member's bytes
and the compressor's settings (level, piece size, zlib's version: anything that changes
the stream's bytes):

    zip-streams/ab/<key>.deflate   the raw deflate stream, as the zip holds it
    zip-streams/ab/<key>.json      its CRC-32, sizes and the stream's own sha256, sealed
                                   with the store's key (store/seal.py); its modification
                                   time is the stream's last use
    zip-streams/ab/<key>.hashed    the stream's stamp when its bytes last hashed to that
                                   record, sealed (store/hashed.py's records)

A stream is copied into the new zip only while its bytes hash to the sealed record;
anything else (a stream changed, a record forged or torn) is dropped and the member is
compressed again. Reading and hashing every kept stream costs a re-pack after a one-file
edit the zip's size (1.16 GB for the cuDNN 8.9 set: most of its 3 s), so, as for the
store's objects, a stream whose stamp is still the one recorded when it last hashed
(git's index rule, with its racy-stamp rule: store/hashed.py) is taken at its record's
word and copied unread; any other is read and hashed as it is copied, and its record
written after. The streams share the store's size cap ($BUNDLER_STORE_MAX) with its
objects: after a zip is written the least recently used streams are removed until
objects and streams together fit, never the streams the zip just used; dropping a
stream drops the record of its last hash with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bundler.errors import BundlerError
from bundler.pack.store import hashed
from bundler.pack.store.seal import seal, unseal
from bundler.pack.store.trust import make_folder, write_record
from bundler.support.file_copy import copy_range
from bundler.support.file_stamps import Stamp, stamp
from bundler.support.json_files import read_json

FOLDER = "zip-streams"
_KIND = "zip-stream"
_MAX_RECORD_BYTES = 4096
HASHED = ".hashed"   # the suffix of a stream's record of its last hash
UNREAD, READ = "unread", "read"   # how copy_into copied a kept stream
_PIECE = 1 << 20
# Where the records of each stream's last hash lie: beside the stream, so that whatever
# removes a stream by its key (drop) removes its record too.
_HASHED = hashed.Records("hashed-zip-stream", lambda root, key: (
    root / FOLDER / key[:2] / key).with_suffix(HASHED))


@dataclass(frozen=True)
class StreamRecord:
    """What a kept stream holds: the member's CRC-32 and size, and the stream's size
    and sha256 (what its bytes are checked against before they are copied)."""

    crc: int
    size: int
    compressed: int
    stream_sha256: str


@dataclass(frozen=True)
class KeptStream:
    path: Path
    record: StreamRecord
    key: str


class StreamCache:
    """The kept streams of one store. `settings` names every choice that changes a
    stream's bytes; `cap`: the store's size cap in bytes (0: none)."""

    def __init__(self, store_root: Path, key: bytes, settings: str, cap: int) -> None:
        self.folder = store_root / FOLDER
        self._root = store_root
        self._objects = store_root / "objects"
        self._tmp = store_root / "tmp"   # a killed pack's leftovers: the store's debris
        self._key = key
        self._settings = settings
        self._cap = cap
        self._clock: int | None = None   # read once, before the first stream is read
        self._clock_read = False

    def key_for(self, content_sha256: str) -> str:
        return hashlib.sha256(f"{content_sha256}\0{self._settings}".encode()).hexdigest()

    def _paths(self, key: str) -> tuple[Path, Path]:
        base = self.folder / key[:2] / key
        return base.with_suffix(".deflate"), base.with_suffix(".json")

    def find(self, content_sha256: str, size: int) -> KeptStream | None:
        """The kept stream of a member of these bytes, if its sealed record holds and
        the stream has the recorded size (its bytes are checked as they are copied)."""
        key = self.key_for(content_sha256)
        stream, record_path = self._paths(key)
        try:
            body = unseal(self._key, _KIND, key,
                          read_json(record_path, _MAX_RECORD_BYTES, BundlerError, ""))
            record = StreamRecord(**body) if isinstance(body, dict) else None
            if record is None or record.size != size or \
                    stream.stat().st_size != record.compressed:
                return None
            os.utime(record_path)   # used now: the size cap keeps it longest
        except (BundlerError, OSError, TypeError):
            return None
        return KeptStream(stream, record, key)

    def copy_into(self, kept: KeptStream, out: BinaryIO) -> str | None:
        """Write the kept stream's bytes at `out`'s position (a file open for writing):
        UNREAD, by the kernel, where the record of its last hash proves them; READ where
        they were read and hashed to its record as they were copied (that record then
        written); None if they do not hash to it (what was written is the caller's to
        undo)."""
        if self._copied_unread(kept, out):
            return UNREAD
        return READ if self._copied_read(kept, out) else None

    def _proven(self, kept: KeptStream) -> Stamp | None:
        """The stream's stamp now, if the record of its last hash names it (and the
        stamp is older than the clock that record was made by): its bytes are then the
        ones that hashed to its record, without reading them. None: read them."""
        try:
            now = stamp(kept.path)
        except OSError:
            return None
        if now[0] != kept.record.compressed or hashed.known(
                self._root, self._key, kept.key, now, _HASHED) is None:
            return None
        return now

    def _copied_unread(self, kept: KeptStream, out: BinaryIO) -> bool:
        """Copy the stream by the kernel if its stamp is the one recorded when it last
        hashed, and still is once copied (a write meanwhile changes it). False, with
        nothing written: read it."""
        before = self._proven(kept)
        if before is None:
            return False
        start = out.tell()
        out.flush()   # what the buffer holds (the member's header) goes first
        try:
            with open(kept.path, "rb") as stream:
                done = copy_range(stream.fileno(), out.fileno(), 0, start,
                                  kept.record.compressed)
        except OSError:
            done = -1   # gone since its stamp was taken: read (and fail) instead
        out.seek(start + max(done, 0))   # the kernel moved the file, not the buffer
        if done == kept.record.compressed and self._proven(kept) == before:
            return True
        out.seek(start)
        out.truncate()
        return False

    def _copied_read(self, kept: KeptStream, out: BinaryIO) -> bool:
        """Copy the stream through this process, hashing it; True if its bytes are its
        record's, and then the record of its last hash written where nothing wrote the
        stream while it was read and its stamp is older than the clock read before the
        first stream was (store/hashed.py's racy-stamp rule)."""
        if not self._clock_read:
            self._clock, self._clock_read = hashed.clock(self._root), True
        start = out.tell()
        digest = hashlib.sha256()
        try:
            before = stamp(kept.path)
            stream = open(kept.path, "rb")   # noqa: SIM115  # closed below
        except OSError:   # gone since it was found: compressed anew
            return False
        with stream:   # an error writing the zip is the zip's: it is not caught here
            while chunk := stream.read(_PIECE):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != kept.record.stream_sha256 or \
                out.tell() - start != kept.record.compressed:
            return False
        with contextlib.suppress(OSError):
            if self._clock is not None and stamp(kept.path) == before:
                hashed.remember(self._root, self._key, kept.key, before, self._clock,
                                records=_HASHED)
        return True

    @contextlib.contextmanager
    def new_stream(self) -> Iterator[BinaryIO]:
        """A temporary file a stream is written to while it is made."""
        make_folder(self._tmp)
        handle, name = tempfile.mkstemp(prefix="zip-stream-", dir=self._tmp)
        os.close(handle)
        try:
            with open(name, "wb") as out:   # its name is the path keep() renames
                yield out
        finally:
            Path(name).unlink(missing_ok=True)   # kept (renamed) by keep(), or dropped

    def keep(self, written: BinaryIO, content_sha256: str, record: StreamRecord) -> None:
        """Make the stream written to `written` (from new_stream) the kept one."""
        key = self.key_for(content_sha256)
        stream, record_path = self._paths(key)
        make_folder(stream.parent)   # never group-writable (store/trust.py)
        written.close()   # Windows renames no open file
        os.replace(written.name, stream)
        write_record(record_path, seal(self._key, _KIND, key, record.__dict__))

    def drop(self, key: str) -> None:
        """Remove a kept stream, its record and the record of its last hash."""
        for path in (*self._paths(key), _HASHED.path(self._root, key)):
            path.unlink(missing_ok=True)

    def drop_orphans(self) -> list[Path]:
        """Remove the records of streams that are gone (deleted by hand): a record of a
        stream's last hash outlives nothing it vouched for. Returns what it removed."""
        removed = []
        for record in sorted(self.folder.glob(f"*/*{HASHED}")) if self.folder.is_dir() \
                else []:
            if not record.with_suffix(".deflate").exists():
                record.unlink(missing_ok=True)
                removed.append(record)
        return removed

    def trim(self, used: frozenset[str]) -> list[str]:
        """Remove the least recently used streams (never `used`, the keys this zip took)
        until the store's objects and the streams fit its cap. Returns the keys removed."""
        removed = [key for key, _ in self.overflow(used)]
        for key in removed:
            self.drop(key)
        return removed

    def overflow(self, used: frozenset[str]) -> list[tuple[str, int]]:
        """(key, size) of the streams trim removes, least recently used first (what
        `bundler cache prune --dry-run` shows)."""
        if self._cap <= 0 or not self.folder.is_dir():
            return []
        objects = sum(p.stat().st_size for p in self._objects.glob("*/*")) \
            if self._objects.is_dir() else 0
        kept: dict[str, tuple[float, int]] = {}
        for record_path in self.folder.glob("*/*.json"):
            with contextlib.suppress(OSError):
                stream = record_path.with_suffix(".deflate")
                size = stream.stat().st_size if stream.exists() else 0
                kept[record_path.stem] = (record_path.stat().st_mtime, size)
        excess = objects + sum(size for _, size in kept.values()) - self._cap
        over = []
        for key in sorted(set(kept) - used, key=lambda k: kept[k][0]):
            if excess <= 0:
                break
            excess -= kept[key][1]
            over.append((key, kept[key][1]))
        return over
