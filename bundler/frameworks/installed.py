"""The distributions installed in an app's site-packages, read as files no one vouches for.

`importlib.metadata` reads METADATA, RECORD and the rest with a plain `read_text`: a
named pipe (FIFO) left as a dist-info's METADATA blocks it for ever, a link to /dev/zero
reads until memory runs out. Here every such file goes through the bounded reader
(support/regular_files.py): a file that is not a regular file, or is larger than any
METADATA or RECORD pip writes (16 MiB, the bound wheels' own are held to), stops the
command with exit 2 naming it. A missing file is missing, as importlib says.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from importlib import metadata
from pathlib import Path

from bundler.errors import CheckError
from bundler.support.regular_files import NotARegularFile, TooLarge, read_bounded

MAX_METADATA_BYTES = 16 << 20
_SUFFIXES = (".dist-info", ".egg-info")


class BoundedDistribution(metadata.PathDistribution):
    """A PathDistribution whose files are read with the bounded reader."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)   # type: ignore[arg-type]
        self.where = path

    def read_text(self, filename: str | os.PathLike[str]) -> str | None:
        path = self.where / filename if str(filename) else self.where
        if not str(filename) and path.is_dir():
            return None   # importlib's last resort: the folder itself holds no text
        try:
            return read_bounded(path, MAX_METADATA_BYTES).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return None
        except (NotARegularFile, TooLarge) as exc:
            raise CheckError(f"{path}: {exc.strerror}, so not a file pip installed",
                             f"reinstall the package {self.where.name} describes, or "
                             "remove it from the app folder") from None


def installed(folders: Iterable[Path]) -> Iterator[BoundedDistribution]:
    """Each *.dist-info / *.egg-info in `folders`, in the folders' order, each folder's
    entries sorted by name (what importlib.metadata.distributions(path=...) finds)."""
    for folder in folders:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.lower().endswith(_SUFFIXES):
                yield BoundedDistribution(Path(folder) / name)
