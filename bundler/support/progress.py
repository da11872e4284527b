"""Progress bars for long work (hashing, extracting, copying hundreds of MB).

Shown only on an interactive terminal: CI logs and pipes stay quiet.
"""

from __future__ import annotations

import os
import sys

from tqdm import tqdm


def _wanted() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI") and not os.environ.get(
        "BUNDLER_NO_PROGRESS")


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
