"""The lock (`app.spec.lock`): pins the recipe, each source and each file by sha256.

A later pack whose inputs differ fails with what changed, unless --update-lock.
"""

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
        return lock
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LockError(f"{path}: not a valid lock file ({exc})", _DAMAGED_HINT) from None


def differences(old: Lock, new: Lock) -> list[str]:
    changes = []
    if old.recipe != new.recipe:
        changes.append(f"recipe {old.recipe.get('name')} -> {new.recipe.get('name')}"
                       if old.recipe.get("name") != new.recipe.get("name")
                       else f"recipe {new.recipe.get('name')} file changed")
    changes += _dict_changes("source", old.sources, new.sources)
    changes += _dict_changes("file", old.files, new.files)
    return changes


def _dict_changes(what: str, old: dict, new: dict) -> list[str]:
    changes = [f"{what} {key} changed" for key in sorted(set(old) & set(new))
               if old[key] != new[key]]
    changes += [f"{what} {key} removed" for key in sorted(set(old) - set(new))]
    changes += [f"{what} {key} added" for key in sorted(set(new) - set(old))]
    return changes


def check_lock(path: Path, new: Lock, update: bool) -> None:
    """Refuse inputs that differ from the lock, unless the user asked to update it."""
    if update:
        return  # also mends a lock that is damaged beyond reading
    old = read_lock(path)
    if old is None:
        return
    changes = differences(old, new)
    if changes:
        shown = "; ".join(changes[:6]) + (f"; and {len(changes) - 6} more"
                                          if len(changes) > 6 else "")
        raise LockError(f"{path}: the inputs differ from the lock: {shown}",
                        "if the change is intended, pack again with --update-lock")
