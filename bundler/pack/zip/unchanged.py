"""Whether the zip already at the --zip path is, byte for byte, the zip this pack writes.

A re-pack with nothing changed would write the very bytes the previous zip holds (the
zip is deterministic, zip/writer.py). Writing 1 GB again costs more than the rest of such
a re-pack, and a new file (a new modification time) makes upload and sync tools send it
again. So before writing, the zip is compared with what would be written: every local
header, the central directory and the end records byte by byte, and every member's stream
by its sha256 against the kept stream this pack would copy (the store's sealed record,
store/zip_streams.py). Only if every byte agrees and the file ends where the zip would,
the zip is left as it is; at the first difference (a member with no kept stream, a
header, a stream's hash) the zip is written anew, as before. The streams' hashes run on
every core, once the walk over the headers found no difference: a one-file edit differs
at its member, and hashing the streams before it (the whole runtime: a bundle's top
files sort before its runtime folder's, `main.py` after `cudnn/`) would cost a second
or more of reading for a zip that is written anew anyway. The check never writes.
"""

from __future__ import annotations

import hashlib
import os
import queue
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import BinaryIO

from bundler.pack.store.zip_streams import StreamCache, StreamRecord
from bundler.pack.zip.writer import Member, ZipCounts, ZipWriter, _Op, _Start
from bundler.support.deflate import Compressor
from bundler.support.hashing import CHUNK


class _Differs(Exception):
    """A byte of the zip this pack writes is not the one the old zip holds there."""


class _Comparing:
    """A zip writer's output that compares each write with the old zip's bytes at that
    offset instead of writing them."""

    def __init__(self, old: BinaryIO) -> None:
        self._old = old
        self._at = 0

    def write(self, data: bytes) -> int:
        self._old.seek(self._at)
        if self._old.read(len(data)) != data:
            raise _Differs
        self._at += len(data)
        return len(data)

    def tell(self) -> int:
        return self._at

    def seek(self, at: int) -> int:
        self._at = at
        return at

    def truncate(self) -> None:
        raise _Differs


def _stream_sha256(path: str, start: int, length: int) -> str:
    """sha256 of `length` bytes of `path` from `start` (fewer where the file ends
    early: the hash cannot match then)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(start)
        while length > 0 and (chunk := handle.read(min(length, CHUNK))):
            digest.update(chunk)
            length -= len(chunk)
    return digest.hexdigest()


class _Comparer(ZipWriter):
    """ZipWriter's walk over the members, with kept streams checked where they lie in
    the old zip instead of copied, and any member to compress a difference."""

    def __init__(self, out: _Comparing, path: str, compressor: Compressor,
                 streams: StreamCache, workers: int, progress: Callable[[int], object],
                 hashes: ThreadPoolExecutor) -> None:
        super().__init__(out, compressor, streams, workers,  # type: ignore[arg-type]
                         progress)
        self._path = path
        self._hashes = hashes
        # (start, length, sha256, member size) of each stream to check after the walk
        self.streams: list[tuple[int, int, str, int]] = []

    def _copy(self, op: _Start) -> bool:
        kept = op.kept
        record: StreamRecord = kept.record  # type: ignore[attr-defined]
        self._entry(op.member, record.crc, record.compressed, record.size)
        start = self._out.tell()
        self.streams.append((start, record.compressed, record.stream_sha256, record.size))
        self._out.seek(start + record.compressed)
        self.used.add(kept.key)  # type: ignore[attr-defined]
        self.reused += 1
        return True

    def _compressed(self, op: _Start, ops: queue.Queue[_Op]) -> None:
        raise _Differs   # no kept stream (or a bad one): the zip is written anew


def same_zip(path: str, members: list[Member], compressor: Compressor, streams: StreamCache,
             workers: int, progress: Callable[[int], object]
             ) -> tuple[ZipCounts, set[str]] | None:
    """(counts, kept streams used) if the zip at `path` holds exactly the bytes ZipWriter
    would write of `members`; None at the first difference, or if it cannot be read."""
    try:
        size = os.stat(path).st_size
        with open(path, "rb") as old, ThreadPoolExecutor(workers) as hashes:
            out = _Comparing(old)
            comparer = _Comparer(out, path, compressor, streams, workers, progress, hashes)
            try:
                counts = comparer.write(members)
            except _Differs:
                return None   # no stream was hashed: they are checked after the walk
            if out.tell() != size:
                return None
            checks: list[tuple[Future[str], str, int]] = [
                (hashes.submit(_stream_sha256, path, start, length), expected, member)
                for start, length, expected, member in comparer.streams]
            same = True
            for future, expected, member in checks:
                same = future.result() == expected
                if not same:
                    for rest, _, _ in checks:
                        rest.cancel()
                    break
                progress(member)
    except OSError:
        return None
    return (ZipCounts(counts.members, counts.reused, 0, counts.hashed, unchanged=True,
                      compressor=counts.compressor),
            comparer.used) if same else None
