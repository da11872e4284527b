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
from bundler.manifest import DamagedManifest, UnsupportedManifest, find_manifest


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
        self.pending: list[tuple[Path, Path]] = []  # (temporary file, final path)

    def replace_with_bundle(self, path: Path, data: bytes) -> None:
        """Write `path` (e.g. the lock) only if and when the bundle is swapped in."""
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # mkstemp makes the file private (0600); a lock is for everyone who reads the spec.
        if path.exists():
            shutil.copymode(path, temporary)
        else:
            os.chmod(temporary, 0o644)
        self.pending.append((Path(temporary), path))

    def discard(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        for temporary, _ in self.pending:
            temporary.unlink(missing_ok=True)


def _is_bundle(folder: Path) -> bool:
    try:
        find_manifest(folder)
    except (DamagedManifest, UnsupportedManifest):
        return True  # ours, damaged or newer: packing again is the fix verify suggests
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
    """Move the previous lock(s) and bundle aside, the new ones in; undo on any failure.

    The files move aside first: a lock that cannot be replaced (read-only, held by an
    editor) then fails before any folder has moved.
    """
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    done: list[tuple[Path, Path]] = []  # (source, destination) of each move made

    def move(source: Path, destination: Path) -> None:
        os.replace(source, destination)
        done.append((source, destination))

    try:
        for index, (_, final) in enumerate(staging.pending):
            if final.exists():
                move(final, retired / f"file-{index}")
        if target.exists():
            move(target, retired / target.name)
        move(staging.folder, target)
        for temporary, final in staging.pending:
            move(temporary, final)
    except BaseException as exc:
        if _undo(done):
            raise RefusedError(f"{target}: the new bundle could not be swapped in and the "
                               f"previous one could not be fully put back: it is in {retired}",
                               "move the files back from there by hand") from None
        shutil.rmtree(retired, ignore_errors=True)
        if isinstance(exc, OSError):
            # On Windows a running app holds its DLLs open, so its folder cannot move.
            raise RefusedError(f"{exc.filename or target}: cannot replace it "
                               f"({exc.strerror}); the previous bundle and lock were kept",
                               "close the app (or anything using its files) and pack again"
                               ) from None
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _undo(done: list[tuple[Path, Path]]) -> bool:
    """Reverse the moves, newest first; True if any could not be reversed."""
    stuck = False
    for source, destination in reversed(done):
        try:
            os.replace(destination, source)
        except OSError:
            stuck = True
    return stuck
