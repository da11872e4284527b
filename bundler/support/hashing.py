"""Streaming sha256: files are read in chunks, never whole (DLLs reach 600 MB)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from bundler.support.progress import byte_progress

# The size of every streaming read in bundler: hashing, zip members, folder files.
CHUNK = 1 << 20


def sha256_file(path: Path, description: str = "") -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle, byte_progress(
            path.stat().st_size, description or f"hashing {path.name}") as bar:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()


def write_hashed(chunks: Iterable[bytes], out: BinaryIO,
                 advance: Callable[[int], object] | None = None) -> tuple[int, str]:
    """Write `chunks` to `out`, hashing them on the way: (bytes written, sha256).
    Copying out of an archive this way reads each byte once. `advance` is told each
    chunk's size (a progress bar)."""
    digest = hashlib.sha256()
    size = 0
    for chunk in chunks:
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
        if advance is not None:
            advance(len(chunk))
    return size, digest.hexdigest()


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
