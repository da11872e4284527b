"""The lock (`app.spec.lock`): pins the recipe, each source and each file by sha256, and
records what of the spec it was made from.

The conventions of cargo and uv: when the spec changes, the lock follows it and the
pack says what changed; an input that changed under an unchanged spec is refused
(unless --update-lock); --locked refuses any change at all (for CI).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bundler.errors import LockError
from bundler.formats.lockfile import LOCK_FORMAT, Lock, LockedSource, read_lock
from bundler.pack.requirement_files import nested_files
from bundler.recipe.model import SOURCE_KINDS
from bundler.support.hashing import sha256_file

__all__ = ["LOCK_FORMAT", "Lock", "LockPolicy", "Settled", "bundle_changes", "bundle_record",
           "check_lock", "differences", "read_lock", "spec_changes", "spec_record",
           "wheel_changes"]

# follow: the lock follows the spec; update: --update-lock; locked: --locked.
LockPolicy = Literal["follow", "update", "locked"]
_SHOWN = 6   # changes named in one message, then how many more


@dataclass(frozen=True)
class Settled:
    """What the pack writes as the lock, and what changed in it (said to the user)."""

    data: bytes
    changes: tuple[str, ...] = ()


def differences(old: Lock, new: Lock) -> list[str]:
    changes = []
    if old.recipe != new.recipe:
        changes.append(f"recipe {old.recipe.name} -> {new.recipe.name}"
                       if old.recipe.name != new.recipe.name
                       else f"recipe {new.recipe.name} file changed")
    if old.components is not None and new.components is not None:
        changes += [f"component {name} removed" for name in old.components
                    if name not in new.components]
        changes += [f"component {name} added" for name in new.components
                    if name not in old.components]
    changes += _dict_changes("source", old.sources, new.sources)
    changes += _dict_changes("file", old.files, new.files)
    return changes


def bundle_changes(old: Lock, new: Lock) -> list[str]:
    """What the pack wrote that the bootstrap obeys (the manifest, the entry script),
    changed since the old lock. An output, not an input: a pack follows it, --locked
    refuses it. A lock that did not record it gains the record (said once)."""
    if new.bundle is None:
        return []
    if old.bundle is None:
        return ["the manifest and entry script pinned"] if new.bundle else []
    return _dict_changes("bundle", old.bundle, new.bundle)


def wheel_changes(old: Lock, new: Lock) -> list[str]:
    """The resolved wheel set (embedded-python) changed since the old lock: it follows
    the requirement files, so it is said, never refused on its own (--locked refuses
    it). A lock that did not record the set gains it (said once)."""
    if new.wheels is None:
        return []
    if old.wheels is None:
        return ["the resolved wheels recorded"] if new.wheels else []
    was, now = old.wheels, new.wheels
    target = [] if new.wheels_for is None or old.wheels_for == new.wheels_for else [
        f"wheels resolved for {new.wheels_for.get('platform')}, CPython "
        f"{new.wheels_for.get('python')} (" + (
            "were for the packing machine's markers)" if old.wheels_for is None else
            f"were for {old.wheels_for.get('platform')}, CPython "
            f"{old.wheels_for.get('python')})")]
    return target + ([f"wheel {name} {was[name].version} -> {now[name].version}"
             if was[name].version != now[name].version else f"wheel {name} changed"
             for name in sorted(set(was) & set(now)) if was[name] != now[name]]
            + [f"wheel {name} removed" for name in sorted(set(was) - set(now))]
            + [f"wheel {name} {now[name].version} added"
               for name in sorted(set(now) - set(was))])


def bundle_record(root: Path, manifest: Path, entry: str) -> dict[str, str]:
    """The lock's `bundle`: the manifest (load order, versions, driver minimums, the
    bootstrap's sha256) and the entry script carrying the bootstrap lines, by their paths
    below the bundle's root (`entry`: "" for an app without one)."""
    record = {manifest.relative_to(root).as_posix():
              sha256_file(manifest, f"hashing {manifest.name}")}
    if entry:
        record[entry] = sha256_file(root / entry, f"hashing {entry}")
    return record


def spec_record(tables: Mapping[str, Mapping], requirements: Path | None) -> dict[str, dict]:
    """The spec as the lock records it: its tables, and the file app.requirements names
    by its sha256 too (what pip installs is part of what the spec asks: editing the
    file is a spec change, followed, and refused under --locked)."""
    record = {name: dict(table) for name, table in tables.items()}
    if requirements is not None and requirements.is_file() and "app" in record:
        record["app"]["requirements"] = {
            "path": record["app"].get("requirements"),
            "sha256": sha256_file(requirements, f"hashing {requirements.name}")}
        # -r / -c files it names (recursively): an edited pin there is a spec change too
        if nested := nested_files(requirements):
            record["app"]["requirements"]["nested"] = nested
    return record


def spec_changes(old: Lock, new: Lock) -> list[str]:
    """The spec keys that differ from those the old lock was made from ([] for a
    format-1 lock, which did not record them)."""
    if old.spec is None or new.spec is None:
        return []
    old_keys, new_keys = _dotted(old.spec), _dotted(new.spec)
    return [f"spec {key} " + ("added" if key not in old_keys else "removed"
                              if key not in new_keys else _changed(old_keys[key],
                                                                   new_keys[key]))
            for key in sorted(set(old_keys) | set(new_keys))
            if old_keys.get(key) != new_keys.get(key)]


def _changed(old: object, new: object) -> str:
    """'changed', or what changed of a file the spec names (spec_record)."""
    if isinstance(old, dict) and isinstance(new, dict) and old.get("path") == new.get("path"):
        return f"changed (the contents of {', '.join(_changed_files(old, new))})"
    return "changed"


def _changed_files(old: dict, new: dict) -> list[str]:
    """The requirement files whose contents differ: the top one, then nested ones."""
    names = [str(new.get("path"))] if old.get("sha256") != new.get("sha256") else []
    was, now = old.get("nested") or {}, new.get("nested") or {}
    names += [name for name in sorted(set(was) | set(now)) if was.get(name) != now.get(name)]
    return names or [str(new.get("path"))]


def _dotted(tables: Mapping[str, Mapping]) -> dict[str, object]:
    return {f"{name}.{key}": value for name, table in tables.items()
            for key, value in table.items()}


def _dict_changes(what: str, old: Mapping[str, object], new: Mapping[str, object]
                  ) -> list[str]:
    changes = [f"{what} {key} changed" for key in sorted(set(old) & set(new))
               if old[key] != new[key]]
    changes += [f"{what} {key} removed" for key in sorted(set(old) - set(new))]
    changes += [f"{what} {key} added" for key in sorted(set(new) - set(old))]
    return changes


def check_lock(path: Path, new: Lock, policy: LockPolicy,
               file_sources: Mapping[str, str] | None = None) -> Settled:
    """The lock to write, or a LockError. `file_sources`: each new file's source id, to
    tell a file whose input changed from one the spec change brought."""
    if policy == "update":   # also mends a lock that is damaged beyond reading
        return Settled(new.to_bytes(), _updated(path, new))
    old = read_lock(path)
    if old is None:
        if policy == "locked":
            raise LockError(f"{path}: no lock yet, and --locked forbids writing one",
                            "pack once without --locked and commit the lock it writes")
        return Settled(new.to_bytes())
    changes, by_spec = differences(old, new), spec_changes(old, new)
    outputs = bundle_changes(old, new) if old.bundle is not None else []
    outputs += wheel_changes(old, new) if old.wheels is not None else []
    if policy == "locked" and old.bundle is None and new.bundle:
        # Kept as it is, the lock would go on pinning less than this pack found: verify
        # --lock then checks no manifest and no entry script (formats.md, "bundle").
        raise LockError(f"{path}: --locked, but the lock has no bundle record: it pins "
                        "neither the manifest nor the entry script, which this pack would "
                        "add (a lock written before bundler recorded them, or one whose "
                        "record was removed)", "pack once without --locked to add the "
                        "record, check the change and commit the lock")
    if policy == "locked":
        if changes or by_spec or outputs:
            raise LockError(f"{path}: --locked, but the lock would change: "
                            f"{_listed(by_spec + changes + outputs)}",
                            "pack without --locked to update the lock, and commit it")
        return Settled(path.read_bytes())   # left byte for byte, even a format-1 lock
    refused = _input_changes(old, new, file_sources or {}) if by_spec else changes
    if refused:
        # A format-1 lock cannot follow the spec: say why a spec change is refused.
        why = (" (a format-1 lock: it does not record the spec it was made from, so a "
               "spec change cannot be told from a changed input)" if old.spec is None else "")
        raise LockError(f"{path}: the inputs differ from the lock{why}: {_listed(refused)}",
                        "if the change is intended, pack again with --update-lock")
    upgraded = [f"format {old.format} -> {new.format}"] if old.format != new.format else []
    return Settled(new.to_bytes(),
                   _summary(by_spec + changes + bundle_changes(old, new)
                            + wheel_changes(old, new) + upgraded))


def _updated(path: Path, new: Lock) -> tuple[str, ...]:
    try:
        old = read_lock(path)
    except LockError:
        return ("a damaged lock replaced",)
    return _summary(differences(old, new) + spec_changes(old, new)
                    + bundle_changes(old, new) + wheel_changes(old, new)) if old else ()


def _summary(changes: list[str]) -> tuple[str, ...]:
    """The changes with files counted, not listed: a new recipe changes every file."""
    kept = [change for change in changes if not change.startswith("file ")]
    for verb in ("changed", "added", "removed"):
        count = sum(1 for c in changes if c.startswith("file ") and c.endswith(f" {verb}"))
        kept += [f"{count} file(s) {verb}"] if count else []
    return tuple(kept)


def _input_changes(old: Lock, new: Lock, file_sources: Mapping[str, str]) -> list[str]:
    """Under a changed spec, what the spec change does not explain: the same recipe's
    file edited under the same spec value, or a file of a source the spec still gives
    the same way whose contents changed."""
    if old.recipe.name != new.recipe.name:
        return []   # another recipe: other inputs, other files
    old_spec, new_spec = old.spec or {}, new.spec or {}
    changes = []
    if old.recipe != new.recipe and (old_spec.get("runtime", {}).get("recipe")
                                     == new_spec.get("runtime", {}).get("recipe")):
        changes.append(f"recipe {new.recipe.name} file changed")
    old_given, new_given = old_spec.get("sources", {}), new_spec.get("sources", {})
    changes += _replaced_files(old, new, {sid for sid in set(old_given) | set(new_given)
                                          if old_given.get(sid) != new_given.get(sid)})
    for relpath in sorted(set(old.files) & set(new.files)):
        source = file_sources.get(relpath, "")
        if old.files[relpath] != new.files[relpath] and (
                old_given.get(source) == new_given.get(source)):
            changes.append(f"file {relpath} changed (source {source})")
    return changes


def _replaced_files(old: Lock, new: Lock, moved: set[str]) -> list[str]:
    """Archives and wheels the spec gives as before whose sha256 moved. Their pin is the
    file's own hash, whatever is taken from it: a moved pin is a replaced file, even
    where the files shipped so far are the same (a component the spec adds would take
    a DLL no lock pinned). A toolkit's or folder's pin covers the files taken, which
    another selection changes: those files are compared one by one instead."""
    changes = []
    for sid in sorted(set(old.sources) & set(new.sources) - moved):
        was, now = old.sources[sid], new.sources[sid]
        if was != now and (_pinned_by_file(now) or was.kind != now.kind):
            changes.append(f"source {sid} changed")
    return changes


def _pinned_by_file(source: LockedSource) -> bool:
    """A source the lock pins by its file's sha256 (a zip, a wheel): a changed pin is a
    changed input. A folder's pin follows the members the recipe takes from it."""
    kind = SOURCE_KINDS.get(source.kind)
    return kind is not None and kind.one_file


def _listed(changes: list[str]) -> str:
    more = len(changes) - _SHOWN
    return "; ".join(changes[:_SHOWN]) + (f"; and {more} more" if more > 0 else "")
