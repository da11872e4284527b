"""The pip requirements files an embedded-python spec asks for: the one app.requirements
names and every file it names with `-r` / `-c` (`--requirement`, `--constraint`),
followed recursively, as pip reads them.

The lock records each by its sha256 (spec_record), so an edited nested file is a spec
change like an edited top file: followed by a pack, refused under --locked, and the
reason the wheels the lock names are resolved again.
"""

from __future__ import annotations

import re
from pathlib import Path

from bundler.errors import SpecError
from bundler.support.hashing import sha256_file

# A nested file on a line of its own: `-r base.txt`, `-rbase.txt`, `--requirement=base.txt`,
# `-c cons.txt`, `--constraint cons.txt` (pip's own spellings).
_NESTED = re.compile(r"^(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+|(?<=[rc]))(\S+)")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
NOT_HASHED = "not hashed (a URL: pip fetches it on every resolve)"


def nested_files(requirements: Path) -> dict[str, str]:
    """Each file `requirements` names with -r / -c, recursively, by its path relative to
    `requirements`' folder (with '/') -> its sha256; a URL pip would fetch -> NOT_HASHED.
    The top file itself is not in it (the spec record holds its hash)."""
    found: dict[str, str] = {}
    _follow(requirements, requirements.parent, found, {requirements.resolve()})
    return found


def _follow(file: Path, top: Path, found: dict[str, str], seen: set[Path]) -> None:
    for name in _named(file):
        if _URL.match(name):
            found.setdefault(name, NOT_HASHED)
            continue
        nested = (file.parent / name)
        if not nested.is_file():
            raise SpecError(f"{file}: names {name} with -r/-c, but {nested} is no file",
                            "fix the path (pip reads it relative to the file naming it)")
        key = _relative(nested, top)
        if nested.resolve() in seen:
            continue   # pip would loop; the file is recorded once
        seen.add(nested.resolve())
        found[key] = sha256_file(nested, f"hashing {nested.name}")
        _follow(nested, top, found, seen)


def _named(file: Path) -> list[str]:
    """The -r / -c arguments of `file`, lines joined where they end in a backslash and
    comments removed, as pip's parser does."""
    text = file.read_text(encoding="utf-8", errors="replace")
    joined = re.sub(r"\\\r?\n", " ", text)
    names = []
    for line in joined.splitlines():
        match = _NESTED.match(_COMMENT.sub("", line).strip())
        if match:
            names.append(match.group(1))
    return names


def _relative(path: Path, top: Path) -> str:
    try:
        return path.relative_to(top).as_posix()
    except ValueError:
        return path.as_posix()   # outside the top file's folder: as the file names it
