"""Streaming sha256: files are read in chunks, never whole (DLLs reach 600 MB)."""

from __future__ import annotations

import collections
import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import BinaryIO, Generic, TypeVar

from bundler.support import deflate
from bundler.support.progress import byte_progress
from bundler.support.regular_files import regular_opener

# The size of every streaming read in bundler: hashing, zip members, folder files.
CHUNK = 1 << 20
# Bytes handed to a Pipe's thread and not yet done with, at most (about).
_WAITING = 4 << 20
T = TypeVar("T")


def _open_to_hash(path: Path) -> BinaryIO:
    """`path` opened to be hashed: a named pipe or device where a file should be is
    refused (NotARegularFile, an OSError), never waited on or read without end."""
    return open(path, "rb", opener=regular_opener)


def sha256_file(path: Path, description: str = "") -> str:
    digest = hashlib.sha256()
    with _open_to_hash(path) as handle, byte_progress(
            path.stat().st_size, description or f"hashing {path.name}") as bar:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def sha256_crc32_file(path: Path, description: str = "") -> tuple[str, int, int]:
    """(sha256, CRC-32, size) of a file in one read: a stored file checked against both
    its name and what a zip's central directory says of the member it came from."""
    digest, crc, size = hashlib.sha256(), 0, 0
    with _open_to_hash(path) as handle, byte_progress(
            path.stat().st_size, description or f"hashing {path.name}") as bar:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            crc = deflate.crc32(chunk, crc)
            size += len(chunk)
            bar.update(len(chunk))
    return digest.hexdigest(), crc, size


def write_hashed(chunks: Iterable[bytes], out: BinaryIO,
                 advance: Callable[[int], object] | None = None,
                 also: Sequence[Callable[[bytes], object]] = ()) -> tuple[int, str]:
    """Write `chunks` to `out`, hashing them on the way: (bytes written, sha256).
    Copying out of an archive this way reads each byte once. `advance` is told each
    chunk's size (a progress bar); each of `also` is given every chunk, in order, on a
    third thread (another digest of the same bytes). The chunks must not be reused by
    their producer: they are hashed and written on other threads while the next one is
    made."""
    digest = hashlib.sha256()
    size = 0

    def write(chunk: bytes) -> None:
        digest.update(chunk)
        out.write(chunk)

    def others(chunk: bytes) -> None:
        for sink in also:
            sink(chunk)

    with Pipe(write, len, "write-hashed") as writer, \
            (Pipe(others, len, "digest") if also else contextlib.nullcontext()) as side:
        for chunk in chunks:
            writer.put(chunk)
            if side is not None:
                side.put(chunk)
            size += len(chunk)
            if advance is not None:
                advance(len(chunk))
    return size, digest.hexdigest()


class Pipe(Generic[T]):
    """Hands items to a second thread that applies `apply` to each, in order, while the
    caller makes the next (unpacking a zip member): zlib, hashlib and file writes let go
    of the GIL, so the cores share the work. Memory stays bounded: the caller waits
    while more than _WAITING bytes (`size` of each item) are handed over and not yet
    done. An error on the thread is raised in the caller (put, or leaving the `with`)."""

    def __init__(self, apply: Callable[[T], object], size: Callable[[T], int],
                 name: str) -> None:
        self._apply = apply
        self._size = size
        self._pending: collections.deque[tuple[T] | None] = collections.deque()
        self._pending_bytes = 0
        self._turn = threading.Condition()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            with self._turn:
                self._turn.wait_for(lambda: bool(self._pending))
                entry = self._pending[0]
            if entry is None:
                return
            if self._error is None:
                try:
                    self._apply(entry[0])
                except BaseException as exc:  # handed to the caller's thread in put/exit
                    self._error = exc
            with self._turn:
                self._pending.popleft()
                self._pending_bytes -= self._size(entry[0])
                self._turn.notify_all()

    def put(self, item: T) -> None:
        if self._error is not None:
            raise self._error
        with self._turn:
            self._turn.wait_for(lambda: self._pending_bytes < _WAITING or not self._pending)
            self._pending.append((item,))
            self._pending_bytes += self._size(item)
            self._turn.notify_all()

    def __enter__(self) -> Pipe[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_rest: object) -> None:
        with self._turn:
            self._pending.append(None)
            self._turn.notify_all()
        self._thread.join()
        if self._error is not None and kind is None:
            raise self._error


class PiggybackDigest:
    """The sha256 of a whole file, built from byte ranges that other reads fetch anyway.

    Unpacking members of a 700 MB wheel already reads nearly all of its bytes; hashing
    the file again for the lock and the recipe's pin would read it all a second time.
    Instead each range read (offset, bytes) is fed here: bytes at the hashed frontier
    extend the digest, ranges behind it were hashed already, and a gap before a range
    is read and hashed once. `hexdigest()` hashes whatever no read fetched (the tail).
    Reads in file order therefore read each byte exactly once.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._digest = hashlib.sha256()
        self._frontier = 0
        self._done = ""

    def see(self, offset: int, data: bytes) -> None:
        end = offset + len(data)
        if self._done or end <= self._frontier:
            return
        if offset > self._frontier:
            self._hash_range(self._frontier, offset)
        else:
            data = data[self._frontier - offset:]
        self._digest.update(data)
        self._frontier = end

    def hexdigest(self) -> str:
        if not self._done:
            self._hash_range(self._frontier, None)
            self._done = self._digest.hexdigest()
        return self._done

    def _hash_range(self, start: int, stop: int | None) -> None:
        with open(self.path, "rb") as handle:
            handle.seek(start)
            position = start
            while stop is None or position < stop:
                want = CHUNK if stop is None else min(CHUNK, stop - position)
                chunk = handle.read(want)
                if not chunk:
                    break
                self._digest.update(chunk)
                position += len(chunk)
        self._frontier = position
