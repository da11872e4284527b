"""The lock file's format (`app.spec.lock`): read by the packer (pack/lock.py checks new
inputs against it) and by `bundler verify --lock` (a bundle against it).

Format 2 adds what the lock was made from (the spec's tables, the components), so a
later pack can tell a spec change (the lock follows it) from a changed input (refused).
A format-1 lock is still read: it lacks that record, so it is treated as before.

`bundle` (optional in format 2; absent in locks written before it) pins what the
bootstrap obeys beyond the runtime files: the manifest as a whole (load order, versions,
driver minimums, the bootstrap's hash) and the entry script that loads the bootstrap, by
their paths below the bundle's root. It is what the pack wrote, not an input: a pack
follows it (refused only under --locked) and `verify --lock` checks it.

`wheels` (optional, embedded-python): the wheel set pip resolved for app.requirements,
which a re-pack with unchanged requirement files installs again without resolving."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.errors import LockError
from bundler.support.json_files import json_bytes, read_json

LOCK_FORMAT = 2
READ_FORMATS = (1, 2)   # a format-1 lock (no spec record) is read and upgraded by a pack
MAX_LOCK_BYTES = 16 << 20   # a lock pins tens of files; anything this large is not one
_DAMAGED_HINT = "delete it and pack again, or pass --update-lock"


@dataclass(frozen=True)
class Lock:
    recipe: dict[str, str]
    sources: dict[str, dict[str, str]]
    files: dict[str, str]
    format: int = LOCK_FORMAT
    # Format 2: the spec's tables as the pack read them, and the components it packed;
    # None in a format-1 lock, which did not record them.
    spec: dict[str, dict] | None = None
    components: list[str] | None = None
    # Path below the bundle's root -> sha256 of the manifest and the entry script; None
    # in a lock written before it was recorded.
    bundle: dict[str, str] | None = None
    # embedded-python: the wheels pip resolved for app.requirements, by project name ->
    # version, file (the wheel's name) and sha256; a re-pack whose requirement files are
    # unchanged installs exactly these from the wheel cache. None: not recorded.
    wheels: dict[str, dict[str, str]] | None = None

    def to_bytes(self) -> bytes:
        return json_bytes({key: value for key, value in asdict(self).items()
                           if value is not None})


def read_lock(path: Path) -> Lock | None:
    if not path.exists():
        return None
    data = read_json(path, MAX_LOCK_BYTES, LockError, _DAMAGED_HINT, "not a valid lock file")
    try:
        found = data.get("format", 1)
        if found not in READ_FORMATS:
            raise LockError(f"{path}: lock format {found!r} is not one this bundler reads "
                            f"({', '.join(map(str, READ_FORMATS))})", "upgrade bundler, or "
                            "pack with --update-lock to rewrite the lock")
        # Without the record (format 1) a pack treats every difference as before.
        lock = Lock(recipe=data["recipe"], sources=data["sources"], files=data["files"],
                    format=found, spec=data.get("spec"), components=data.get("components"),
                    bundle=data.get("bundle"), wheels=data.get("wheels"))
        _check_shapes(lock)
        return lock
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LockError(f"{path}: not a valid lock file ({exc})", _DAMAGED_HINT) from None


def _check_shapes(lock: Lock) -> None:
    """Everything the readers use with .get or as a list is what it must be (the lock
    comparison, reuse and verify read it without further checks)."""
    if not all(isinstance(part, dict) for part in (lock.recipe, lock.sources, lock.files)):
        raise TypeError("recipe, sources and files must be tables")
    if not all(isinstance(pins, dict) for pins in lock.sources.values()):
        raise TypeError("each source must be a table")
    if lock.spec is not None and not (isinstance(lock.spec, dict) and all(
            isinstance(table, dict) for table in lock.spec.values())):
        raise TypeError("spec must be a table of the spec's tables")
    if lock.components is not None and not (isinstance(lock.components, list) and all(
            isinstance(name, str) for name in lock.components)):
        raise TypeError("components must be a list of names")
    if lock.bundle is not None and not (isinstance(lock.bundle, dict) and all(
            isinstance(path, str) and isinstance(sha256, str)
            for path, sha256 in lock.bundle.items())):
        raise TypeError("bundle must be a table of paths and sha256s")
    if lock.wheels is not None and not (isinstance(lock.wheels, dict) and all(
            isinstance(pins, dict) and all(isinstance(pins.get(key), str) for key in
                                           ("version", "file", "sha256"))
            for pins in lock.wheels.values())):
        raise TypeError("wheels must be a table of version, file and sha256 per project")
