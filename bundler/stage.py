"""Stage: stream each runtime file from its source into the staging folder.

Each byte is read once, hashed and written in the same pass; no file is held in
memory whole. The digest is handed back to the source, which checks it against any
hash the input records itself (a wheel's RECORD) without hashing a second time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.progress import byte_progress
from bundler.recipe import RuntimeFile
from bundler.sources import Source


@dataclass(frozen=True)
class StagedFile:
    file: RuntimeFile
    path: Path      # where it lies now, in the staging folder
    relpath: str    # its path in the app folder, forward slashes
    size: int
    sha256: str


def stage_files(files: list[RuntimeFile], sources: Mapping[str, Source],
                runtime_dir: Path, runtime_relpath: str) -> list[StagedFile]:
    runtime_dir.mkdir(parents=True, exist_ok=True)
    total = sum(sources[f.source].size(f.member) for f in files)
    staged: dict[str, StagedFile] = {}
    # In each input's own order, so an archive is read front to back, once.
    reading_order = sorted(files, key=lambda f: (f.source, sources[f.source].position(f.member)))
    with byte_progress(total, "staging runtime") as bar:
        for runtime_file in reading_order:
            source = sources[runtime_file.source]
            target = runtime_dir / runtime_file.name
            size, sha256 = _copy(source, runtime_file.member, target, bar.update)
            source.confirm(runtime_file.member, sha256)
            staged[runtime_file.name] = StagedFile(
                file=runtime_file, path=target, relpath=f"{runtime_relpath}/{runtime_file.name}",
                size=size, sha256=sha256)
    return [staged[f.name] for f in files]


def _copy(source: Source, member: str, target: Path, advance) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    try:
        with open(target, "xb") as out:
            for chunk in source.read_chunks(member):
                digest.update(chunk)
                out.write(chunk)
                size += len(chunk)
                advance(len(chunk))
    except OSError as exc:
        raise SourceError(f"{source.location}: cannot copy {member} of source "
                          f"'{source.id}' into the bundle: {exc.strerror or exc}",
                          "check the source is readable (an antivirus may hold it) and the "
                          "output folder has free space") from None
    return size, digest.hexdigest()
