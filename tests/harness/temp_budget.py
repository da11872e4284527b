"""What a test run leaves in the temp folder, against a budget.

The disk a run shares with other work fills when each run leaves its stores behind
(pytest keeps the folders of its last three runs by default: with a runtime store per
test that was 7-14 GB). pyproject.toml keeps only the failed tests' folders of the last
run; this module measures what a passing run left in the temp folder (its own pytest
folder, if any of it is left, and any entry the run created beside it) and the session
fails when that exceeds the budget (BUNDLER_TEMP_BUDGET_MB, 1024 by default), naming the
largest leftovers.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BUDGET_MB = 1024


def budget_bytes(environ: dict[str, str] | os._Environ[str]) -> int:
    value = environ.get("BUNDLER_TEMP_BUDGET_MB", "")
    return (int(value) if value.isdigit() else DEFAULT_BUDGET_MB) * 1024 * 1024


def entries(folder: Path) -> set[str]:
    try:
        return {entry.name for entry in os.scandir(folder)}
    except OSError:
        return set()


def size_of(path: Path) -> int:
    """Bytes a file or a folder holds (allocated blocks: a sparse file counts as what it
    takes on disk), without following links."""
    total = 0
    try:
        info = path.lstat()
    except OSError:
        return 0
    total += info.st_blocks * 512 if hasattr(info, "st_blocks") else info.st_size
    if path.is_dir() and not path.is_symlink():
        for root, dirs, files in os.walk(path):
            for name in dirs + files:
                try:
                    child = os.lstat(os.path.join(root, name))
                except OSError:
                    continue
                total += child.st_blocks * 512 if hasattr(child, "st_blocks") \
                    else child.st_size
    return total


@dataclass(frozen=True)
class Leftover:
    path: Path
    size: int


def leftovers(folder: Path, before: set[str], pytest_root: Path | None) -> list[Leftover]:
    """What the run left: the entries of `folder` that were not there at its start, and
    the run's own pytest folder if any of it is left, largest first."""
    found = [folder / name for name in sorted(entries(folder) - before)]
    if pytest_root is not None and pytest_root.exists() and pytest_root not in found:
        found.append(pytest_root)
    sized = [Leftover(path, size_of(path)) for path in found]
    return sorted(sized, key=lambda leftover: -leftover.size)


def over_budget(found: list[Leftover], budget: int) -> str:
    """"" when the leftovers fit the budget, else the line that says what does not."""
    total = sum(leftover.size for leftover in found)
    if total <= budget:
        return ""
    largest = ", ".join(f"{leftover.path} ({leftover.size // 2**20} MiB)"
                        for leftover in found[:5])
    return (f"the test run left {total // 2**20} MiB in the temp folder, over the budget of "
            f"{budget // 2**20} MiB (BUNDLER_TEMP_BUDGET_MB): {largest}")


def temp_folder() -> Path:
    return Path(tempfile.gettempdir())


def remove_tree(path: Path) -> None:
    """Remove a folder whatever its modes (the store makes its objects read-only)."""
    def writable_then_again(function: object, name: str, _: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(name), stat.S_IRWXU)
            os.chmod(name, stat.S_IRWXU)
            if os.path.isdir(name) and not os.path.islink(name):
                shutil.rmtree(name, ignore_errors=True)
            else:
                os.unlink(name)

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=writable_then_again)
    else:
        shutil.rmtree(path, onerror=writable_then_again)
