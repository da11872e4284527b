"""Opening the small files bundler reads as data (a manifest, a lock, a spec, a store
record) or locks, refusing anything that is not a regular file.

A plain open() of a named pipe (FIFO) waits for a writer that never comes: bundler would
hang for ever on a FIFO left where a manifest or a lock should be. Opened non-blocking,
a FIFO opens at once, and fstat on what was opened (not a stat of the path before it,
which another process could swap in between) tells it from a file.
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
