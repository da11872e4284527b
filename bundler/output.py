"""Atomic output: build the bundle beside its target, swap it in only when complete.

Any failure before the swap leaves the previous bundle byte-for-byte as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bundler.errors import BundlerError, RefusedError
from bundler.verify import find_manifest


def refuse_unsafe_target(target: Path, protected: list[Path]) -> None:
    """Refuse a target that holds the user's own files: we would replace it whole.
    Only an earlier bundle (one `bundler verify` recognises) may be replaced."""
    target = target.resolve()
    for folder in protected:
        folder = folder.resolve()
        if target == folder or target in folder.parents:
            raise RefusedError(f"{target}: the output folder would replace {folder}",
                               "choose another --out (default: dist/<app name> beside the "
                               "spec)")
    if target.exists() and any(target.iterdir()) and not _is_bundle(target):
        raise RefusedError(f"{target}: exists and is not a bundle made by bundler "
                           "(no manifest.json in its runtime folder); refusing to replace it",
                           "choose another --out, or remove the folder yourself")


class Staging:
    """The folder a new bundle is built in, and files to replace together with it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._pending: list[tuple[Path, Path]] = []  # (temporary file, final path)

    def replace_with_bundle(self, path: Path, data: bytes) -> None:
        """Write `path` (e.g. the lock) only if and when the bundle is swapped in."""
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        self._pending.append((Path(temporary), path))

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        for temporary, _ in self._pending:
            temporary.unlink(missing_ok=True)


def _is_bundle(folder: Path) -> bool:
    try:
        find_manifest(folder)
    except BundlerError:
        return False
    return True


@contextmanager
def staged_output(target: Path) -> Iterator[Staging]:
    """Yield a fresh staging folder; on success swap it into `target`, then replace
    the files registered with `replace_with_bundle`. Any failure changes nothing."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Staging(Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-",
                                            dir=target.parent)))
    try:
        yield staging
        _swap(staging, target)
    except BaseException:
        staging.discard()
        raise


def _swap(staging: Staging, target: Path) -> None:
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    previous = retired / target.name
    try:
        if target.exists():
            os.replace(target, previous)
        os.replace(staging.folder, target)
    except OSError as exc:
        if previous.exists():
            os.replace(previous, target)  # put the previous bundle back
        shutil.rmtree(retired, ignore_errors=True)
        # On Windows a running app holds its DLLs open, so its folder cannot move.
        raise RefusedError(f"{target}: cannot replace the previous bundle ({exc.strerror})",
                           "close the app (or anything using its files) and pack again"
                           ) from None
    try:
        for temporary, final in staging._pending:
            os.replace(temporary, final)
    except OSError as exc:
        os.replace(target, staging.folder)  # the new bundle goes back, the old returns
        if previous.exists():
            os.replace(previous, target)
        shutil.rmtree(retired, ignore_errors=True)
        raise RefusedError(f"{exc.filename}: cannot write it ({exc.strerror}); the previous "
                           "bundle was kept", "check the folder is writable and pack again"
                           ) from None
    shutil.rmtree(retired, ignore_errors=True)
