"""Atomic output: build the bundle beside its target, swap it in only when complete.

Any failure before the swap leaves the previous bundle byte-for-byte as it was; the
swap itself is journaled (bundler/formats/swap_journal.py), so a kill at any instant
leaves a state the next pack (or `bundler verify`) completes or undoes.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from bundler.errors import BundlerError, RefusedError
from bundler.formats.manifest import DamagedManifest, UnsupportedManifest, find_manifest
from bundler.formats.swap_journal import (
    Swap,
    begin,
    checkpoint,
    journal_path,
    pending_prefix,
    recover,
    remove_debris,
    retired_prefix,
    roll_back,
    roll_forward,
    staging_prefix,
)
from bundler.support.exclusive import exclusive, lock_file
from bundler.support.paths import WINDOWS_NAME_HINT, remove_tree, shown_name
from bundler.targets.registry import Platform


def output_folder(given: Path) -> Path:
    """The output folder, resolved; refused if the path itself is a symbolic link (or
    a junction): the swap would write through it and replace whatever it points at,
    another app's bundle included. Links above it (a linked dist/) are followed."""
    path = Path(os.path.abspath(given))
    if _is_link(path):
        try:
            points = f" to {os.readlink(path)}"
        except OSError:
            points = ""
        raise RefusedError(f"{path}: the output folder is a symbolic link{points}; "
                           "refusing to write through it (the bundle would replace what "
                           "is there); nothing was changed",
                           "remove the link, or give --out a folder that is not a link")
    return path.resolve()


def _is_link(path: Path) -> bool:
    """A symbolic link, or a junction on Windows (os.path.isjunction: Python >= 3.12)."""
    isjunction = getattr(os.path, "isjunction", None)
    return path.is_symlink() or bool(isjunction and isjunction(path))


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
        handle, temporary = tempfile.mkstemp(prefix=pending_prefix(path), dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        # mkstemp makes the file private (0600); a lock is for everyone who reads the spec.
        if path.exists():
            shutil.copymode(path, temporary)
        else:
            os.chmod(temporary, 0o644)
        self.pending.append((Path(temporary), path))

    def discard(self) -> None:
        remove_tree(self.folder)
        for temporary, _ in self.pending:
            temporary.unlink(missing_ok=True)


def refuse_unholdable_names(bundle: Path, platform: Platform, shown: str) -> None:
    """Every file and folder of the staged bundle, whichever builder put it there (the
    embedded `python/` folder's wheels included), must be one `platform` can hold: asked
    of the whole tree before the swap, so the previous bundle stays. `shown`: the
    bundle's name in messages (the staging folder is never named)."""
    relpaths = []
    for folder, dirs, files in os.walk(bundle):   # never into links: the copy made none
        where = Path(folder).relative_to(bundle).as_posix()
        relpaths += [name if where == "." else f"{where}/{name}" for name in dirs + files]
    found = platform.unholdable_path(relpaths)
    if found is None:
        return
    relpath, why = found
    wheel = _installed_by(bundle, relpath)
    origin = (f"; the wheel {wheel} installs it (app.requirements)" if wheel else "")
    hint = (f"pin another version of {wheel.split()[0]} that {platform.os_name} can "
            "install, or leave it out of the requirements file" if wheel
            else WINDOWS_NAME_HINT)
    raise RefusedError(f"{shown}/{shown_name(relpath)}: {platform.os_name} cannot hold this "
                       f"path in the bundle: {why}{origin}; the previous bundle and lock "
                       "were kept", hint)


def _installed_by(bundle: Path, relpath: str) -> str:
    """"name version" of the wheel whose RECORD lists `relpath`, in the site-packages
    folder above it, or ""."""
    parts = relpath.split("/")
    for depth in range(len(parts) - 1, 0, -1):
        site = bundle.joinpath(*parts[:depth])
        inside = "/".join(parts[depth:])
        for record in sorted(site.glob("*.dist-info/RECORD")):
            try:
                listed = {line.split(",")[0] for line in record.read_text(
                    encoding="utf-8", errors="replace").splitlines()}
            except OSError:
                continue
            if inside in listed or f"{inside}/" in {p[:len(inside) + 1] for p in listed}:
                return record.parent.name.removesuffix(".dist-info").replace("-", " ", 1)
    return ""


def _is_bundle(folder: Path) -> bool:
    try:
        find_manifest(folder)
    except (DamagedManifest, UnsupportedManifest):
        return True  # ours, damaged or newer: packing again is the fix verify suggests
    except BundlerError:
        return False
    return True


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def staged_output(target: Path, replaced: list[Path]) -> Iterator[Staging]:
    """Yield a fresh staging folder; on success swap it into `target`, together with the
    files registered with `replace_with_bundle` (each in `replaced`).

    One pack at a time writes a target and its lock: a second one waits. Under the
    lock, a swap a killed run left is completed first and its debris removed. Any
    failure before the swap changes nothing; a kill at any instant is recovered.
    """
    made = _missing_folders(target.parent)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _held(target, replaced) as staging:
            yield staging
    except BaseException:
        _remove_if_empty(made)   # a failed first pack leaves no empty dist/ behind
        raise


@contextmanager
def _held(target: Path, replaced: list[Path]) -> Iterator[Staging]:
    """staged_output's work, under the pack locks."""
    with ExitStack() as held:
        # Always spec-lock(s) first, then the target: no two packs wait on each other.
        for guarded in [*sorted(set(replaced)), target]:
            held.enter_context(exclusive(lock_file(guarded), str(guarded), _say))
        done = recover(target)
        if done:
            _say(f"bundler: {done}")
        remove_debris(target, replaced)
        staging = Staging(Path(tempfile.mkdtemp(prefix=staging_prefix(target),
                                                dir=target.parent)))
        try:
            yield staging
            checkpoint("staged")
            _swap(staging, target)
        except BaseException:
            if not journal_path(target).exists():  # a swap begun is finished or undone
                staging.discard()
            raise


def _missing_folders(folder: Path) -> list[Path]:
    """`folder` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders this pack made, deepest first, while they are empty: rmdir
    never removes a folder that something (another pack's lock) was put in meanwhile."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _swap(staging: Staging, target: Path) -> None:
    """Journal the swap, then make it; undo it on any failure (Ctrl-C included)."""
    retired = tempfile.mkdtemp(prefix=retired_prefix(target), dir=target.parent)
    swap = Swap(target=str(target), staging=str(staging.folder), retired=retired,
                files=[[str(t), str(f)] for t, f in staging.pending])
    begin(swap)
    checkpoint("journal-written")
    try:
        roll_forward(swap)
    except BaseException as exc:
        try:
            roll_back(swap)
        except OSError:
            raise RefusedError(f"{target}: the new bundle could not be swapped in and the "
                               f"previous one could not be fully put back: it is in {retired}",
                               "close the app (or anything using its files) and pack again: "
                               "the next pack completes the swap") from None
        if isinstance(exc, OSError):
            raise _swap_error(exc, target) from None
        raise


def _swap_error(exc: OSError, target: Path) -> RefusedError:
    where = exc.filename or target
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return RefusedError(f"{where}: the disk is full; the previous bundle and lock were "
                            "kept", "free some space and pack again")
    # On Windows a running app holds its DLLs open, so its folder cannot move.
    return RefusedError(f"{where}: cannot replace it ({exc.strerror}); the previous bundle "
                        "and lock were kept",
                        "close the app (or anything using its files) and pack again")
