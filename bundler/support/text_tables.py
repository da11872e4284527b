"""Plain-text tables and sizes for the readable (non --json) output of the commands."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def human_size(num: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if num < 1024 or unit == "GiB":
            return f"{num:.0f} {unit}" if unit == "B" else f"{num:.1f} {unit}"
        num /= 1024
    raise AssertionError("unreachable")


def format_table(headers: Sequence[str], rows: Iterable[Sequence[object]],
                 indent: str = "  ", show_headers: bool = True) -> list[str]:
    """Columns padded to their widest cell; the last column is left ragged."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells if show_headers else cells[1:]:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths)]
        lines.append((indent + "  ".join(padded + row[-1:])).rstrip())
    return lines
