"""One pack at a time per target: an inter-process lock held in a small file.

The lock is the operating system's lock on the file (flock on POSIX, a locked byte on
Windows), so it dies with its holder: a killed pack leaves no lock behind, only the
file, which the next pack reuses (stale-lock recovery needs no guessing about pids).
The holder writes its pid into the file so a second pack can say whom it waits for.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bundler.errors import RefusedError
from bundler.support.regular_files import NOT_REGULAR, NotARegularFile, open_regular_for_update

_POLL_SECONDS = 0.2
_WINDOWS_LOCK_OFFSET = 1 << 30  # a byte past any pid text: readers are never blocked


LOCK_SUFFIX = ".pack-lock"


def lock_file(path: Path) -> Path:
    """The inter-process lock guarding `path` (a bundle folder or a spec's lock)."""
    return path.with_name(f".{path.name}{LOCK_SUFFIX}")


@contextmanager
def exclusive(path: Path, what: str, notify: Callable[[str], object]) -> Iterator[None]:
    """Hold the lock file `path` for the block; wait (saying so once, via `notify`)
    while another process holds it. `what` names the thing it guards, for the message.
    The holder deletes the file when done, so nothing is left beside the target."""
    told = False
    while True:
        try:
            fd = open_regular_for_update(path)
        except NotARegularFile:
            # e.g. a FIFO: locking it would hang or fail; it is not one bundler made
            raise RefusedError(f"{path}: {NOT_REGULAR}, where bundler keeps the lock file "
                               f"that guards {what}",
                               "remove it (bundler makes this file itself) and run again"
                               ) from None
        try:
            if _try_lock(fd):
                if _still_at(fd, path):
                    break
            elif not told:
                notify(f"bundler: waiting for another bundler (pid {_holder(fd)}) that is "
                       f"writing {what}; it holds {path}")
                told = True
        except BaseException:
            os.close(fd)
            raise
        # Locked by another, or the file we locked was deleted by its last holder
        # (another process may have made a new one): try again.
        os.close(fd)
        time.sleep(_POLL_SECONDS)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):  # Windows cannot delete an open file: left
            path.unlink()
        _unlock(fd)
        os.close(fd)


def _still_at(fd: int, path: Path) -> bool:
    """Whether the locked file is still the one at `path` (not deleted by its holder)."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


def _holder(fd: int) -> str:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32)
    except OSError:
        text = b""
    pid = text.decode("ascii", "replace").strip()
    return pid if pid.isdigit() else "unknown"


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
