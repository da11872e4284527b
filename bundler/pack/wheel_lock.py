"""The lock and the embedded-python builder's wheels: which set a pack may install as
it is, and the refusal --locked gives before any work.

A re-pack installs the lock's wheels (no resolve, no index) when the lock records the
same app.python and the same requirement files (the top one and every nested -r / -c
file, by sha256) as the spec now has; --update-lock resolves again, and so does any
change to those files. --locked compares the spec with the lock first: a pip resolve
takes minutes, the answer takes no time.
"""

from __future__ import annotations

from bundler.errors import LockError
from bundler.formats.lockfile import Lock, LockedRecipe, LockedWheelPin
from bundler.pack.builders.pip_wheels import LockedWheel
from bundler.pack.lock import LockPolicy, spec_changes, spec_record
from bundler.pack.requirement_files import NOT_HASHED
from bundler.pack.spec import Spec

_SAME = ("python", "requirements")   # the app keys the wheel set is resolved from


def refuse_locked_spec_change(spec: Spec, old: Lock | None, policy: LockPolicy) -> None:
    """Under --locked, requirement files (nested -r / -c ones included) or an
    app.python that differ from the lock's record are refused now, naming the file,
    before anything is fetched, built or resolved. Other changes are refused by
    check_lock at the end, all of them named (they cost no resolve)."""
    if policy != "locked" or old is None or old.spec is None or spec.requirements is None:
        return
    now = Lock(recipe=LockedRecipe(), sources={}, files={},
               spec=spec_record(spec.tables, spec.requirements))
    if changes := [change for change in spec_changes(old, now)
                   if change.split()[1] in {f"app.{key}" for key in _SAME}]:
        raise LockError(f"{spec.lock_path}: --locked, but the lock would change: "
                        f"{'; '.join(changes)}",
                        "pack without --locked to update the lock, and commit it")


def reusable_wheels(spec: Spec, old: Lock | None, policy: LockPolicy
                    ) -> tuple[LockedWheel, ...] | None:
    """The lock's wheel set, where the spec asks what it was resolved from; None: pip
    resolves (no record, --update-lock, a changed file, a nested file given by URL)."""
    if (spec.requirements is None or old is None or old.wheels is None
            or old.spec is None or policy == "update"):
        return None
    now = spec_record(spec.tables, spec.requirements).get("app", {})
    was = old.spec.get("app", {})
    if any(now.get(key) != was.get(key) for key in _SAME):
        return None
    requirements = now.get("requirements")
    if not isinstance(requirements, dict) or NOT_HASHED in (
            requirements.get("nested") or {}).values():
        return None
    return tuple(LockedWheel(name, pins.version, pins.file, pins.sha256)
                 for name, pins in sorted(old.wheels.items()))


def wheel_record(wheels: tuple[LockedWheel, ...] | None
                 ) -> dict[str, LockedWheelPin] | None:
    """The lock's `wheels`: project -> version, file, sha256."""
    if wheels is None:
        return None
    return {wheel.name: LockedWheelPin(wheel.version, wheel.file, wheel.sha256)
            for wheel in sorted(wheels, key=lambda w: w.name)}
