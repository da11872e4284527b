"""A bundle's files as verify and doctor read them: never through a link.

A bundle is what pack wrote: regular files in folders. A link in it (a symbolic link, or
on Windows a junction) is something added afterwards, and following it would make
verify vouch for what is outside the bundle: a runtime library replaced by a link chain
to an identical file elsewhere would hash "ok", and an embedded bundle's `python/`
linked to `/` would make verify walk the whole file system. So every path is checked
component by component without following links (lstat), a file's size is compared with
the manifest's before it is hashed (a 200 GB sparse file is not read), and a walk lists
each link it meets — to a file, a folder, nothing (dangling) or itself (a loop) — as a
finding instead of entering it.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

MISSING = "missing"
RESIZED = "resized"   # a file of another size than the manifest's: changed, not read
# Windows: the reparse tags of a symbolic link and of a junction (a mount point). Other
# reparse points (OneDrive placeholders, deduplicated files) are files, not links.
_LINK_TAGS = (0xA000000C, 0xA0000003)
_SHOWN = 120             # characters of a link's target shown in a finding


def is_link(facts: os.stat_result) -> bool:
    return stat.S_ISLNK(facts.st_mode) or getattr(facts, "st_reparse_tag", 0) in _LINK_TAGS


def describe_link(path: Path) -> str:
    """What a link is, in words: "a link to /etc", "a link to nothing (…)", "a link loop"."""
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    shown = target if len(target) <= _SHOWN else target[:_SHOWN] + "..."
    try:
        os.stat(path)
    except FileNotFoundError:
        return f"a link to nothing ({shown})"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"a link loop ({shown})"
        return f"a link to {shown} (unreadable)"
    return f"a link to {shown}"


def link_on_the_way(root: Path, relpath: str) -> str:
    """The first part of `relpath` below `root` that is a link (as a relative path), or
    "" if none is (or a part is missing: the caller finds that)."""
    current = root
    for part in PurePosixPath(relpath).parts:
        current = current / part
        try:
            facts = os.lstat(current)
        except OSError:
            return ""
        if is_link(facts):
            return current.relative_to(root).as_posix()
    return ""


def file_state(root: Path, relpath: str, size: int | None = None) -> str:
    """"" if `root`/`relpath` is a regular file, reached through no link, of `size`
    bytes (when given); MISSING if nothing is there; RESIZED for a file of another size;
    else what is there instead."""
    link = link_on_the_way(root, relpath)
    if link:
        what = describe_link(root / link)
        return what if link == relpath else f"{link} is {what}"
    try:
        facts = os.lstat(root / relpath)
    except FileNotFoundError:
        return MISSING
    except OSError as exc:
        if exc.errno == errno.ENOTDIR:   # a file where one of its folders should be
            return MISSING
        return f"cannot be read: {exc.strerror}"
    if not stat.S_ISREG(facts.st_mode):
        return "not a regular file (a folder, device or pipe)"
    if size is not None and facts.st_size != size:
        return RESIZED
    return ""


def walk_files(root: Path, folder: str) -> Iterator[tuple[str, str]]:
    """(relative path, "" or what it is) for everything below `root`/`folder` that is
    not a folder: regular files with "", links (never entered) and other non-regular
    entries with what they are. Nothing if `folder` itself is a link or not a folder."""
    start = root / folder
    try:
        if is_link(os.lstat(start)) or not start.is_dir():
            return
    except OSError:
        return
    pending = [start]
    while pending:
        current = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = Path(entry.path)
            relpath = path.relative_to(root).as_posix()
            try:
                facts = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if is_link(facts):
                yield relpath, describe_link(path)
            elif stat.S_ISDIR(facts.st_mode):
                pending.append(path)
            elif stat.S_ISREG(facts.st_mode):
                yield relpath, ""
            else:
                yield relpath, "not a regular file (a device or pipe)"
