"""The store's records by a wheel's pin: each runtime once on disk (issue 43, item 5).

A wheel pip fetched into the wheel cache and its members unpacked into the store are
the same runtime twice (2.4 GB + 2.4 GB for the cuDNN 8.9 set). So a pack that took
members of a wheel the recipe pins by sha256, and proved the wheel to be that one,
also records them under the pin itself (`pins/<sha256>`: each member's sha256, sealed
with the store's key like the other records, store/seal.py), beside the record under
the wheel file's fingerprint (store.py). A later pack that finds the wheel neither
given nor in the wheel cache takes the members from the store by this record
(sources/stored_wheel.py), the objects proven as always (store/hashed.py), and
fetches nothing. The record also keeps every member the recipes that wrote it name of
the wheel (`wanted`): only a wheel whose record lists all of them, every object
present, counts as held whole — what `$BUNDLER_KEEP_WHEELS=none` removes from the wheel
cache, and what `bundler cache` reports as held twice.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.pack.store.seal import seal, unseal
from bundler.pack.store.store import SourceRecord, Store, StoreError
from bundler.pack.store.trust import write_record
from bundler.support.json_files import read_json

FOLDER = "pins"
_KIND = "wheel-pin"
_MAX_RECORD_BYTES = 4 << 20

KEEP_VARIABLE = "BUNDLER_KEEP_WHEELS"
KEEP_ALL = "all"     # the default: a re-fetch costs a download, so the wheel stays
KEEP_NONE = "none"   # a wheel the store holds whole goes: the runtime is once on disk


@dataclass(frozen=True)
class PinRecord:
    """What packs proved of the wheel a pin names: each member's sha256, and every
    member the recipes that wrote it name of that wheel."""

    members: dict[str, str]
    wanted: frozenset[str]

    @property
    def whole(self) -> bool:
        return self.wanted <= set(self.members)


def keep_wheels(environ: Mapping[str, str]) -> bool:
    """$BUNDLER_KEEP_WHEELS: whether the wheel cache keeps the recipe wheels the store
    holds whole (`all`, the default) or not (`none`); StoreError for another value."""
    value = environ.get(KEEP_VARIABLE, "").strip().lower() or KEEP_ALL
    if value not in (KEEP_ALL, KEEP_NONE):
        raise StoreError(f"{KEEP_VARIABLE}={environ.get(KEEP_VARIABLE)!r} is neither "
                         f"'{KEEP_ALL}' nor '{KEEP_NONE}'",
                         f"'{KEEP_NONE}' removes a recipe wheel from the wheel cache once "
                         f"the runtime store holds all of it; '{KEEP_ALL}' (the default) "
                         "keeps it")
    return value == KEEP_ALL


def read(store: Store, pin: str) -> PinRecord | None:
    """The sealed record of `pin`, if there is one whose seal holds."""
    path = _path(store, pin)
    try:
        body = unseal(store.key, _KIND, pin,
                      read_json(path, _MAX_RECORD_BYTES, StoreError, "")) \
            if path.is_file() else None
    except StoreError:
        return None   # unreadable: the wheel is fetched, as if there were no record
    if not isinstance(body, dict):
        return None
    members, wanted = body.get("members"), body.get("wanted")
    if isinstance(members, dict) and isinstance(wanted, list) and \
            all(isinstance(k, str) and isinstance(v, str) for k, v in members.items()) and \
            all(isinstance(w, str) for w in wanted):
        return PinRecord(dict(members), frozenset(wanted))
    return None


def remember(store: Store, pin: str, members: Mapping[str, str],
             wanted: Collection[str]) -> None:
    """Record (or extend) what a pack proved of the pinned wheel: `members` it took,
    `wanted` every member its recipe names of the wheel."""
    known = read(store, pin)
    merged = {**(known.members if known else {}), **members}
    if known is not None and merged == known.members and set(wanted) <= known.wanted:
        return   # nothing new: a warm pack writes nothing here
    body = {"members": merged,
            "wanted": sorted({*(known.wanted if known else ()), *wanted})}
    write_record(_path(store, pin), seal(store.key, _KIND, pin, body))


def covering(store: Store, pin: str, takes: Collection[str]) -> SourceRecord | None:
    """The record of `pin` as a source record (its identity the pin), if it lists every
    member a pack takes and each of those objects is in the store; None otherwise (the
    wheel is then fetched). The objects' bytes are proven where they are taken."""
    record = read(store, pin)
    if record is None or not all(record.members.get(m) for m in takes):
        return None
    taken = {m: record.members[m] for m in takes}
    if not all(store.object_path(sha).is_file() for sha in taken.values()):
        return None
    return SourceRecord(pin, taken)


def held_whole(store: Store, pin: str) -> bool:
    """Whether the store holds every member the recipes name of the pinned wheel: only
    then may the wheel cache let the wheel go."""
    record = read(store, pin)
    return record is not None and record.whole and \
        all(store.object_path(sha).is_file() for sha in record.members.values())


def drop_held_wheels(store: Store, folders: Mapping[str, Path]) -> list[Path]:
    """Remove from the wheel cache each pinned wheel's folder (pin -> folder) whose
    members the store holds whole; the folders removed."""
    dropped = []
    for pin, folder in sorted(folders.items()):
        if folder.is_dir() and held_whole(store, pin):
            shutil.rmtree(folder, ignore_errors=True)
            dropped.append(folder)
    return dropped


def drop_orphans(store: Store) -> None:
    """The records naming an object the store no longer has (the cap, prune, a damaged
    one removed): the next pack of such a wheel fetches it."""
    for path in sorted((store.root / FOLDER).glob("*")):
        if path.name.startswith("."):
            continue   # a record being written (remember's temporary file)
        record = read(store, path.name)
        if record is None or not all(store.object_path(sha).is_file()
                                     for sha in record.members.values()):
            path.unlink(missing_ok=True)


def _path(store: Store, pin: str) -> Path:
    return store.root / FOLDER / pin
