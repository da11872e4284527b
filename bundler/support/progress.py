"""Progress bars for long work (hashing, extracting, copying hundreds of MB).

Shown only on an interactive terminal: CI logs and pipes stay quiet.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from tqdm import tqdm

_SILENT = {"on": False}   # inside silenced(): a --json run


def _wanted() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI") and not os.environ.get(
        "BUNDLER_NO_PROGRESS") and not _SILENT["on"]


@contextlib.contextmanager
def silenced(on: bool = True) -> Iterator[None]:
    """No bars while inside, when `on` (a --json run: its stderr carries warnings only,
    its stdout one document)."""
    before = _SILENT["on"]
    _SILENT["on"] = before or on
    try:
        yield
    finally:
        _SILENT["on"] = before


def interactive() -> bool:
    """Whether long work should show progress (a terminal, not CI, not switched off)."""
    return _wanted()


def byte_progress(total: int, description: str) -> tqdm:
    return tqdm(total=total, desc=description, unit="B", unit_scale=True,
                unit_divisor=1024, disable=not _wanted(), leave=False, file=sys.stderr)


def line_progress(description: str) -> tqdm:
    """A running count for work of unknown length, e.g. lines of a child's log."""
    return tqdm(desc=description, unit=" lines", disable=not _wanted(), leave=False,
                file=sys.stderr)
