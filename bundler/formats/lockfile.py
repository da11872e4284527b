"""The lock file's format (`app.spec.lock`): read by the packer (pack/lock.py checks new
inputs against it) and by `bundler verify --lock` (a bundle against it).

Format 2 adds what the lock was made from (the spec's tables, the components), so a
later pack can tell a spec change (the lock follows it) from a changed input (refused).
A format-1 lock is still read: it lacks that record, so it is treated as before.

`bundle` (optional in format 2; absent in locks written before it) pins what the
bootstrap obeys beyond the runtime files: the manifest as a whole (load order, versions,
driver minimums, the bootstrap's hash) and the entry script that loads the bootstrap, by
their paths below the bundle's root. It is what the pack wrote, not an input: a pack
follows it (refused only under --locked) and `verify --lock` checks it. A lock without
it pins neither (whether written before it or with it deleted): `verify --lock` and
`doctor --lock` refuse it unless told it predates the record, `pack --locked` refuses
it (diagnose/verify.py require_bundle_record, pack/lock.py check_lock).

`wheels` (optional, embedded-python): the wheel set resolved for app.requirements,
which a re-pack with unchanged requirement files installs again without resolving;
`wheels_for`, what it was resolved for (the target platform and CPython whose
environment markers were evaluated)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundler.errors import LockError
from bundler.support.json_files import json_bytes, read_json

LOCK_FORMAT = 2
READ_FORMATS = (1, 2)   # a format-1 lock (no spec record) is read and upgraded by a pack
MAX_LOCK_BYTES = 16 << 20   # a lock pins tens of files; anything this large is not one
_DAMAGED_HINT = "delete it and pack again, or pass --update-lock"


@dataclass(frozen=True)
class LockedRecipe:
    """`recipe`: the recipe packed, by name and the sha256 of its TOML."""

    name: str = ""
    sha256: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "sha256": self.sha256}


@dataclass(frozen=True)
class LockedSource:
    """`sources.ID`: one input's kind (a recipe source kind: recipe/model.py's
    SOURCE_KINDS says how each is pinned) and its pin: the file's sha256 for a zip or a
    wheel, the digest of the members taken for a folder."""

    sha256: str
    kind: str = ""   # "" only in locks bundler never wrote (tests' stand-ins)

    def to_json(self) -> dict[str, str]:
        return {"sha256": self.sha256, **({"kind": self.kind} if self.kind else {})}


@dataclass(frozen=True)
class LockedWheelPin:
    """`wheels.PROJECT` (embedded-python): the wheel resolved, installed again from
    the wheel cache while the requirement files are unchanged."""

    version: str
    file: str      # the wheel's file name
    sha256: str

    def to_json(self) -> dict[str, str]:
        return {"version": self.version, "file": self.file, "sha256": self.sha256}


@dataclass(frozen=True)
class Lock:
    """The lock as typed records. The constructor also takes each part in its JSON shape
    (a dict), read into the records, so a lock is written the same way it is read."""

    recipe: LockedRecipe
    sources: Mapping[str, LockedSource]
    files: Mapping[str, str]     # path in the bundle -> sha256
    format: int = LOCK_FORMAT
    # Format 2: the spec's tables as the pack read them (the user's TOML, kept as it
    # is), and the components it packed; None in a format-1 lock, which did not record them.
    spec: dict[str, dict] | None = None
    components: list[str] | None = None
    # Path below the bundle's root -> sha256 of the manifest and the entry script; None
    # in a lock written before it was recorded.
    bundle: Mapping[str, str] | None = None
    # embedded-python: the wheels resolved for app.requirements, by project name.
    # None: not recorded.
    wheels: Mapping[str, LockedWheelPin] | None = None
    # embedded-python: what `wheels` was resolved for, {"platform": uv's target triple,
    # "python": the bundle's CPython}. None: not recorded (resolved for this machine).
    wheels_for: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        _set(self, "recipe", _recipe(self.recipe))
        _set(self, "sources", {sid: _source(pins) for sid, pins in _table(
            self.sources, "sources").items()})
        _set(self, "files", _strings(self.files, "files"))
        if self.bundle is not None:
            _set(self, "bundle", _strings(self.bundle, "bundle"))
        if self.wheels is not None:
            _set(self, "wheels", {name: _wheel(pins) for name, pins in _table(
                self.wheels, "wheels").items()})
        if self.wheels_for is not None:
            _set(self, "wheels_for", _strings(self.wheels_for, "wheels_for"))
        if self.spec is not None and not (isinstance(self.spec, dict) and all(
                isinstance(table, dict) for table in self.spec.values())):
            raise TypeError("spec must be a table of the spec's tables")
        if self.components is not None and not (isinstance(self.components, list) and all(
                isinstance(name, str) for name in self.components)):
            raise TypeError("components must be a list of names")

    def to_bytes(self) -> bytes:
        data: dict[str, Any] = {
            "recipe": self.recipe.to_json(), "format": self.format,
            "sources": {sid: pin.to_json() for sid, pin in self.sources.items()},
            "files": dict(self.files)}
        if self.spec is not None:
            data["spec"] = self.spec
        if self.components is not None:
            data["components"] = self.components
        if self.bundle is not None:
            data["bundle"] = dict(self.bundle)
        if self.wheels is not None:
            data["wheels"] = {name: pin.to_json() for name, pin in self.wheels.items()}
        if self.wheels_for is not None:
            data["wheels_for"] = dict(self.wheels_for)
        return json_bytes(data)


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
        return Lock(recipe=data["recipe"], sources=data["sources"], files=data["files"],
                    format=found, spec=data.get("spec"), components=data.get("components"),
                    bundle=data.get("bundle"), wheels=data.get("wheels"),
                    wheels_for=data.get("wheels_for"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LockError(f"{path}: not a valid lock file ({exc})", _DAMAGED_HINT) from None


# Reading each part into its record: everything the readers use is what it must be
# (the lock comparison, reuse and verify read it without further checks).

def _set(lock: Lock, name: str, value: object) -> None:
    object.__setattr__(lock, name, value)   # the record is frozen once built


def _table(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a table")
    return value


def _strings(value: object, what: str) -> dict[str, str]:
    table = _table(value, what)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in table.items()):
        raise TypeError(f"{what} must be a table of paths and sha256s")
    return dict(table)


def _text(table: Mapping[str, Any], key: str, what: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise TypeError(f"{what}.{key} must be a string")
    return value


def _recipe(value: object) -> LockedRecipe:
    if isinstance(value, LockedRecipe):
        return value
    table = _table(value, "recipe")
    return LockedRecipe(_text(table, "name", "recipe", ""), _text(table, "sha256", "recipe", ""))


def _source(value: object) -> LockedSource:
    if isinstance(value, LockedSource):
        return value
    table = _table(value, "each source")
    return LockedSource(_text(table, "sha256", "source", ""), _text(table, "kind", "source", ""))


def _wheel(value: object) -> LockedWheelPin:
    if isinstance(value, LockedWheelPin):
        return value
    table = _table(value, "wheels")
    if not all(isinstance(table.get(key), str) for key in ("version", "file", "sha256")):
        raise TypeError("wheels must be a table of version, file and sha256 per project")
    return LockedWheelPin(table["version"], table["file"], table["sha256"])
