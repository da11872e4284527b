"""The harness's cache: one folder outside the repo, shared by test runs.

Everything slow (the Windows CPython, its wheels, the Wine prefix, compiled
stand-in DLLs) is made once and reused. Several pytest processes may start at
once, so each item is created under a file lock and published by an atomic
rename: a reader sees either nothing or a complete folder.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    """$BUNDLER_TEST_CACHE, else ~/.cache/bundler-tests (created on demand)."""
    configured = os.environ.get("BUNDLER_TEST_CACHE")
    root = Path(configured) if configured else Path.home() / ".cache" / "bundler-tests"
    root.mkdir(parents=True, exist_ok=True)
    return root.resolve()


def digest(*parts: bytes | str) -> str:
    """A short, stable hash of the parts, for cache keys (order matters)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        # Length-prefix each part so ("ab", "c") and ("a", "bc") differ.
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:20]


@contextmanager
def locked(name: str, *, shared: bool = False) -> Iterator[None]:
    """Hold a cross-process flock named `name` (released on exit or crash)."""
    lock_dir = cache_root() / "locks"
    lock_dir.mkdir(exist_ok=True)
    with open(lock_dir / f"{name}.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def try_lock_exclusive(name: str) -> bool:
    """True if nobody holds `name` right now (the lock is not kept)."""
    lock_dir = cache_root() / "locks"
    lock_dir.mkdir(exist_ok=True)
    with open(lock_dir / f"{name}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def build_once(dest: Path, build: Callable[[Path], None]) -> Path:
    """Create folder `dest` with `build(tmp)` unless it exists; return it.

    `build` fills a private temporary folder that is renamed into place, so an
    interrupted build never leaves a half-made `dest` behind.
    """
    if dest.is_dir():
        return dest
    with locked(digest(str(dest))):
        if dest.is_dir():  # another process finished it while we waited
            return dest
        tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        try:
            build(tmp)
            tmp.rename(dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
