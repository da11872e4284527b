"""Stage: stream each runtime file from its source into the staging folder.

Each source is swept once, front to back: the members the pack takes are read,
hashed and written in the same pass, and the source checks everything else it
holds (other members' CRCs) on the way, so each byte is read once; no file is held
in memory whole. The digest is handed back to the source, which checks it against
any hash the input records itself (a wheel's RECORD) without hashing a second time.
A file whose signature will be checked has its signature digest (Authenticode's)
computed from the same bytes, so the check does not read it again.

Independent sources are swept at once, as many lanes as cores (the largest sources
first: they set the pace). A source may cut its sweep into parts (Source.sweeps): an
archive's members then inflate on every core, each part on a file handle of its own,
while one more part hashes the archive in order (its pin is checked once all parts are
done, before anything is committed). Within a lane, inflating, hashing and writing run
on threads of their own (zlib, hashlib and writes let go of the GIL). Each file's bytes
depend only on its source, so the output is the same whatever the timing.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Generator, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources import Source
from bundler.recipe.load import RuntimeFile
from bundler.support.hashing import write_hashed
from bundler.support.progress import byte_progress
from bundler.targets.registry import SignatureDigest


@dataclass(frozen=True)
class StagedFile:
    file: RuntimeFile
    path: Path      # where it lies now, in the staging folder
    relpath: str    # its path in the app folder, forward slashes
    size: int
    sha256: str
    # The signature digests of its bytes ((algorithm, digest), e.g. Authenticode's
    # sha256), computed as it was written; () where none was (the check reads the file).
    signature_digests: tuple[tuple[str, bytes], ...] = ()


# (a file, its size) -> the digest its signature check will want, or None.
DigestFor = Callable[[RuntimeFile, int], "SignatureDigest | None"]


@dataclass(frozen=True)
class _Lane:
    """What one source's sweep reports to, from its own thread."""

    runtime_dir: Path
    runtime_relpath: str
    advance: Callable[[int], object]
    report: Callable[[StagedFile], None]
    digest_for: DigestFor | None
    stop: threading.Event


class _Stopped(Exception):
    """Another lane failed (or the pack was interrupted): this one stops at once."""


def stage_files(files: list[RuntimeFile], sources: Mapping[str, Source],
                runtime_dir: Path, runtime_relpath: str,
                on_staged: Callable[[StagedFile], object] | None = None,
                digest_for: DigestFor | None = None) -> list[StagedFile]:
    """Stage `files`; each source must have been opened to take exactly their members.
    `on_staged` is told each file as soon as it is complete (later checks can start),
    from the thread that staged it, one file at a time. `digest_for` gives the digest a
    file's signature check will want (see StagedFile.signature_digests)."""
    runtime_dir.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, dict[str, list[RuntimeFile]]] = {}
    for runtime_file in files:
        wanted.setdefault(runtime_file.source, {}).setdefault(
            runtime_file.member, []).append(runtime_file)
    weight = {sid: sum(sources[sid].size(m) for m in members)
              for sid, members in wanted.items()}
    staged: dict[str, StagedFile] = {}
    turn = threading.Lock()   # the bar, `staged` and on_staged: one lane at a time
    with byte_progress(sum(weight.values()), "staging runtime") as bar:
        def advance(size: int) -> None:
            with turn:
                bar.update(size)

        def report(item: StagedFile) -> None:
            with turn:
                staged[item.file.name] = item
                if on_staged is not None:
                    on_staged(item)

        lane = _Lane(runtime_dir, runtime_relpath, advance, report, digest_for,
                     threading.Event())
        order = sorted(wanted, key=lambda sid: (-weight[sid], sid))
        _run_lanes({sid: (sources[sid], wanted[sid]) for sid in order}, lane)
    return [staged[f.name] for f in files]


def cores() -> int:
    """How many lanes may run at once (tests patch it to force the parallel path)."""
    return os.cpu_count() or 1


def lane_count(parts: int) -> int:
    """Lanes at once: one per core, at most one per part of a source's sweep."""
    return max(1, min(parts, cores()))


def _run_lanes(work: Mapping[str, tuple[Source, Mapping[str, list[RuntimeFile]]]],
               lane: _Lane) -> None:
    """Sweep each source's parts on lanes; the first failure stops the others. The
    error raised is that of the first source, by id, that failed of itself."""
    workers = cores()
    jobs = [(sid, part, source, members) for sid, (source, members) in work.items()
            for part in source.sweeps(workers)]
    with ThreadPoolExecutor(lane_count(len(jobs)), thread_name_prefix="stage") as pool:
        futures: dict[tuple[str, int], Future[None]] = {
            (sid, index): pool.submit(_stage_source, source, part, members, lane)
            for index, (sid, part, source, members) in enumerate(jobs)}
        try:
            wait(futures.values(), return_when=FIRST_EXCEPTION)
        finally:   # a failure or Ctrl-C: the other lanes stop at their next chunk
            if not all(f.done() and f.exception() is None for f in futures.values()):
                lane.stop.set()
    for key in sorted(futures):
        error = futures[key].exception()
        if error is not None and not isinstance(error, _Stopped):
            raise error


def _stage_source(source: Source, sweep: Iterator[tuple[str, Iterator[bytes]]],
                  wanted: Mapping[str, list[RuntimeFile]], lane: _Lane) -> None:
    member = ""
    try:
        for member, chunks in sweep:
            first, *others = wanted[member]
            digest = lane.digest_for(first, source.size(member)) if lane.digest_for else None
            size, sha256 = _copy(_unless_stopped(chunks, lane.stop),
                                 lane.runtime_dir / first.name, lane.advance, digest)
            source.confirm(member, sha256)
            digests = tuple(sorted(digest.digests().items())) if digest else ()
            for other in others:  # one member shipped under a second name: read it once
                shutil.copyfile(lane.runtime_dir / first.name, lane.runtime_dir / other.name)
            for runtime_file in (first, *others):
                lane.report(StagedFile(
                    file=runtime_file, path=lane.runtime_dir / runtime_file.name,
                    relpath=f"{lane.runtime_relpath}/{runtime_file.name}", size=size,
                    sha256=sha256, signature_digests=digests))
            member = ""
    except OSError as exc:
        what = f"{member} of source" if member else "source"
        raise SourceError(f"{source.location}: cannot copy {what} '{source.id}' into the "
                          f"bundle: {exc.strerror or exc}",
                          "check the source is readable (an antivirus may hold it) and the "
                          "output folder has free space") from None
    finally:   # ends the part's helpers (a hashing thread) now, not when it is collected
        if isinstance(sweep, Generator):
            sweep.close()


def _unless_stopped(chunks: Iterator[bytes], stop: threading.Event) -> Iterator[bytes]:
    for chunk in chunks:
        if stop.is_set():
            raise _Stopped
        yield chunk


def _copy(chunks: Iterator[bytes], target: Path, advance: Callable[[int], object],
          digest: SignatureDigest | None) -> tuple[int, str]:
    with open(target, "xb") as out:
        return write_hashed(chunks, out, advance, (digest.update,) if digest else ())
