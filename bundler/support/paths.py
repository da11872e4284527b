"""Relative paths that name places inside a bundle: the one rule for what stays inside.

A spec's entry and runtime folder, a recipe's `as` names and a manifest's file paths
all name places inside the bundle; each must stay inside it on Windows and elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import PurePosixPath

# Names Windows cannot give a file or folder, whatever the extension.
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                     *(f"LPT{i}" for i in range(1, 10))}
_DRIVE = re.compile(r"^[A-Za-z]:")


def is_inside_relative(relpath: str) -> bool:
    """A non-empty relative path with forward slashes that stays inside its folder: no
    absolute path, no drive, no backslash, no '..'."""
    if not relpath or "\\" in relpath or ":" in relpath or "\0" in relpath:
        return False
    posix = PurePosixPath(relpath)
    return not posix.is_absolute() and ".." not in posix.parts and bool(posix.parts)


def escapes(value: str) -> bool:
    """Whether a user-written path (either slash) leaves its folder."""
    posix = PurePosixPath(value.replace("\\", "/"))
    return posix.is_absolute() or bool(_DRIVE.match(value)) or ".." in posix.parts


def is_bare_file_name(name: str) -> bool:
    """No folder part on either platform: no separators, no drive (or stream) colon."""
    return bool(name) and not any(c in name for c in "/\\:\0") and name not in (".", "..")


def windows_can_name(part: str) -> bool:
    """Whether Windows can give a file or folder this name."""
    return not (part.endswith((".", " ")) or part.split(".")[0].upper() in _WINDOWS_RESERVED)


def remove_tree(folder: str | os.PathLike[str]) -> None:
    """Remove a folder and everything in it, leaving nothing it can help.

    Runtime files linked from the runtime store are read-only, and Windows refuses to
    delete a read-only file: clear the mark and retry. (On Windows the mark belongs to
    the file, so the store's copy loses it too; the store re-hashes whatever it hands
    out, so that costs no safety.)"""
    def clear_and_retry(function: Callable[[str], object], name: str, _info: object) -> None:
        try:
            os.chmod(name, stat.S_IWRITE | stat.S_IREAD)
            function(name)
        except OSError:
            pass   # what still cannot go (an app holding it open) is left, as before

    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=clear_and_retry)
    else:
        shutil.rmtree(folder, onerror=clear_and_retry)
