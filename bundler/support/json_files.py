"""JSON files bundler writes (manifest, lock) and reads back: one byte format, and a
reader that refuses what is not a small JSON file instead of reading it whole (or
waiting on a pipe, or failing inside the parser on values nested too deeply)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bundler.errors import BundlerError
from bundler.support.regular_files import NOT_REGULAR, NotARegularFile, open_regular


def json_bytes(data: Any) -> bytes:
    """Sorted keys, two-space indent, a final newline: equal data gives equal bytes."""
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def read_json(path: Path, max_bytes: int, error: type[BundlerError], hint: str,
              what: str = "not valid JSON") -> Any:
    """The JSON in `path`; `error` (with `hint`) if it is not a regular file of at most
    `max_bytes` holding UTF-8 JSON (`what` says what it then is not)."""
    try:
        with open_regular(path) as handle:
            raw = handle.read(max_bytes + 1)
    except NotARegularFile:
        raise error(f"{path}: {NOT_REGULAR}, so not a file bundler wrote", hint) from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})", hint) from None
    if len(raw) > max_bytes:
        raise error(f"{path}: larger than {max_bytes >> 20} MiB, so not a file bundler wrote",
                    hint)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise error(f"{path}: {what} ({beyond_parser_limits(exc) or exc})", hint) from None


def beyond_parser_limits(exc: BaseException) -> str:
    """What a JSON or TOML parser's RecursionError or ValueError says when the text
    is beyond what Python parses (values nested thousands deep, an integer of thousands
    of digits), in words for the user; "" for any other parse error. No file bundler
    reads or writes comes near either limit."""
    if isinstance(exc, RecursionError):
        return "values nested too deeply to read"
    if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
        return "a number with more digits than Python reads"
    return ""
