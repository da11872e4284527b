"""Relative paths that name places inside a bundle: the one rule for what stays inside,
and the one rule for names Windows can hold (reserved names, trailing dots and spaces,
forbidden characters, bidirectional controls, case twins, path length).

A spec's entry and runtime folder, a recipe's `as` names and a manifest's file paths
all name places inside the bundle; each must stay inside it on Windows and elsewhere.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

# Names Windows cannot give a file or folder, whatever the extension.
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                     *(f"LPT{i}" for i in range(1, 10))}
# Characters Windows does not allow in a name (the separators, and what it reserves).
_WINDOWS_FORBIDDEN = frozenset('<>:"/\\|?*') | frozenset(map(chr, range(32)))
# Bidirectional controls: a name holding one is shown as another ("gpj.exe" as an
# image): Windows holds it, but no bundle should ship one.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")
# Windows' MAX_PATH: a whole path, drive and folders above the bundle included, is
# shorter; a path inside a bundle that alone reaches it can never be opened there.
MAX_PATH = 260
WINDOWS_NAME_HINT = ("rename it: Windows names cannot be CON, PRN, AUX, NUL, COM1-9 or "
                     "LPT1-9 (whatever the extension), end in '.' or a space, hold "
                     '<>:"/\\|?* or a bidirectional control, or differ only in case')
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
    return not windows_name_problem(part)


def windows_name_problem(part: str) -> str:
    """Why Windows cannot hold (or would show falsely) a file or folder named `part`;
    "" when it can. The one rule for names in a bundle: spec paths, archive members and
    the app folder's files are all held to it."""
    if not is_unicode(part):
        return (f"it is not valid UTF-8 (raw bytes, shown as '{shown_name(part)}'), "
                "which no Windows name holds")
    if part.endswith((".", " ")):
        return "it ends in a dot or a space, which Windows drops from names"
    if part.split(".")[0].rstrip(" ").upper() in _WINDOWS_RESERVED:
        return (f"{part.split('.')[0].rstrip(' ')!r} is a device name Windows reserves, "
                "whatever the extension")
    bad = next((c for c in part if c in _WINDOWS_FORBIDDEN), "")
    if bad:
        return f"it holds {bad!r}, which Windows does not allow in a name"
    control = next((c for c in part if c in BIDI_CONTROLS), "")
    if control:
        return (f"it holds the bidirectional control U+{ord(control):04X}, which makes a "
                "name show as another")
    return ""


def windows_fold(name: str) -> str:
    """`name` as Windows compares names (case-insensitively, one character for one, as
    NTFS's upcase table does: 'ß' stays itself, unlike str.casefold)."""
    return "".join(u if len(u := c.upper()) == 1 else c for c in name)


def windows_path_length(relpath: str) -> int:
    """A path's length as Windows counts it (UTF-16 code units)."""
    return len(relpath.encode("utf-16-le", "surrogatepass")) // 2


def is_unicode(name: str) -> bool:
    """Whether `name` is text: a file name of bytes that are not UTF-8 (Linux keeps them
    as lone surrogates) cannot go into a zip, a manifest or a Windows folder."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """`name` printable: the bytes that are not UTF-8 as \\xff escapes (a lone UTF-16
    surrogate, from Windows, as \\ud800)."""
    if is_unicode(name):
        return name
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("ascii")


def case_twin(names: Iterable[str]) -> tuple[str, str] | None:
    """Two of `names` that Windows takes for one name (they differ only in case), or
    None. An exact duplicate is not a twin."""
    seen: dict[str, str] = {}
    for name in names:
        first = seen.setdefault(windows_fold(name), name)
        if first != name:
            return first, name
    return None


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
