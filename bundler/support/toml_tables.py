"""Reading TOML files strictly: unknown keys, wrong types and missing keys are errors.

Spec and recipe loading share this so both report problems the same way: the file,
the dotted key, what was expected and what was found.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any, TypeVar

from bundler.errors import BundlerError
from bundler.support.json_files import beyond_parser_limits
from bundler.support.regular_files import NOT_REGULAR, NotARegularFile, open_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on older Pythons only
    import tomli as tomllib

T = TypeVar("T")

# Specs and recipes are a few KiB; no input to bundler is a TOML file of megabytes.
MAX_TOML_BYTES = 1 << 20
# No string a spec or recipe holds (names, paths, versions) is longer.
MAX_STRING = 1024
_BOM = b"\xef\xbb\xbf"

_TYPE_NAMES = {str: "a string", bool: "true or false", int: "an integer", list: "a list",
               dict: "a table"}


def load_toml(path: Path, error: type[BundlerError], what: str) -> dict[str, Any]:
    """Parse `path`; any failure is raised as `error` naming the file."""
    return load_toml_bytes(path, error, what)[0]


def load_toml_bytes(path: Path, error: type[BundlerError], what: str
                    ) -> tuple[dict[str, Any], bytes]:
    """Parse `path` and return its bytes too, from one read (for callers that hash it).
    Only a regular file of at most MAX_TOML_BYTES is read (never a device or a pipe);
    a UTF-8 byte-order mark (Windows Notepad) is allowed."""
    raw = _read_capped(path, error, what)
    text = raw[len(_BOM):] if raw.startswith(_BOM) else raw
    try:
        return tomllib.loads(text.decode("utf-8")), raw
    except UnicodeDecodeError as exc:
        raise error(f"{path}: cannot read {what}: not UTF-8 text ({exc})",
                    f"save the {what} as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}",
                    f"fix the syntax of the {what}") from None
    except (RecursionError, ValueError) as exc:   # tomllib lets these through
        if not beyond_parser_limits(exc):
            raise
        raise error(f"{path}: cannot read {what}: {beyond_parser_limits(exc)}",
                    f"fix the {what}: no {what} needs that") from None


def parse_toml_text(text: str, label: Path, error: type[BundlerError]) -> dict[str, Any]:
    """Parse TOML text bundler generated itself (a rendered recipe)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{label}: not valid TOML: {exc}", "report this: bundler wrote it") \
            from None


def _read_capped(path: Path, error: type[BundlerError], what: str) -> bytes:
    if "\0" in str(path):
        raise error(f"{shown(str(path))}: a path cannot contain a NUL character",
                    f"check the path of the {what}")
    try:
        with open_regular(path) as handle:
            raw = handle.read(MAX_TOML_BYTES + 1)
    except NotARegularFile:
        raise error(f"{path}: {NOT_REGULAR}", f"give the path of the {what} file") from None
    except FileNotFoundError:
        raise error(f"{path}: no such {what} file",
                    f"check the path; a {what} is a TOML file") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}",
                    "check the file") from None
    if len(raw) > MAX_TOML_BYTES:
        raise error(f"{path}: larger than {MAX_TOML_BYTES >> 10} KiB, so not a {what}",
                    f"give the path of the {what} file")
    return raw


def shown(value: object, limit: int = 80) -> str:
    """`value` as a message shows it: its repr, cut short (a 50 MB name is one line)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class Table:
    """A view of one TOML table that checks each key as it is taken.

    Call `done()` once all known keys were taken: whatever is left is unknown,
    which is almost always a typo the user wants to hear about.
    """

    def __init__(self, data: dict[str, Any], path: Path, where: str,
                 error: type[BundlerError], reference: str = "") -> None:
        self._data = dict(data)
        self._asked: list[str] = []   # every key looked for: the known ones
        self.path = path
        self.where = where
        self.error = error
        self.reference = reference    # the page documenting this file's keys

    def _fail(self, message: str, hint: str) -> BundlerError:
        return self.error(f"{self.path}: {message}", hint)

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def take(self, key: str, kind: type[T], default: Any = ...) -> T:
        self._asked.append(key)
        if key not in self._data:
            if default is ...:
                misspelt = self._closest(key, [k for k in self._data if k not in self._asked])
                if misspelt:  # `recipie = ...` is a typo of the required key, say so
                    raise self._unknown([misspelt], {misspelt: key}, complete=False)
                raise self._fail(f"missing required key '{self._key(key)}'",
                                 f"add {self._key(key)} = ... ({_TYPE_NAMES[kind]})")
            return default
        value = self._data.pop(key)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self._fail(
                f"'{self._key(key)}' must be {_TYPE_NAMES[kind]}, not {shown(value)}",
                f"write {self._key(key)} as {_TYPE_NAMES[kind]}")
        if isinstance(value, str):
            self._check_string(key, value)
        return value

    def _check_string(self, key: str, value: str) -> None:
        if "\0" in value:
            raise self._fail(f"'{self._key(key)}' = {shown(value)} contains a NUL character",
                             "remove it: no name or path can hold one")
        if len(value) > MAX_STRING:
            raise self._fail(f"'{self._key(key)}' = {shown(value)} is longer than "
                             f"{MAX_STRING} characters", "shorten it")

    def take_str_list(self, key: str, default: list[str] | None = None) -> list[str]:
        values = self.take(key, list, default if default is not None else ...)
        for value in values:
            if not isinstance(value, str):
                raise self._fail(f"'{self._key(key)}' must be a list of strings, "
                                 f"found {shown(value)}", "quote each entry")
            self._check_string(key, value)
        return list(values)

    def table(self, key: str, required: bool = True) -> Table:
        data = self.take(key, dict, ... if required else {})
        return Table(data, self.path, self._key(key), self.error, self.reference)

    def tables(self, key: str) -> dict[str, Table]:
        """A table of tables, e.g. [components.core], [components.ops_infer]."""
        parent = self.table(key, required=False)
        return {name: parent.table(name) for name in parent.names()}

    def names(self) -> list[str]:
        return list(self._data)

    def done(self) -> None:
        if self._data:
            unknown = sorted(self._data)
            raise self._unknown(unknown, {k: self._closest(k, self._asked) for k in unknown})

    @staticmethod
    def _closest(key: str, candidates: list[str]) -> str:
        close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.75)
        return close[0] if close else ""

    def _unknown(self, keys: list[str], guesses: dict[str, str],
                 complete: bool = True) -> BundlerError:
        """Every unknown key, each with the known key it is closest to. `complete`: every
        known key has been asked for, so the hint can list them."""
        named = ", ".join(f"'{self._key(k)}'" + (f" (did you mean '{guesses[k]}'?)"
                                                  if guesses.get(k) else "") for k in keys)
        where = f" in [{self.where}]" if self.where else ""
        hint = (f"the keys{where} are: {', '.join(sorted(set(self._asked)))}" if complete
                else "fix the key's spelling")
        if self.reference:
            hint += f" (see {self.reference})"
        return self._fail(f"unknown key{'s' if len(keys) > 1 else ''} {named}", hint)
