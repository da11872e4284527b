"""A pinned wheel the pack takes from the runtime store, without the wheel.

Where a recipe's pinned wheel is neither given nor in the wheel cache, but the store's
record under its pin (store/pins.py) lists every member this pack takes and the store
holds each of them, the pack takes them from the store (reuse.py proves each object's
bytes, by hash or by its sealed stamp record) and fetches nothing, `--offline` too.
Should the store not prove them after all (an object damaged, or removed by another
pack's cap between this pack's look and its link), the stage asks this source for
the members' bytes: it then fetches the wheel as a pack without the record would
(`--offline` refuses, naming the wheel) and is that wheel from then on.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources.base import Source
from bundler.pack.store.store import SourceRecord
from bundler.recipe.model import SourceSpec


class StoredWheel(Source):
    """The store's members of a pinned wheel; the wheel itself once it must be read."""

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str], record: SourceRecord,
                 fetch: Callable[[], Source]) -> None:
        super().__init__(spec, location, origin, takes)
        self._record = record
        self._fetch = fetch
        self._wheel: Source | None = None

    def stored_record(self) -> SourceRecord | None:
        return self._record if self._wheel is None else None

    def _read(self) -> Source:
        """The wheel, fetched now: the store did not prove its members after all."""
        if self._wheel is None:
            print(f"bundler: the runtime store no longer proves every file of source "
                  f"'{self.id}' ({self.spec.package}=={self.spec.version}): getting its "
                  "wheel", file=sys.stderr)
            self._wheel = self._fetch()
            self.location, self.origin = self._wheel.location, self._wheel.origin
        return self._wheel

    def sweep(self) -> Iterator[tuple[str, Iterator[bytes]]]:
        return self._read().sweep()

    def sweeps(self, workers: int) -> list[Iterator[tuple[str, Iterator[bytes]]]]:
        return self._read().sweeps(workers)

    def size(self, member: str) -> int:
        return self._read().size(member)

    def confirm(self, member: str, sha256: str) -> None:
        if self._wheel is not None:
            self._wheel.confirm(member, sha256)
        elif self._record.members.get(member) != sha256:
            raise SourceError(f"source '{self.id}': the runtime store's {member} is not "
                              "the file its record names", "run the pack again: the "
                              "wheel is then fetched")

    def identity(self, member_hashes: Mapping[str, str]) -> str:
        return self._read().identity(member_hashes)

    def identity_by_hashing(self) -> str:
        # No input to hash: a previous bundle's files are not taken on a record alone.
        return self._wheel.identity_by_hashing() if self._wheel is not None else ""

    def fingerprint(self) -> str:
        return self._wheel.fingerprint() if self._wheel is not None else ""

    def stat_key(self) -> str:
        return self._wheel.stat_key() if self._wheel is not None else ""

    def member_crc(self, member: str) -> tuple[int, int] | None:
        return self._wheel.member_crc(member) if self._wheel is not None else None

    def close(self) -> None:
        if self._wheel is not None:
            self._wheel.close()
