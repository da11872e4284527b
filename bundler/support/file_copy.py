"""Copying a range of one file into another without its bytes passing through Python.

A re-pack with `--zip` copies the kept zip streams whose bytes their records already
prove (store/zip_streams.py) into the new zip: a gigabyte for the cuDNN 8.9 set. Read
into Python and written out again, each byte crosses into user space twice; the
kernel's `copy_file_range` copies within the kernel (and where the file system can, as
btrfs and XFS do, shares the blocks: a reflink, no copy at all). Where it is missing
(not Linux, an old kernel: ENOSYS) or refuses (two file systems on kernels before 5.3:
EXDEV; some file systems: EINVAL, EOPNOTSUPP), `sendfile` is tried, then a plain loop of
reads and writes, so the result is the same bytes on every system.
"""

from __future__ import annotations

import os
from collections.abc import Callable

_CHUNK = 1 << 20
# Each kernel call: (source, target, count, at in source, at in target) -> bytes copied.
_KernelCall = Callable[[int, int, int, int, int], int]


def _copy_file_range(source: int, target: int, count: int, source_at: int,
                     target_at: int) -> int:
    return os.copy_file_range(source, target, count, source_at, target_at)


def _sendfile(source: int, target: int, count: int, source_at: int, target_at: int) -> int:
    os.lseek(target, target_at, os.SEEK_SET)   # sendfile writes at the target's position
    return os.sendfile(target, source, source_at, count)


def _kernel_calls() -> list[_KernelCall]:
    calls: list[_KernelCall] = []
    if hasattr(os, "copy_file_range"):
        calls.append(_copy_file_range)
    if hasattr(os, "sendfile"):
        calls.append(_sendfile)
    return calls


def copy_range(source: int, target: int, source_at: int, target_at: int, count: int
               ) -> int:
    """Copy `count` bytes of the file open as `source` from `source_at` into the file
    open as `target` at `target_at` (file descriptors; the target open for writing).
    Returns how many were copied: fewer only where the source ends first. The target's
    file position is left undefined: the caller seeks."""
    done = 0
    for call in _kernel_calls():
        try:
            while done < count:
                copied = call(source, target, count - done, source_at + done,
                              target_at + done)
                if not copied:   # the source's end, or a file system that copies
                    break        # nothing this way: the next way says which
                done += copied
        except OSError:   # ENOSYS, EXDEV, EINVAL...: this way cannot copy these files
            continue
        if done == count:
            return done
    while done < count:   # the plain way, which every system has
        os.lseek(source, source_at + done, os.SEEK_SET)
        chunk = os.read(source, min(_CHUNK, count - done))
        if not chunk:
            return done
        os.lseek(target, target_at + done, os.SEEK_SET)
        written = 0
        while written < len(chunk):
            written += os.write(target, chunk[written:])
        done += len(chunk)
    return done
