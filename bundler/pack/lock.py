"""The lock (`app.spec.lock`): pins the recipe, each source and each file by sha256.

A later pack whose inputs differ fails with what changed, unless --update-lock.
"""

from __future__ import annotations

from pathlib import Path

from bundler.errors import LockError
from bundler.lockfile import LOCK_FORMAT, Lock, read_lock

__all__ = ["LOCK_FORMAT", "Lock", "check_lock", "differences", "read_lock"]

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
