"""The "toolkit" and "folder" source kinds: a folder on disk, e.g. an installed CUDA."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources.base import Source
from bundler.recipe.model import FOLDER, TOOLKIT, SourceSpec
from bundler.support.file_stamps import stamp
from bundler.support.hashing import CHUNK, sha256_file


class FolderSource(Source):
    """A folder on disk, such as an installed CUDA toolkit."""

    reads = (TOOLKIT, FOLDER)

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str] = ()) -> None:
        super().__init__(spec, location, origin, takes)
        if not location.is_dir():   # a typo in the path is not a file given for a folder
            what = (f"source '{spec.id}' ({origin}) is not a folder" if location.exists()
                    else f"no such folder (source '{spec.id}', {origin})")
            raise SourceError(f"{location}: {what}", f"point [sources] {spec.id} at the folder")
        missing = [m for m in self.expected if not (location / m).is_file()]
        if missing:
            raise self._missing(missing, _folder_hint(spec))

    def sweep(self) -> Iterator[tuple[str, Iterator[bytes]]]:
        for member in sorted(self.takes):
            yield member, self._read(member)

    def _read(self, member: str) -> Iterator[bytes]:
        with open(self.location / member, "rb") as handle:
            while chunk := handle.read(CHUNK):
                yield chunk

    def size(self, member: str) -> int:
        return (self.location / member).stat().st_size

    def fingerprint(self) -> str:
        """The folder and each taken file's size, times and file id: any write to a file
        changes its change time, which (unlike mtime) no user call can set back
        (support/file_stamps.py, docs/store.md)."""
        lines = [f"folder\0{self.location.resolve()}"]
        for member in sorted(self.takes):
            size, mtime, ctime, file_id, device = stamp(self.location / member)
            lines.append(f"{member}\0{size}\0{mtime}\0{ctime}\0{file_id}\0{device}")
        return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()

    def identity_by_hashing(self) -> str:
        return self.identity({m: sha256_file(self.location / m) for m in self.takes})

    def identity(self, member_hashes: Mapping[str, str]) -> str:
        # A folder has no single file to hash: pin the files taken from it.
        lines = "".join(f"{m}\0{h}\n" for m, h in sorted(member_hashes.items()))
        return hashlib.sha256(lines.encode()).hexdigest()


def _folder_hint(spec: SourceSpec) -> str:
    if spec.source_kind is TOOLKIT and spec.env:
        return (f"this is not a complete CUDA toolkit of the recipe's version: install it, "
                f"or point {spec.id} (or {spec.env[0]}) at one that is")
    return "check the folder holds the recipe's files"
