"""Writing a deterministic zip on every core, reusing kept streams (store/zip_streams.py).

A member's bytes are deflated in pieces of 1 MiB, each primed with the 32 KiB before it
and ended with a sync flush (the last one finished), as pigz does: the pieces compress
on a pool of threads (zlib lets go of the GIL) and their outputs, joined in order, are
one deflate stream whose bytes depend only on the member's bytes, never on the number of
threads or on which stream came from the cache. A member whose stream was kept by an
earlier zip is copied from there, its header's CRC and sizes from the kept record: by
the kernel, unread, where the record of the stream's last hash still names its stamp (a
one-file edit then writes the other members' gigabyte without hashing it again), else
read and hashed against its record as it is copied (store/zip_streams.py, copy_into).

The zip's own structure (local headers, central directory, zip64 where a size or an
offset needs it) is written here, as zipfile writes it: no extra fields, no data
descriptors (each local header is completed once its stream is written). One thread
reads and hashes the members ahead, at most WINDOW pieces ahead of the writer, so
memory stays a few MiB whatever the members' sizes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

from bundler.formats.swap_journal import checkpoint
from bundler.pack.store.zip_streams import UNREAD, KeptStream, StreamCache, StreamRecord
from bundler.support.deflate import Compressor, crc32

PIECE = 1 << 20
_DICTIONARY = 1 << 15   # deflate's window: what a piece may refer back to
ZIP64_LIMIT = (1 << 31) - 1   # zipfile's: beyond it, sizes and offsets go to zip64
_COUNT_LIMIT = (1 << 16) - 1
_DOS_DATE = (0 << 9) | (1 << 5) | 1   # 1980-01-01, 00:00:00 (time 0)
_LOCAL = struct.Struct("<4s2B4HL2L2H")
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")
_END = struct.Struct("<4s4H2LH")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR64 = struct.Struct("<4sLQL")


@dataclass(frozen=True)
class Member:
    """One zip entry: a folder (path None) or a file to read."""

    name: str
    external_attr: int
    path: str | None = None
    size: int = 0
    sha256: str = ""   # of its bytes, where the pack already knows it (staged files)


@dataclass(frozen=True)
class ZipCounts:
    members: int
    reused: int       # streams copied from the kept ones
    compressed: int   # members deflated now
    hashed: int = 0   # members read to learn their sha256 (the rest were known)
    unread: int = 0   # of `reused`: copied unread, their bytes proven by the stamp record
    unchanged: bool = False   # the zip already held these bytes: left as it was
    compressor: str = ""   # what deflates the members, its version and level


def settings(compressor: Compressor) -> str:
    """Every choice that changes a stream's bytes (the compressor, its version and
    level, the pieces): a kept stream is reused only under the same ones."""
    return f"deflate by {compressor.settings}, pieces {PIECE}"


def _deflate_piece(data: bytes, dictionary: bytes, last: bool,
                   compressor: Compressor) -> bytes:
    deflater = compressor.raw_deflater(dictionary)
    return deflater.compress(data) + deflater.flush(
        zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


@dataclass
class _Start:
    member: Member
    kept: object = None          # a KeptStream, or None: compressed now
    content_sha256: str = ""


@dataclass
class _End:
    crc: int
    size: int


_Op = _Start | Future | _End | BaseException | None


class ZipWriter:
    """Writes `members` in order into `out` (a file open for writing and seeking)."""

    def __init__(self, out: BinaryIO, compressor: Compressor, streams: StreamCache | None,
                 workers: int, progress: Callable[[int], object]) -> None:
        self._out = out
        self._compressor = compressor
        self._streams = streams
        self._workers = max(1, workers)
        self._progress = progress
        self._central: list[bytes] = []
        self.used: set[str] = set()
        self.reused = 0
        self.compressed = 0
        self.hashed = 0
        self.unread = 0

    def write(self, members: list[Member]) -> ZipCounts:
        ops: queue.Queue[_Op] = queue.Queue(maxsize=2 * self._workers + 2)
        stop = threading.Event()
        with ThreadPoolExecutor(self._workers, thread_name_prefix="zip") as pool:
            reader = threading.Thread(target=self._read_ahead, daemon=True,
                                      args=(members, pool, ops, stop))
            reader.start()
            try:
                self._write_ops(ops)
            finally:
                stop.set()
                while reader.is_alive():   # let it see `stop` if it waits to put
                    with contextlib.suppress(queue.Empty):
                        ops.get(timeout=0.05)
        self._write_end()
        return ZipCounts(len(members), self.reused, self.compressed, self.hashed,
                         self.unread, compressor=self._compressor.settings)

    # ------------------------------------------------------------ the reader thread

    def _read_ahead(self, members: list[Member], pool: ThreadPoolExecutor,
                    ops: queue.Queue[_Op], stop: threading.Event) -> None:
        def put(op: _Op) -> None:
            while not stop.is_set():
                try:
                    ops.put(op, timeout=0.1)
                    return
                except queue.Full:
                    continue
            raise _Stopped

        try:
            for member in members:
                if member.path is None:
                    put(_Start(member))
                    continue
                kept, content = self._kept(member)
                put(_Start(member, kept, content))
                if kept is None:
                    crc, size = 0, 0
                    for piece, dictionary, last in _pieces(member.path):
                        crc = crc32(piece, crc)
                        size += len(piece)
                        put(pool.submit(_deflate_piece, piece, dictionary, last,
                                        self._compressor))
                    put(_End(crc, size))
            put(None)
        except _Stopped:
            return
        except BaseException as exc:   # handed to the writer, which raises it
            put(exc)

    def _kept(self, member: Member) -> tuple[object, str]:
        if self._streams is None or member.path is None:
            return None, ""
        content = member.sha256
        if not content:   # a file the pack did not hash as it staged it
            digest = hashlib.sha256()
            with open(member.path, "rb") as source:
                while chunk := source.read(PIECE):
                    digest.update(chunk)
            content = digest.hexdigest()
            self.hashed += 1
        return self._streams.find(content, member.size), content

    # ------------------------------------------------------------ the writer (caller)

    def _write_ops(self, ops: queue.Queue[_Op]) -> None:
        while True:
            op = ops.get()
            if op is None:
                return
            if isinstance(op, BaseException):
                raise op
            assert isinstance(op, _Start)
            if op.member.path is None:
                self._entry(op.member, 0, 0, 0, zlib_method=False)
            else:
                if op.kept is None or not self._copy(op):
                    self._compressed(op, ops)
                checkpoint("zip-member-written")   # crash tests: killed mid-zip

    def _entry(self, member: Member, crc: int, compressed: int, size: int,
               zlib_method: bool = True) -> int:
        """Write a local header; returns its offset (patched by _complete)."""
        offset = self._out.tell()
        name, flags = _encoded(member.name)
        zip64 = member.size * 1.05 > ZIP64_LIMIT
        extra = struct.pack("<2H2Q", 1, 16, size, compressed) if zip64 else b""
        shown = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (compressed, size)
        method = zipfile_deflated if zlib_method else 0
        version = 45 if zip64 else 20
        self._out.write(_LOCAL.pack(b"PK\x03\x04", version, 0, flags, method, 0, _DOS_DATE,
                                    crc, *shown, len(name), len(extra)) + name + extra)
        self._central.append(b"")   # filled by _complete
        self._complete(member, offset, crc, compressed, size, zlib_method, patch=False)
        return offset

    def _complete(self, member: Member, offset: int, crc: int, compressed: int, size: int,
                  zlib_method: bool = True, patch: bool = True) -> None:
        name, flags = _encoded(member.name)
        zip64 = member.size * 1.05 > ZIP64_LIMIT
        if patch:   # the local header's CRC and sizes, now known
            end = self._out.tell()
            self._out.seek(offset + 14)
            if zip64:
                self._out.write(struct.pack("<L", crc))
                self._out.seek(offset + _LOCAL.size + len(name) + 4)
                self._out.write(struct.pack("<2Q", size, compressed))
            else:
                self._out.write(struct.pack("<3L", crc, compressed, size))
            self._out.seek(end)
        wide = [v for v in ((size, compressed) if zip64 else ()) + (
            (offset,) if offset > ZIP64_LIMIT else ())]
        extra = struct.pack(f"<2H{len(wide)}Q", 1, 8 * len(wide), *wide) if wide else b""
        sizes = (0xFFFFFFFF, 0xFFFFFFFF) if zip64 else (compressed, size)
        version = 45 if wide else 20
        self._central[-1] = _CENTRAL.pack(
            b"PK\x01\x02", version, 3, version, 0, flags,
            zipfile_deflated if zlib_method else 0, 0, _DOS_DATE, crc, *sizes, len(name),
            len(extra), 0, 0, 0, member.external_attr,
            offset if offset <= ZIP64_LIMIT else 0xFFFFFFFF) + name + extra

    def _copy(self, op: _Start) -> bool:
        """Copy a kept stream: unread where the record of its last hash proves its
        bytes, else read and hashed as it is copied (StreamCache.copy_into). False (the
        zip as before it) if its bytes do not hash to its record: the stream is dropped
        and the member compressed."""
        kept = op.kept
        assert self._streams is not None and isinstance(kept, KeptStream)
        record: StreamRecord = kept.record
        offset = self._entry(op.member, record.crc, record.compressed, record.size)
        copied = self._streams.copy_into(kept, self._out)
        if copied is None:
            self._streams.drop(kept.key)
            self._out.seek(offset)
            self._out.truncate()
            self._central.pop()
            return False
        self.unread += copied == UNREAD
        self._progress(record.size)
        self.used.add(kept.key)
        self.reused += 1
        return True

    def _compressed(self, op: _Start, ops: queue.Queue[_Op]) -> None:
        """Write a stream as its pieces come back (already submitted by the reader,
        or, after a bad kept stream, compressed here), keeping it for the next zip."""
        member = op.member
        offset = self._entry(member, 0, 0, 0)
        digest = hashlib.sha256()
        compressed = shown = 0
        keeping = self._streams.new_stream() if self._streams else None
        with keeping if keeping is not None else _nothing() as kept:
            for piece in self._stream_of(op, ops):
                self._out.write(piece)
                if kept is not None:
                    kept.write(piece)
                digest.update(piece)
                compressed += len(piece)
                step = min(PIECE, member.size - shown)   # each piece but the last: PIECE
                if step > 0:   # progress as the pieces come, not once a 600 MB DLL is done
                    self._progress(step)
                    shown += step
            end = self._end
            self._complete(member, offset, end.crc, compressed, end.size)
            if end.size > shown:   # a file that grew since it was listed
                self._progress(end.size - shown)
            if kept is not None and self._streams is not None:
                record = StreamRecord(end.crc, end.size, compressed, digest.hexdigest())
                self._streams.keep(kept, op.content_sha256, record)
                self.used.add(self._streams.key_for(op.content_sha256))
        self.compressed += 1

    def _stream_of(self, op: _Start, ops: queue.Queue[_Op]) -> Iterator[bytes]:
        assert op.member.path is not None
        if op.kept is not None:   # its kept stream was bad: the reader sent no pieces
            crc, size = 0, 0
            for piece, dictionary, last in _pieces(op.member.path):
                crc, size = crc32(piece, crc), size + len(piece)
                yield _deflate_piece(piece, dictionary, last, self._compressor)
            self._end = _End(crc, size)
            return
        while True:
            item = ops.get()
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, _End):
                self._end = item
                return
            assert isinstance(item, Future)
            yield item.result()

    _end = _End(0, 0)

    def _write_end(self) -> None:
        start = self._out.tell()
        for entry in self._central:
            self._out.write(entry)
        size = self._out.tell() - start
        count = len(self._central)
        if count > _COUNT_LIMIT or start > ZIP64_LIMIT or size > ZIP64_LIMIT:
            end64 = self._out.tell()
            self._out.write(_END64.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, count, count,
                                        size, start))
            self._out.write(_LOCATOR64.pack(b"PK\x06\x07", 0, end64, 1))
            count, size, start = min(count, 0xFFFF), min(size, 0xFFFFFFFF), \
                min(start, 0xFFFFFFFF)
        self._out.write(_END.pack(b"PK\x05\x06", 0, 0, count, count, size, start, 0))


zipfile_deflated = 8


class _Stopped(Exception):
    """The writer gave up: the reader stops."""


class _nothing:   # noqa: N801  # a context of None, for a zip written without a cache
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _encoded(name: str) -> tuple[bytes, int]:
    """The name's bytes and flags, as zipfile writes them (UTF-8 flagged when not
    ASCII)."""
    try:
        return name.encode("ascii"), 0
    except UnicodeEncodeError:
        return name.encode("utf-8"), 0x800


def _pieces(path: str) -> Iterator[tuple[bytes, bytes, bool]]:
    """(piece, the 32 KiB before it, whether it is the last) of the file's bytes; an
    empty file is one empty last piece."""
    with open(path, "rb") as source:
        dictionary = b""
        piece = source.read(PIECE)
        while True:
            following = source.read(PIECE) if len(piece) == PIECE else b""
            yield piece, dictionary, not following
            if not following:
                return
            dictionary, piece = piece[-_DICTIONARY:], following


_MOST_WORKERS = 8   # each holds two pieces in flight: memory stays within ~40 MiB


def default_workers() -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    return min(cores, _MOST_WORKERS)
