"""Atomic output: build the bundle beside its target, swap it in only when complete.

Any failure before the swap leaves the previous bundle byte-for-byte as it was.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bundler.errors import RefusedError


def refuse_unsafe_target(target: Path, protected: list[Path], markers: tuple[str, ...]) -> None:
    """Refuse a target that holds the user's own files: we would replace it whole.
    A bundle made by bundler has a file matching one of `markers` (globs)."""
    target = target.resolve()
    for folder in protected:
        folder = folder.resolve()
        if target == folder or target in folder.parents:
            raise RefusedError(f"{target}: the output folder would replace {folder}",
                               "choose another --out (default: dist/<app name> beside the "
                               "spec)")
    if target.exists() and any(target.iterdir()) and not any(
            path.is_file() for marker in markers for path in target.glob(marker)):
        raise RefusedError(f"{target}: exists and is not a bundle made by bundler "
                           f"(no {markers[0]}); refusing to replace it",
                           "choose another --out, or remove the folder yourself")


@contextmanager
def staged_output(target: Path) -> Iterator[Path]:
    """Yield a fresh staging folder; on success swap it into `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap(staging, target)


def _swap(staging: Path, target: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.replace(target, retired / target.name)
    try:
        os.replace(staging, target)
    except OSError:
        os.replace(retired / target.name, target)  # put the previous bundle back
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(retired, ignore_errors=True)
