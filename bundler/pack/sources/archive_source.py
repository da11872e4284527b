"""The "archive" source kind: a zip such as NVIDIA's cuDNN download."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources.base import Source
from bundler.recipe.model import ARCHIVE, SourceSpec
from bundler.support.file_stamps import stamp
from bundler.support.hashing import PiggybackDigest, Pipe, sha256_file
from bundler.support.zip_decoders import DEFLATE64
from bundler.support.zip_reader import ZipArchive

# Below this size an archive is read in one pass on one lane (each byte read once): its
# inflating takes less than the threads and the second, hashing read would cost.
PARALLEL_FROM = 32 << 20
# From how many cores an archive is cut into parts. A deflate archive's one pass keeps
# 1.4-1.7 cores busy already (inflating, hashing and writing on threads of their own),
# so on 2 cores parts gain nothing. inflate64 is 2.5x slower than ISA-L and its thread
# sets the pace, so an archive mostly of Deflate64 (NVIDIA's legacy zips) is cut from 2
# cores on (docs/performance.md, "One archive on several cores").
PARALLEL_CORES = 4
DEFLATE64_PARALLEL_CORES = 2


class ArchiveSource(Source):
    """A zip such as NVIDIA's cuDNN download: members under a root folder."""

    reads = (ARCHIVE,)

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str] = ()) -> None:
        super().__init__(spec, location, origin, takes)
        self._archive = ZipArchive(location)
        self._prefix = f"{spec.root.strip('/')}/" if spec.root else ""
        missing = [m for m in self.expected if self._prefix + m not in self._archive.members]
        if missing:
            self.close()
            raise self._missing(missing, "this is not the archive the recipe expects, or it "
                                "is incomplete: download it again")
        # The file's own sha256 (lock, recipe pin) comes from the member reads: one pass.
        self._digest = PiggybackDigest(location)

    def sweep(self) -> Iterator[tuple[str, Iterator[bytes]]]:
        # Every member, in file order, feeds the archive's own sha256 as it is read: on
        # a thread of its own, beside the one inflating (the raw bytes are not reused).
        members = self._archive.members
        hashing: Pipe[tuple[int, bytes]] = Pipe(lambda read: self._digest.see(*read),
                                                lambda read: len(read[1]), "archive-sha256")
        with hashing:
            def tap(offset: int, data: bytes) -> None:
                hashing.put((offset, data))

            for name in sorted(members, key=lambda n: members[n].header_offset):
                member = name[len(self._prefix):] if name.startswith(self._prefix) else ""
                if member in self.takes:
                    chunks = self._archive.read_chunks(name, tap)
                    yield member, chunks
                    for _ in chunks:  # whatever the caller left unread is still CRC-checked
                        pass
                else:
                    self._archive.check_member(name, tap)

    def sweeps(self, workers: int) -> list[Iterator[tuple[str, Iterator[bytes]]]]:
        # On several cores the members are shared out (by compressed size, each share in
        # file order, on a handle of its own) and one more part hashes the file in order;
        # identity() checks the pin once every part is done, before anything is kept.
        names = sorted(self._archive.members,
                       key=lambda n: self._archive.members[n].header_offset)
        if workers < self._parallel_from() or len(names) < 2 or \
                self.location.stat().st_size < PARALLEL_FROM:
            return [self.sweep()]
        shares: list[list[str]] = [[] for _ in range(min(workers, len(names)))]
        loads = [0] * len(shares)
        for name in sorted(names, key=lambda n: -self._archive.members[n].compressed_size):
            lightest = loads.index(min(loads))
            shares[lightest].append(name)
            loads[lightest] += self._archive.members[name].compressed_size
        order = {name: index for index, name in enumerate(names)}
        return [self._hash_in_order(),
                *(self._sweep_share(sorted(share, key=order.__getitem__))
                  for share in shares)]

    def _parallel_from(self) -> int:
        """The cores from which this archive is cut into parts: fewer where most of its
        compressed bytes are Deflate64 (see DEFLATE64_PARALLEL_CORES)."""
        members = self._archive.members.values()
        deflate64 = sum(m.compressed_size for m in members if m.method == DEFLATE64)
        return (DEFLATE64_PARALLEL_CORES if 2 * deflate64 > sum(m.compressed_size
                                                                for m in members)
                else PARALLEL_CORES)

    def _hash_in_order(self) -> Iterator[tuple[str, Iterator[bytes]]]:
        self._digest.hexdigest()   # reads the whole file front to back (page cache)
        yield from ()

    def _sweep_share(self, names: list[str]) -> Iterator[tuple[str, Iterator[bytes]]]:
        with self._archive.reader() as archive:
            for name in names:
                member = name[len(self._prefix):] if name.startswith(self._prefix) else ""
                if member in self.takes:
                    chunks = archive.read_chunks(name)
                    yield member, chunks
                    for _ in chunks:  # whatever the caller left unread is still CRC-checked
                        pass
                else:
                    archive.check_member(name)

    def size(self, member: str) -> int:
        return self._archive.members[self._prefix + member].size

    def identity(self, member_hashes: Mapping[str, str]) -> str:
        sha256 = self._digest.hexdigest()
        if self.spec.sha256 and sha256 != self.spec.sha256:
            raise SourceError(f"{self.location}: sha256 {sha256} differs from the "
                              f"recipe's pin {self.spec.sha256}", self._pin_hint())
        return sha256

    def fingerprint(self) -> str:
        return self._archive.directory_digest()

    def member_crc(self, member: str) -> tuple[int, int] | None:
        found = self._archive.members.get(self._prefix + member)
        return (found.crc, found.size) if found else None

    def stat_key(self) -> str:
        return ":".join(map(str, stamp(self.location)))

    def identity_by_hashing(self) -> str:
        return sha256_file(self.location, f"hashing {self.location.name}")

    def _pin_hint(self) -> str:
        return "this is not the file the recipe names: get the original"

    def close(self) -> None:
        self._archive.__exit__()
