"""The lock and the embedded-python builder's wheels: which set a pack may install as
it is, and the refusal --locked gives before any work.

A re-pack installs the lock's wheels (no resolve, no index) when the lock records the
same app.python and the same requirement files (the top one and every nested -r / -c
file, by sha256) as the spec now has, and records them resolved for the same target
(`wheels_for`: the recipe's platform and the bundle's CPython); --update-lock resolves
again, and so does any change to those files or the target. A lock whose set records
no target was resolved by pip for the packing machine's markers: resolved again.
--locked compares the spec with the lock first: a resolve takes minutes, the answer
takes no time.
"""

from __future__ import annotations

from bundler.errors import LockError
from bundler.formats.lockfile import Lock, LockedRecipe, LockedWheelPin
from bundler.pack.builders.cpython_embed import KNOWN
from bundler.pack.builders.pip_wheels import LockedWheel
from bundler.pack.builders.target_resolve import ResolveTarget
from bundler.pack.lock import LockPolicy, spec_changes, spec_record
from bundler.pack.requirement_files import NOT_HASHED
from bundler.pack.spec import Spec
from bundler.platforms.api import Platform

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


def wheels_target(spec: Spec, platform: Platform) -> dict[str, str] | None:
    """The lock's `wheels_for`: what app.requirements is resolved for (None: no
    requirements, or no CPython bundler knows, which load_spec refuses)."""
    embed = KNOWN.get(spec.python or "")
    if spec.requirements is None or embed is None:
        return None
    return ResolveTarget(platform.python_platform, embed.cpython).to_json()


def reusable_wheels(spec: Spec, old: Lock | None, policy: LockPolicy, platform: Platform
                    ) -> tuple[LockedWheel, ...] | None:
    """The lock's wheel set, where the spec asks what it was resolved from, for the same
    target; None: resolved again (no record, --update-lock, a changed file, a nested
    file given by URL, another target or none recorded)."""
    if (spec.requirements is None or old is None or old.wheels is None
            or old.spec is None or policy == "update"
            or old.wheels_for != wheels_target(spec, platform)):
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
