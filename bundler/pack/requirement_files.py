"""The pip requirements files an embedded-python spec asks for: the one app.requirements
names and every file it names with `-r` / `-c` (`--requirement`, `--constraint`),
followed recursively, as pip reads them.

The lock records each by its sha256 (spec_record), so an edited nested file is a spec
change like an edited top file: followed by a pack, refused under --locked, and the
reason the wheels the lock names are resolved again.

Each file is decoded as pip decodes it (pip's `auto_decode`): by its byte-order mark
(UTF-8, UTF-16 as PowerShell 5's `pip freeze > requirements.txt` writes it, UTF-32),
else by a `# coding: NAME` line among the first two, else as UTF-8. The resolver (uv)
decodes the same marks (measured: UTF-8 with and without a BOM, UTF-16 with one,
nested -r / -c files too), but fails on a --find-links folder that does not exist,
where pip warns and goes on: it is handed UTF-8 copies decoded here, one decoder for
the record and the resolve (`resolver_copies`). bundler also reads the files for the
lock's record, the `--hash` pins it checks the downloaded wheels against (uv resolves
without checking them) and the options that say where wheels come from.
"""

from __future__ import annotations

import codecs
import re
import sys
from pathlib import Path

from bundler.errors import SpecError
from bundler.support.hashing import sha256_file
from bundler.support.regular_files import NotARegularFile, TooLarge, read_bounded

# A nested file on a line of its own: `-r base.txt`, `-rbase.txt`, `--requirement=base.txt`,
# `-c cons.txt`, `--constraint cons.txt` (pip's own spellings).
_NESTED = re.compile(r"^(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+|(?<=[rc]))(\S+)")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_CODING = re.compile(rb"coding[:=]\s*([-\w.]+)")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
_PROJECT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_HASH = re.compile(r"--hash[=\s]\s*sha256:([0-9a-fA-F]{64})")
NOT_HASHED = "not hashed (a URL: pip fetches it on every resolve)"
# pip sets no bound; a file of --hash pins for hundreds of wheels is some 100 kB.
MAX_REQUIREMENTS_BYTES = 16 << 20
# The options of a requirements file that say where wheels come from.
SOURCE_OPTIONS = ("-i", "--index-url", "--extra-index-url", "--no-index", "-f",
                  "--find-links", "--trusted-host")


def decode_requirements(data: bytes) -> str:
    """A requirements file's text, decoded as pip decodes it."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom):].decode(encoding, "replace")
    for line in data.split(b"\n")[:2]:
        coding = _CODING.search(line) if line[:1] == b"#" else None
        if coding:
            try:
                return data.decode(coding.group(1).decode("ascii"), "replace")
            except LookupError:
                break
    return data.decode("utf-8", "replace")


def read_requirements(file: Path) -> bytes:
    """The bytes of a requirements file through the bounded reader: a pipe, a device
    (a link to /dev/zero) or a file over 16 MiB is refused naming it, never waited on or
    read whole."""
    try:
        return read_bounded(file, MAX_REQUIREMENTS_BYTES)
    except (NotARegularFile, TooLarge) as exc:
        raise SpecError(f"{file}: {exc.strerror}, so not a requirements file",
                        "give the path of a pip requirements file") from None


def requirement_lines(file: Path) -> list[str]:
    """The logical lines of `file`: decoded, lines ending in a backslash joined, comments
    removed, blank lines left out, as pip's parser sees them."""
    text = decode_requirements(read_requirements(file))
    joined = re.sub(r"\\\r?\n", " ", text)
    return [line for line in (_COMMENT.sub("", raw).strip() for raw in joined.splitlines())
            if line]


def nested_files(requirements: Path) -> dict[str, str]:
    """Each file `requirements` names with -r / -c, recursively, by its path relative to
    `requirements`' folder (with '/') -> its sha256; a URL pip would fetch -> NOT_HASHED.
    The top file itself is not in it (the spec record holds its hash)."""
    found: dict[str, str] = {}
    _follow(requirements, requirements.parent, found, {requirements.resolve()})
    return found


def all_files(requirements: Path) -> list[Path]:
    """The top file and every local file it names with -r / -c, recursively, each once."""
    return [requirements, *_follow(requirements, requirements.parent, {},
                                   {requirements.resolve()})]


def _follow(file: Path, top: Path, found: dict[str, str], seen: set[Path]) -> list[Path]:
    files: list[Path] = []
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
        files.append(nested)
        files.extend(_follow(nested, top, found, seen))
    return files


def _named(file: Path) -> list[str]:
    """The -r / -c arguments of `file`."""
    return [match.group(1) for line in requirement_lines(file)
            if (match := _NESTED.match(line))]


def hash_pins(requirements: Path) -> dict[str, set[str]] | None:
    """`--hash=sha256:` pins of the requirement lines in every file, by project
    (normalized); None where none has one and no file says --require-hashes. As with
    pip, once any line has a hash (or a file --require-hashes) every wheel installed
    must match a pin of its project."""
    pins: dict[str, set[str]] = {}
    required = False
    for file in all_files(requirements):
        for line in requirement_lines(file):
            required = required or line.split()[0] == "--require-hashes"
            project = _PROJECT.match(line) if not line.startswith("-") else None
            hashes = _HASH.findall(line)
            if project and hashes:
                name = normalize(project.group(1))
                pins.setdefault(name, set()).update(h.lower() for h in hashes)
    return pins if pins or required else None


def source_options(requirements: Path) -> list[str]:
    """The lines of every requirements file that say where wheels come from (the index,
    extra indexes, --find-links made absolute from the folder of the file naming them),
    for fetching exact pins."""
    kept = []
    for file in all_files(requirements):
        for line in requirement_lines(file):
            words = line.replace("=", " ", 1).split() if line.startswith("--") else \
                line.split()
            if not words or words[0] not in SOURCE_OPTIONS:
                continue
            if words[0] in ("-f", "--find-links") and len(words) > 1 \
                    and not _URL.match(words[1]):
                words[1] = str(file.parent / words[1])
            kept.append(" ".join(words) + "\n")
    return kept


def resolver_copies(requirements: Path, folder: Path) -> Path:
    """The requirement files as the resolver reads them: each local file (the top one
    and every -r / -c file, recursively) copied as UTF-8 into its own folder below
    `folder` under its own name, a -r / -c naming it rewritten to the copy, a local
    --find-links made absolute from the folder of the file naming it (one that does
    not exist left out with a warning, as pip warns and goes on: uv would fail), a
    local path requirement made absolute from the top file's folder (pip's working
    directory here). Returns the top file's copy."""
    files = all_files(requirements)
    copies = {file.resolve(): folder / str(number) / file.name
              for number, file in enumerate(files)}
    for file in files:
        lines = []
        for line in requirement_lines(file):
            words = (line.replace("=", " ", 1).split() if line.startswith("--")
                     else line.split())
            nested = _NESTED.match(line)
            if nested and not _URL.match(nested.group(1)):
                option = "-r" if line.startswith(("-r", "--requirement")) else "-c"
                line = f"{option} {copies[(file.parent / nested.group(1)).resolve()]}"
            elif words[0] in ("-f", "--find-links") and len(words) > 1 \
                    and not _URL.match(words[1]):
                local = file.parent / words[1]
                if not local.is_dir():
                    print(f"bundler: warning: {file}: --find-links {words[1]}: {local} "
                          "is no folder, ignored (as pip does)", file=sys.stderr)
                    continue
                line = f"--find-links {local.resolve()}"
            elif line.startswith("."):
                line = str((requirements.parent / words[0]).resolve()) + \
                    line[len(words[0]):]
            lines.append(line + "\n")
        copy = copies[file.resolve()]
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text("".join(lines), encoding="utf-8")
    return copies[requirements.resolve()]


def normalize(project: str) -> str:
    """A project's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", project).lower()


def _relative(path: Path, top: Path) -> str:
    try:
        return path.relative_to(top).as_posix()
    except ValueError:
        return path.as_posix()   # outside the top file's folder: as the file names it
