"""Sources: where this machine keeps the inputs a recipe names.

Each source kind knows how to find its input, check it holds what the recipe
expects, and stream a member's bytes. The rest of the pipeline sees only the
`Source` interface.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from bundler import wheel
from bundler.archive import ZipArchive
from bundler.errors import SourceError
from bundler.fetch import cache_root, cached, can_fetch, download_command, fetch, offline_error
from bundler.hashing import CHUNK, PiggybackDigest
from bundler.recipe import Recipe, SourceSpec


class Source:
    """One opened input. Subclasses implement finding, checking and reading members.

    `takes`: the members the pack will take from it. Opening checks they are all there,
    with what the recipe lists as the source's contents (a recipe need not list them).
    """

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

    def close(self) -> None:
        """Release open files."""

    def _missing(self, names: list[str], hint: str) -> SourceError:
        listed = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        return SourceError(f"{self.location}: source '{self.id}' ({self.origin}) lacks "
                           f"{len(names)} expected file(s): {listed}", hint)


class ArchiveSource(Source):
    """A zip such as NVIDIA's cuDNN download: members under a root folder."""

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
        # Every member, in file order, feeds the archive's own sha256 as it is read.
        members = self._archive.members
        for name in sorted(members, key=lambda n: members[n].header_offset):
            member = name[len(self._prefix):] if name.startswith(self._prefix) else ""
            if member in self.takes:
                chunks = self._archive.read_chunks(name, self._digest.see)
                yield member, chunks
                for _ in chunks:  # whatever the caller left unread is still CRC-checked
                    pass
            else:
                self._archive.check_member(name, self._digest.see)

    def size(self, member: str) -> int:
        return self._archive.members[self._prefix + member].size

    def identity(self, member_hashes: Mapping[str, str]) -> str:
        sha256 = self._digest.hexdigest()
        if self.spec.sha256 and sha256 != self.spec.sha256:
            raise SourceError(f"{self.location}: sha256 {sha256} differs from the "
                              f"recipe's pin {self.spec.sha256}", self._pin_hint())
        return sha256

    def _pin_hint(self) -> str:
        return "this is not the file the recipe names: get the original"

    def close(self) -> None:
        self._archive.__exit__()


class WheelSource(ArchiveSource):
    """A PyPI wheel such as nvidia-cudnn-cu11: a zip that records each member's sha256.

    Before any member is used: the file name and WHEEL must name the recipe's platform
    (and package and version). Each member the pack takes must match RECORD. The wheel
    knowledge lives in wheel.py; this class fits it to the Source interface.
    """

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str] = ()) -> None:
        name = wheel.parse_wheel_name(location, spec)
        wheel.check_name(location, name, spec)
        super().__init__(spec, location, origin, takes)
        try:
            self._facts = wheel.read_facts(self._archive, name, spec)
            wheel.check_recorded(location, self._facts,
                                 [self._prefix + m for m in self.expected], spec)
        except BaseException:
            self.close()
            raise

    def confirm(self, member: str, sha256: str) -> None:
        wheel.check_member(self.location, self._facts, self._prefix + member, sha256,
                           self.spec)

    def _pin_hint(self) -> str:
        return (f"this is not the wheel the recipe pins ({self.origin}): delete it and get "
                f"the published one: {download_command([self.spec])}")


class FolderSource(Source):
    """A folder on disk, such as an installed CUDA toolkit."""

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str] = ()) -> None:
        super().__init__(spec, location, origin, takes)
        if not location.is_dir():
            raise SourceError(f"{location}: source '{spec.id}' ({origin}) is not a folder",
                              f"point [sources] {spec.id} at the folder")
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

    def identity(self, member_hashes: Mapping[str, str]) -> str:
        # A folder has no single file to hash: pin the files taken from it.
        lines = "".join(f"{m}\0{h}\n" for m, h in sorted(member_hashes.items()))
        return hashlib.sha256(lines.encode()).hexdigest()


def _folder_hint(spec: SourceSpec) -> str:
    if spec.kind == "toolkit" and spec.env:
        return (f"this is not a complete CUDA toolkit of the recipe's version: install it, "
                f"or point {spec.id} (or {spec.env[0]}) at one that is")
    return "check the folder holds the recipe's files"


SOURCE_CLASSES: dict[str, type[Source]] = {
    "archive": ArchiveSource,
    "toolkit": FolderSource,
    "folder": FolderSource,
    "wheel": WheelSource,
}


def locate(spec: SourceSpec, given: Mapping[str, tuple[str, str]], base: Path,
           environ: Mapping[str, str]) -> tuple[Path, str]:
    """Where a source is, and how we know: the spec/--source, else the recipe's env
    vars, else (a pinned wheel) the wheel cache, fetching it with pip if need be."""
    found = _given(spec, given, base, environ)
    if found:
        return found
    if can_fetch(spec):
        root = cache_root(environ)
        in_cache = cached(spec, root)
        if in_cache:
            return in_cache, f"from the wheel cache {root}"
        return fetch(spec, root), f"fetched with pip into {root}"
    found_by = f" and {'/'.join(spec.env)} are unset" if spec.env else ""
    example = spec.file_name or "PATH"
    raise SourceError(f"source '{spec.id}' ({spec.kind}) is not given{found_by}",
                      f"add {spec.id} = \"{example}\" to [sources] in the spec, or pass "
                      f"--source {spec.id}={example}")


def _given(spec: SourceSpec, given: Mapping[str, tuple[str, str]], base: Path,
           environ: Mapping[str, str]) -> tuple[Path, str] | None:
    if spec.id in given:
        value, origin = given[spec.id]
        return (base / os.path.expanduser(value)).resolve(), origin
    for variable in spec.env:
        if environ.get(variable):
            return Path(environ[variable]), f"from {variable}"
    return None


def _refuse_fetching(recipe: Recipe, needed: set[str], given: Mapping[str, tuple[str, str]],
                     base: Path, environ: Mapping[str, str]) -> None:
    """--offline: name every wheel that would have to be fetched, and how to give it."""
    root = cache_root(environ)
    specs = [recipe.sources[sid] for sid in sorted(needed)]
    to_fetch = [s for s in specs if can_fetch(s) and not _given(s, given, base, environ)
                and not cached(s, root)]
    if to_fetch:
        raise offline_error(to_fetch, root)


def open_sources(recipe: Recipe, takes: Mapping[str, Collection[str]],
                 given: Mapping[str, tuple[str, str]], base: Path, environ: Mapping[str, str],
                 offline: bool = False) -> dict[str, Source]:
    """Open each source the selected files need; `takes` maps id -> the members taken
    from it. `given` maps id -> (path, origin). `offline` refuses to fetch a pinned
    wheel that is neither given nor cached."""
    needed = set(takes)
    unknown = sorted(set(given) - set(recipe.sources))
    if unknown:
        raise SourceError(f"source(s) {', '.join(unknown)} are not in recipe {recipe.name}",
                          f"the recipe's sources are: {', '.join(recipe.sources)}")
    if offline:
        _refuse_fetching(recipe, needed, given, base, environ)
    opened: dict[str, Source] = {}
    try:
        for sid in sorted(needed):
            spec = recipe.sources[sid]  # its kind is one of SOURCE_CLASSES: the recipe checked
            location, origin = locate(spec, given, base, environ)
            opened[sid] = SOURCE_CLASSES[spec.kind](spec, location, origin, takes[sid])
    except BaseException:
        close_all(opened)
        raise
    return opened


def close_all(sources: Mapping[str, Source]) -> None:
    for source in sources.values():
        source.close()
