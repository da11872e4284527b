"""Stage: stream each runtime file from its source into the staging folder.

Each source is swept once, front to back: the members the pack takes are read,
hashed and written in the same pass, and the source checks everything else it
holds (other members' CRCs) on the way, so each byte is read once; no file is held
in memory whole. The digest is handed back to the source, which checks it against
any hash the input records itself (a wheel's RECORD) without hashing a second time.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources import Source
from bundler.recipe import RuntimeFile
from bundler.support.hashing import write_hashed
from bundler.support.progress import byte_progress


@dataclass(frozen=True)
class StagedFile:
    file: RuntimeFile
    path: Path      # where it lies now, in the staging folder
    relpath: str    # its path in the app folder, forward slashes
    size: int
    sha256: str


def stage_files(files: list[RuntimeFile], sources: Mapping[str, Source],
                runtime_dir: Path, runtime_relpath: str,
                on_staged: Callable[[StagedFile], object] | None = None) -> list[StagedFile]:
    """Stage `files`; each source must have been opened to take exactly their members.
    `on_staged` is told each file as soon as it is complete (later checks can start)."""
    runtime_dir.mkdir(parents=True, exist_ok=True)
    total = sum(sources[f.source].size(f.member) for f in files)
    staged: dict[str, StagedFile] = {}
    with byte_progress(total, "staging runtime") as bar:
        for sid in sorted({f.source for f in files}):
            wanted: dict[str, list[RuntimeFile]] = {}
            for runtime_file in files:
                if runtime_file.source == sid:
                    wanted.setdefault(runtime_file.member, []).append(runtime_file)
            for item in _stage_source(sources[sid], wanted, runtime_dir, runtime_relpath,
                                      bar.update):
                staged[item.file.name] = item
                if on_staged is not None:
                    on_staged(item)
    return [staged[f.name] for f in files]


def _stage_source(source: Source, wanted: Mapping[str, list[RuntimeFile]], runtime_dir: Path,
           runtime_relpath: str, advance: Callable[[int], object]) -> Iterator[StagedFile]:
    member = ""
    try:
        for member, chunks in source.sweep():
            first, *others = wanted[member]
            size, sha256 = _copy(chunks, runtime_dir / first.name, advance)
            source.confirm(member, sha256)
            for other in others:  # one member shipped under a second name: read it once
                shutil.copyfile(runtime_dir / first.name, runtime_dir / other.name)
            for runtime_file in (first, *others):
                yield StagedFile(file=runtime_file, path=runtime_dir / runtime_file.name,
                                 relpath=f"{runtime_relpath}/{runtime_file.name}",
                                 size=size, sha256=sha256)
            member = ""
    except OSError as exc:
        what = f"{member} of source" if member else "source"
        raise SourceError(f"{source.location}: cannot copy {what} '{source.id}' into the "
                          f"bundle: {exc.strerror or exc}",
                          "check the source is readable (an antivirus may hold it) and the "
                          "output folder has free space") from None


def _copy(chunks: Iterator[bytes], target: Path, advance: Callable[[int], object]
          ) -> tuple[int, str]:
    with open(target, "xb") as out:
        return write_hashed(chunks, out, advance)
