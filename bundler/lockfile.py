"""The lock file's format (`app.spec.lock`): read by the packer (pack/lock.py checks new
inputs against it) and by `bundler verify --lock` (a bundle against it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.errors import LockError
from bundler.support.json_files import json_bytes, read_json

LOCK_FORMAT = 1
MAX_LOCK_BYTES = 16 << 20   # a lock pins tens of files; anything this large is not one
_DAMAGED_HINT = "delete it and pack again, or pass --update-lock"


@dataclass(frozen=True)
class Lock:
    recipe: dict[str, str]
    sources: dict[str, dict[str, str]]
    files: dict[str, str]
    format: int = LOCK_FORMAT

    def to_bytes(self) -> bytes:
        return json_bytes(asdict(self))


def read_lock(path: Path) -> Lock | None:
    if not path.exists():
        return None
    data = read_json(path, MAX_LOCK_BYTES, LockError, _DAMAGED_HINT, "not a valid lock file")
    try:
        if data.get("format", LOCK_FORMAT) != LOCK_FORMAT:
            raise LockError(f"{path}: lock format {data.get('format')!r} is not one this "
                            f"bundler reads ({LOCK_FORMAT})", "upgrade bundler, or pack "
                            "with --update-lock to rewrite the lock")
        lock = Lock(recipe=data["recipe"], sources=data["sources"], files=data["files"],
                    format=data.get("format", LOCK_FORMAT))
        if not all(isinstance(part, dict) for part in (lock.recipe, lock.sources, lock.files)):
            raise TypeError("recipe, sources and files must be tables")
        # Each source's pins are read with .get (reuse, lock comparison): a table too.
        if not all(isinstance(pins, dict) for pins in lock.sources.values()):
            raise TypeError("each source must be a table")
        return lock
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LockError(f"{path}: not a valid lock file ({exc})", _DAMAGED_HINT) from None
