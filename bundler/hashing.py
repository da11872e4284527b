"""Streaming sha256: files are read in chunks, never whole (DLLs reach 600 MB)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from bundler.progress import byte_progress

CHUNK = 1 << 20


def sha256_file(path: Path, description: str = "") -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle, byte_progress(
            path.stat().st_size, description or f"hashing {path.name}") as bar:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
            bar.update(len(chunk))
    return digest.hexdigest()
