"""Whose the store is: every folder and file of it this user's own, writable by no one
else, or the store is not used (docs/store.md, "Where it is").

The objects prove their bytes (each is re-hashed when taken), but not who can change
them afterwards: a file another user owns, hard-linked into a bundle, stays theirs to
rewrite, and a folder others can write lets them delete and refill it at will. So, as
ssh treats ~/.ssh and pip its cache, the store is checked before each use: its root and
everything below it (objects, records, `fresh/`, `tmp/`) owned by this user and not
group- or world-writable, and no links in it (bundler makes none). The first entry that
fails is named once; the pack goes on without the store.

Folders the store makes are made 0755 whatever the umask (a umask of 002, the default
for users of many Linux distributions, would otherwise make them group-writable, and
the next pack would refuse its own store). Every record is written by write_record, so
each is made the same way: in such a folder, whole, or not at all.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from bundler.support.json_files import json_bytes

FOLDER_MODE = 0o755
# The store's folders, made when it is opened, so that code which makes one with a
# plain mkdir finds it made.
TOP_FOLDERS = ("objects", "sources", "signatures", "used", "locks", "tmp", "fresh",
               "zip-streams", "hashed", "pins", "installed", "scans")
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


class Untrusted(Exception):
    """An entry of the store this user cannot vouch for: (path, why, the fix)."""

    def __init__(self, path: Path, why: str, fix: str) -> None:
        super().__init__(path, why, fix)
        self.path, self.why, self.fix = path, why, fix


def posix_owners() -> bool:
    """Owners and group/other write bits are POSIX's (os.getuid): Windows has ACLs."""
    return hasattr(os, "getuid")


def check_tree(root: Path) -> None:
    """Untrusted for the first entry of the store at `root` (the root included) that is
    not this user's, is writable by other users, or is a link. Nothing to check where
    the root does not exist yet (it is made this user's)."""
    if not posix_owners():
        return
    try:
        facts = root.stat()   # the root may be a link the user made (BUNDLER_STORE)
    except FileNotFoundError:
        return
    _judge(root, facts, root)
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except NotADirectoryError:
            continue   # a file where a folder should be: writes there fail, a warning
        except OSError as exc:
            raise Untrusted(folder, f"cannot be listed ({exc.strerror})",
                            f"chmod u+rwx {folder}") from None
        for entry in entries:
            path = Path(entry.path)
            found = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(found.st_mode):
                raise Untrusted(path, "a link (bundler puts none in its store: what it "
                                "reaches may be anyone's)", f"delete {path}")
            _judge(path, found, root)
            if stat.S_ISDIR(found.st_mode):
                folders.append(path)


def _judge(path: Path, facts: os.stat_result, root: Path) -> None:
    if facts.st_uid != os.getuid():
        raise Untrusted(path, f"another user's (uid {facts.st_uid})",
                        f"delete the store ({root}: the next pack fills it again)")
    if facts.st_mode & _OTHERS_WRITE:
        raise Untrusted(path, "writable by other users",
                        f"chmod -R go-w {root} if no one else wrote to it, else delete "
                        "it (the next pack fills it again)")


def check_key_file(path: Path, fd: int) -> str:
    """Why the key file open as `fd` is not this user's secret ("" when it is): another
    user's, readable or writable by others (anyone who read it can forge the store's
    records), or in a folder others can write (they could put their own key there)."""
    if not posix_owners():
        return ""
    facts = os.fstat(fd)
    if facts.st_uid != os.getuid():
        return f"another user's (uid {facts.st_uid})"
    if facts.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return "readable or writable by other users"
    folder = path.parent.stat()
    if folder.st_uid != os.getuid() or folder.st_mode & _OTHERS_WRITE:
        return f"in a folder other users can write ({path.parent})"
    return ""


def make_folder(path: Path, mode: int = FOLDER_MODE) -> None:
    """`path` and any missing folder above it, made with `mode` (never more than the
    umask allows, and never group- or world-writable whatever the umask)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, mode & ~_OTHERS_WRITE)


def write_record(path: Path, data: object) -> None:
    """Write `data` as JSON to `path` as every store record is written: its folder made
    as make_folder makes it, a complete temporary file beside it (named `.<name>.*`)
    renamed over it, so a reader sees the old record or the new one, never half.
    OSError as the file system raises it; the temporary file is not left behind."""
    make_folder(path.parent)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(json_bytes(data))
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def make_top_folders(root: Path) -> None:
    """The store's folders, made this user's and 0755 (see TOP_FOLDERS); a store that
    cannot be written is still read (its writes warn later)."""
    with contextlib.suppress(OSError):
        for name in TOP_FOLDERS:
            make_folder(root / name)
