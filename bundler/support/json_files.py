"""JSON files bundler writes (manifest, lock) and reads back: one byte format, and a
reader that refuses what is not a small JSON file instead of reading it whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bundler.errors import BundlerError


def json_bytes(data: Any) -> bytes:
    """Sorted keys, two-space indent, a final newline: equal data gives equal bytes."""
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def read_json(path: Path, max_bytes: int, error: type[BundlerError], hint: str,
              what: str = "not valid JSON") -> Any:
    """The JSON in `path`; `error` (with `hint`) if it is not a regular file of at most
    `max_bytes` holding UTF-8 JSON (`what` says what it then is not)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})", hint) from None
    if len(raw) > max_bytes:
        raise error(f"{path}: larger than {max_bytes >> 20} MiB, so not a file bundler wrote",
                    hint)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise error(f"{path}: {what} ({exc})", hint) from None
