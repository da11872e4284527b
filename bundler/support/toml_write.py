"""Writing TOML: the few shapes bundler generates (rendered recipes, the release catalogue).

Deterministic by construction: keys in the order given, one spelling per value, so the
same data always gives the same bytes (a rendered recipe's sha256 is pinned by locks).
Standard library only: the catalogue's generator runs without bundler's dependencies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_WRAP = 90   # a list longer than this is written one item per line


def dumps(document: Mapping[str, Any]) -> str:
    """TOML text for `document`: scalars and lists of scalars or inline tables first,
    then sub-tables ([a.b]) and arrays of tables ([[a]]), each in the order given."""
    lines: list[str] = []
    _table(document, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(table: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    nested = []
    for key, value in table.items():
        if isinstance(value, Mapping) or _is_table_array(value):
            nested.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_value(value, len(_key(key)) + 3)}")
    for key, value in nested:
        if isinstance(value, Mapping):
            if all(isinstance(v, Mapping) for v in value.values()) and value:
                _table(value, [*path, key], lines)   # only sub-tables: no header of its own
                continue
            lines += ["", f"[{'.'.join(_key(p) for p in [*path, key])}]"]
            _table(value, [*path, key], lines)
        else:
            for item in value:
                lines += ["", f"[[{'.'.join(_key(p) for p in [*path, key])}]]"]
                _table(item, [*path, key], lines)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping)
                                                           for v in value)


def _key(key: str) -> str:
    bare = key.replace("_", "").replace("-", "").isalnum() and key.isascii()
    return key if bare else _string(key)


def toml_string(text: str) -> str:
    """A TOML basic string for any text: JSON's escapes are valid TOML escapes, and
    DEL, which JSON leaves bare but TOML forbids there, is escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


_string = toml_string


def _value(value: Any, indent: int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v, 0)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        items = [_value(v, 0) for v in value]
        one_line = "[" + ", ".join(items) + "]"
        if indent + len(one_line) <= _WRAP:
            return one_line
        return "[\n" + "".join(f"    {item},\n" for item in items) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")
