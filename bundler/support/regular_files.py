"""Opening the files bundler reads (a manifest, a lock, a spec, a store record, and the
files of a user's app: its binaries, its frameworks' METADATA, RECORD and build-info files,
its requirement files) or locks, refusing anything that is not a regular file.

A plain open() of a named pipe (FIFO) waits for a writer that never comes: bundler would
hang for ever on a FIFO left where a manifest or a lock should be. Opened non-blocking,
a FIFO opens at once, and fstat on what was opened (not a stat of the path before it,
which another process could swap in between) tells it from a file. A link to /dev/zero
is a character device, not a regular file: refused the same way.

Every reader of a file bundler did not write goes through `open_bounded` or
`read_bounded`: the file is judged by its size (fstat, before any byte is read) as well,
so a sparse 20 GB file is refused at once, never read for minutes; what is read stops at
the bound even if the file grows while it is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

# Windows has no O_NONBLOCK, and no FIFO a path can name: nothing there blocks on open.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_BINARY = getattr(os, "O_BINARY", 0)

NOT_REGULAR = "not a regular file (a folder, device or pipe)"


class NotARegularFile(OSError):
    """The path names a folder, a device or a pipe, not a file bundler can read."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.EINVAL, NOT_REGULAR, str(path))


class TooLarge(OSError):
    """The path names a regular file larger than its reader's bound."""

    def __init__(self, path: Path | str, size: int, bound: int) -> None:
        super().__init__(errno.EFBIG, f"{size} bytes, more than the {describe_size(bound)} "
                         "such a file can be", str(path))
        self.size, self.bound = size, bound


def describe_size(count: int) -> str:
    """A bound in words: "1 MiB", "4 GiB", "512 bytes"."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if count >= 1 << shift and count % (1 << shift) == 0:
            return f"{count >> shift} {unit}"
    return f"{count} bytes"


def open_bounded(path: Path | str, max_bytes: int) -> BinaryIO:
    """`path` opened for reading (binary) when it is a regular file of at most
    `max_bytes` by its size; NotARegularFile or TooLarge (OSErrors, nothing left open)
    otherwise, judged on what was opened, without reading it or blocking on a FIFO."""
    handle = open_regular(path)
    try:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise TooLarge(path, size, max_bytes)
    except BaseException:
        handle.close()
        raise
    return handle


def read_bounded(path: Path | str, max_bytes: int) -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes` (open_bounded's
    errors); TooLarge too if it grew past the bound while it was read."""
    with open_bounded(path, max_bytes) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(path, len(data), max_bytes)
    return data


def open_regular(path: Path | str) -> BinaryIO:
    """`path` opened for reading in binary mode; NotARegularFile if it is not a
    regular file (without blocking on a FIFO), OSError if it cannot be opened."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _BINARY)
    except PermissionError:
        if os.path.isdir(path):   # how Windows answers an open() of a folder
            raise NotARegularFile(path) from None
        raise
    try:
        require_regular(fd, path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def regular_opener(path: str, flags: int) -> int:
    """An `opener` for open(): the descriptor of `path`, opened without blocking on a
    FIFO; NotARegularFile (nothing left open) if it is not a regular file."""
    fd = os.open(path, flags | _NONBLOCK | _BINARY)
    try:
        require_regular(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular_for_update(path: Path | str, mode: int = 0o644) -> int:
    """A descriptor of `path` opened read-write, created if missing (a lock file);
    NotARegularFile, with nothing created or left open, if it is not a regular file."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NONBLOCK | _BINARY, mode)
    try:
        require_regular(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def require_regular(fd: int, path: Path | str) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise NotARegularFile(path)
