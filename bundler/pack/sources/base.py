"""The interface every source kind implements; the pipeline sees only this."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.store.store import SourceRecord
from bundler.recipe.model import SourceKind, SourceSpec


class Source:
    """One opened input. Subclasses implement finding, checking and reading members.

    `takes`: the members the pack will take from it. Opening checks they are all there,
    with what the recipe lists as the source's contents (a recipe need not list them).
    """

    # The source kinds (recipe/model.py's records) this class reads: each kind has one.
    reads: tuple[SourceKind, ...] = ()

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str] = ()) -> None:
        self.spec = spec
        self.location = location
        self.origin = origin  # where the location came from: the spec, --source, an env var
        self.takes = frozenset(takes)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def expected(self) -> list[str]:
        """Every member the input must hold: its listed contents and what the pack takes."""
        listed = set(self.spec.contents)
        return [*self.spec.contents, *sorted(m for m in self.takes if m not in listed)]

    def sweep(self) -> Iterator[tuple[str, Iterator[bytes]]]:
        """Yield each member the pack takes with its bytes, in the input's own order, and
        check whatever else the input holds on the way (an archive's other members'
        CRCs): one pass that reads the input front to back, each byte once. Read each
        member's bytes to the end before asking for the next."""
        raise NotImplementedError

    def sweeps(self, workers: int) -> list[Iterator[tuple[str, Iterator[bytes]]]]:
        """The input's sweep cut into parts that may run at once, on up to `workers`
        threads, each like `sweep()` over its share of the members. By default one
        part: the whole sweep, in order."""
        return [self.sweep()]

    def size(self, member: str) -> int:
        raise NotImplementedError

    def confirm(self, member: str, sha256: str) -> None:
        """Check a member's bytes, as staged, against what the input itself records.

        The stage hashes each member as it writes it and passes the digest here, so a
        source that records hashes (a wheel's RECORD) checks them without hashing twice.
        """

    def identity(self, member_hashes: Mapping[str, str]) -> str:
        """A sha256 that changes whenever this input changes, for the lock."""
        raise NotImplementedError

    def fingerprint(self) -> str:
        """A cheap proof that this input is the one an earlier pack read (the store keys
        what it learned by it), or "" where there is none. Never reads member data."""
        return ""

    def stored_record(self) -> SourceRecord | None:
        """The store's record this input is taken by without opening any file (a pinned
        wheel the store holds, sources/stored_wheel.py), or None: the store is then
        asked by the input's fingerprint."""
        return None

    def member_crc(self, member: str) -> tuple[int, int] | None:
        """(CRC-32, size) the input itself records for a member, without reading it (a
        zip's central directory), or None: evidence a store record cannot change."""
        return None

    def stat_key(self) -> str:
        """The input file's size, times and file id: a later pack whose input differs in
        any of them proves the input's identity again ("" where the fingerprint already
        covers every write, as a folder's does)."""
        return ""

    def accepts_identity(self, identity: str) -> bool:
        """Whether an input of this identity may be used (a recipe's pin)."""
        return not self.spec.sha256 or identity == self.spec.sha256

    def identity_by_hashing(self) -> str:
        """The identity, from hashing the input without unpacking anything."""
        raise NotImplementedError

    def close(self) -> None:
        """Release open files."""

    def _missing(self, names: list[str], hint: str) -> SourceError:
        listed = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        return SourceError(f"{self.location}: source '{self.id}' ({self.origin}) lacks "
                           f"{len(names)} expected file(s): {listed}", hint)
