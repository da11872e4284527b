"""Reuse: take runtime files a pack has read before, instead of reading the inputs.

Per source, all or nothing (a source read at all is read whole, one pass, as stage.py
does), the first that works of:

1. the store: the input's fingerprint (Source.fingerprint: for a zip or wheel its size
   and central directory, which holds every member's name, CRC and sizes) names a
   record of what an earlier pack read from it — the input's sha256 (its identity, as
   the lock pins it) and each taken member's sha256 — and the store holds those files;
2. the previous bundle at the same output: the input still hashes to the identity the
   lock pins (the input is hashed, not unpacked), and the previous bundle's files of
   that source still hash to what its manifest says.

Every file taken is re-hashed first, so a damaged store entry or an edited previous
file is never shipped: the input is read instead; a stored object whose stamp is the
one the store recorded when it last hashed it is not read again (store/hashed.py, git's
index with its racy-stamp rule). What is taken is linked into the
new bundle (or copied, with --copy, or across volumes) only if it is still the file
that was hashed: one that vanished in between (another pack's eviction, `bundler cache
prune`, the size cap) or was replaced puts the source back to be read from its input,
as a cold pack reads it, and the summary says so. docs/store.md has the rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bundler.errors import BundlerError
from bundler.formats.manifest import FoundManifest, find_manifest
from bundler.pack.lock import Lock
from bundler.pack.sources import Source
from bundler.pack.sources.fetch import can_fetch
from bundler.pack.stage import StagedFile
from bundler.pack.store import hashed as hashed_records
from bundler.pack.store import pins
from bundler.pack.store.store import (
    FileStamp,
    ObjectGone,
    SourceRecord,
    Store,
    StoreError,
    file_stamp,
    place,
)
from bundler.pack.store.upkeep import size_cap, trim
from bundler.recipe.load import Recipe, RuntimeFile
from bundler.support.file_stamps import stamp as full_stamp
from bundler.support.hashing import sha256_crc32_file, sha256_file

# Re-hashing runs on threads: hashlib releases the GIL, so two cores hash two files.
_HASH_THREADS = 4


@dataclass(frozen=True)
class Previous:
    """The bundle a pack replaces, and the lock that pinned its inputs."""

    found: FoundManifest
    lock: Lock


@dataclass
class Reuse:
    staged: list[StagedFile] = field(default_factory=list)
    identities: dict[str, str] = field(default_factory=dict)   # source id -> identity
    linked: int = 0
    copied: int = 0
    origin: dict[str, str] = field(default_factory=dict)   # source id -> "store"/"previous"
    # what vanished or changed between its check and its link: its source is read instead
    notes: list[str] = field(default_factory=list)
    # the stored objects taken and how their bytes were proven (store/hashed.py)
    proofs: list[hashed_records.Proof] = field(default_factory=list)


@dataclass(frozen=True)
class _Checked:
    """A file to take, as it was hashed: its path, sha256 and which file it was."""

    path: Path
    sha256: str
    stamp: FileStamp


# member -> (sha256, CRC-32, size, which file was hashed); "" where unreadable
_Digests = dict[str, tuple[str, int, int, FileStamp]]


def previous_bundle(target: Path, lock: Lock | None) -> Previous | None:
    if lock is None or not target.is_dir():
        return None
    try:
        return Previous(find_manifest(target), lock)
    except BundlerError:
        return None   # not a bundle, or damaged: nothing to take from it


def reuse_runtime(files: list[RuntimeFile], sources: Mapping[str, Source], store: Store | None,
                  previous: Previous | None, runtime_dir: Path, runtime_relpath: str,
                  copy: bool) -> Reuse:
    """Place every file of each source that can be reused into `runtime_dir`."""
    result = Reuse()
    runtime_dir.mkdir(parents=True, exist_ok=True)
    taken_of = {sid: [f for f in files if f.source == sid] for sid in sources}
    plans = {sid: _store_plan(source, taken_of[sid], store)
             for sid, source in sorted(sources.items())}
    # Every source's stored files hashed in one pool, largest first: source by source,
    # cuDNN's largest DLL kept one core idle while it was hashed (0.91 s -> 0.61-0.65 s
    # for the 8.9 set).
    hashed, proofs = _store_digests(store, plans)
    for sid, source in sorted(sources.items()):
        taken, plan = taken_of[sid], plans[sid]
        # The store first: the previous bundle costs a hash of the input.
        way, found = "store", _from_store(
            source, plan, {m: hashed[(sid, m)] for m in plan.paths}) if plan else None
        if found is None:
            way, found = "previous", _from_previous(source, taken, previous)
        if found is not None:
            identity, origins = found
            try:
                _place_all(taken, origins, runtime_dir, runtime_relpath, copy, result)
            except ObjectGone as gone:   # the stage reads this source from its input
                result.notes.append(f"{gone.args[0]} vanished or changed between its "
                                    f"check and its link (a concurrent eviction); "
                                    f"{source.location} was read instead")
                continue
            result.identities[sid] = identity
            result.origin[sid] = way
    # the stored files taken, proven: the pack records their stamps once it is done
    result.proofs = [proof for (sid, _), proof in proofs.items()
                     if result.origin.get(sid) == "store"]
    return result


_Member = tuple[str, str]   # (source id, member)


def _store_digests(store: Store | None, plans: Mapping[str, _StorePlan | None]
                   ) -> tuple[dict[_Member, tuple[str, int, int, FileStamp]],
                              dict[_Member, hashed_records.Proof]]:
    """Each planned stored file's digest (as `_digests`), and the proof of its bytes:
    a file whose stamp is the one the store recorded when it last hashed it is taken at
    the record's word (the CRC-32 too, where one is needed and recorded); every other
    one is read, and its record written where its stamp held still while it was read
    and is older than the clock read before (the racy rule)."""
    paths = {(sid, m): path for sid, plan in plans.items() if plan
             for m, path in plan.paths.items()}
    wanted = {(sid, m): sha for sid, plan in plans.items() if plan
              for m, sha in plan.wanted.items()}
    with_crc = {(sid, m) for sid, plan in plans.items() if plan for m in plan.with_crc}
    found: dict[_Member, tuple[str, int, int, FileStamp]] = {}
    proofs: dict[_Member, hashed_records.Proof] = {}
    before: dict[_Member, hashed_records.Stamp] = {}
    for member, path in paths.items():
        try:
            now = full_stamp(path)
            known = hashed_records.known(store.root, store.key, wanted[member], now) \
                if store is not None else None
            if known is not None and (member not in with_crc or known.crc is not None):
                found[member] = (wanted[member], known.crc or 0, now[0],
                                 file_stamp(path.stat()))
                proofs[member] = hashed_records.Proof(wanted[member], path, now, known.crc)
                continue
            before[member] = now
        except OSError:
            pass
    unknown = {member: paths[member] for member in paths if member not in found}
    at = hashed_records.clock(store.root) if store is not None and unknown else None
    for member, digest in _digests(unknown, with_crc & set(unknown)).items():
        found[member] = digest
        if store is None or at is None or digest[0] != wanted[member] or \
                member not in before:
            continue
        try:
            after = full_stamp(paths[member])
        except OSError:
            continue
        crc = digest[1] if member in with_crc else None
        if after == before[member] and hashed_records.remember(
                store.root, store.key, wanted[member], after, at, crc):
            proofs[member] = hashed_records.Proof(wanted[member], paths[member], after, crc)
    return found, proofs


@dataclass(frozen=True)
class _StorePlan:
    """What the store's record of a source names: the files to hash before taking."""

    store: Store
    fingerprint: str
    record: SourceRecord
    wanted: dict[str, str]   # member -> sha256
    paths: dict[str, Path]   # member -> the stored object
    with_crc: frozenset[str]   # members whose input gives a CRC-32 to compare


def _store_plan(source: Source, taken: list[RuntimeFile], store: Store | None
                ) -> _StorePlan | None:
    """The store's record of `source` if it names all of `taken`; None if there is
    none, or the input itself says it is not the one recorded."""
    # a pinned wheel the store holds carries its record (store/pins.py): no fingerprint
    record = source.stored_record()
    fingerprint = "" if record is not None else source.fingerprint()
    if record is None and store is not None and fingerprint:
        record = store.record(fingerprint)
    if store is None or record is None or not source.accepts_identity(record.identity):
        return None
    wanted = {f.member: record.members.get(f.member, "") for f in taken}
    if not all(wanted.values()):
        return None
    stat_key = source.stat_key()
    if stat_key and stat_key not in record.input_stats and \
            source.identity_by_hashing() != record.identity:
        return None   # written since it was proven (in place, its directory kept): read it
    paths = {m: store.object_path(h) for m, h in wanted.items()}
    return _StorePlan(store, fingerprint, record, wanted, paths,
                      frozenset(m for m in paths if source.member_crc(m) is not None))


def _from_store(source: Source, plan: _StorePlan, digests: _Digests
                ) -> tuple[str, dict[str, _Checked]] | None:
    """(identity, {member: (object, sha256)}) if the store has all the plan's files,
    each hashing to its record, and nothing the input itself says contradicts the
    record (docs/store.md)."""
    store, fingerprint, record = plan.store, plan.fingerprint, plan.record
    wanted, paths = plan.wanted, plan.paths
    damaged = [m for m in paths if digests[m][0] and digests[m][0] != wanted[m]]
    for member in damaged:
        store.discard(wanted[member])   # the input is read, and the store mended
    checked = _checked(paths, wanted, digests)
    if checked is None:
        return None
    if not _matches_input(source, digests) or not _confirmed(source, wanted):
        if fingerprint:   # the record contradicts the input: blame the record
            store.forget(fingerprint)
        return None
    for sha256 in wanted.values():
        store.mark_used(sha256)
    return record.identity, checked


def _matches_input(source: Source, digests: _Digests) -> bool:
    """Whether each stored file has the CRC-32 and size the input's own directory gives
    its member: a record naming other objects than the member's is not taken."""
    for member, (_, crc, size, _) in digests.items():
        expected = source.member_crc(member)   # None for a wheel: RECORD checks it
        if expected is not None and expected != (crc, size):
            return False
    return True


def _confirmed(source: Source, wanted: Mapping[str, str]) -> bool:
    """Whether the input's own record of its members (a wheel's RECORD, read anyway when
    it was opened) agrees with the stored files: the store's record is then not taken
    on trust alone."""
    try:
        for member, sha256 in wanted.items():
            source.confirm(member, sha256)
    except BundlerError:
        return False
    return True


def _from_previous(source: Source, taken: list[RuntimeFile], previous: Previous | None
                   ) -> tuple[str, dict[str, _Checked]] | None:
    if previous is None or source.id not in previous.lock.sources:
        return None
    pinned = previous.lock.sources[source.id].sha256
    entries = {e.name: e for e in previous.found.manifest.files if e.source == source.id}
    if not pinned or not all(f.name in entries for f in taken):
        return None
    wanted = {f.member: entries[f.name].sha256 for f in taken}
    paths = {f.member: previous.found.root / entries[f.name].path for f in taken}
    checked = _checked(paths, wanted, _digests(paths, set()))
    if checked is None or not _confirmed(source, wanted) or \
            source.identity_by_hashing() != pinned:
        return None
    return pinned, checked


_Key = TypeVar("_Key")


def _digests(paths: Mapping[_Key, Path], with_crc: AbstractSet[_Key]
             ) -> dict[_Key, tuple[str, int, int, FileStamp]]:
    """Each member's file's (sha256, CRC-32, size, stamp), in one read ("" where
    unreadable); the CRC-32 (which costs) only for `with_crc`, else 0. The stamp is
    taken before the read: a file replaced since, even during the read, is then not
    the one `place` finds, and is not taken. The largest files start first."""
    def digest(member: _Key) -> tuple[str, int, int, FileStamp]:
        path, label = paths[member], f"checking {paths[member].name}"
        try:
            stamp = file_stamp(path.stat())
            if member in with_crc:
                return (*sha256_crc32_file(path, label), stamp)
            return sha256_file(path, label), 0, stamp[2], stamp
        except OSError:
            return "", 0, 0, (0, 0, 0, 0)

    def size(member: _Key) -> int:
        try:
            return paths[member].stat().st_size
        except OSError:
            return 0

    largest_first = sorted(paths, key=size, reverse=True)
    with ThreadPoolExecutor(_HASH_THREADS) as pool:
        found = dict(zip(largest_first, pool.map(digest, largest_first)))
    return {member: found[member] for member in paths}


def _checked(paths: Mapping[str, Path], wanted: Mapping[str, str],
             digests: _Digests) -> dict[str, _Checked] | None:
    """Each member's file if every one hashes to what it should; else None."""
    if any(digests[m][0] != wanted[m] for m in paths):
        return None
    return {m: _Checked(paths[m], wanted[m], digests[m][3]) for m in paths}


def _place_all(taken: list[RuntimeFile], origins: Mapping[str, _Checked],
               runtime_dir: Path, runtime_relpath: str, copy: bool, result: Reuse) -> None:
    """All of a source's files, or none: if one is gone (ObjectGone), the ones placed
    before it are removed again and `result` is left as it was."""
    placed: list[StagedFile] = []
    linked = 0
    try:
        for runtime_file in taken:
            origin = origins[runtime_file.member]
            target = runtime_dir / runtime_file.name
            linked += place(origin.path, target, copy, origin.stamp)
            placed.append(StagedFile(file=runtime_file, path=target,
                                     relpath=f"{runtime_relpath}/{runtime_file.name}",
                                     size=target.stat().st_size, sha256=origin.sha256))
    except ObjectGone:
        for item in placed:
            item.path.unlink(missing_ok=True)
        raise
    result.staged.extend(placed)
    result.linked += linked
    result.copied += len(placed) - linked


def fill_store(store: Store, sources: Mapping[str, Source], staged: list[StagedFile],
               identities: Mapping[str, str], copy: bool,
               wanted: Mapping[str, frozenset[str]] | None = None) -> None:
    """Add what this pack staged to the store, and record each input's fingerprint, so
    the next pack of these inputs (this app or another) reads none of them; and each
    pinned wheel's members under its pin, so the next pack needs no wheel (`wanted`:
    every member the recipe names of each source, store/pins.py)."""
    for item in staged:
        store.add(item.path, item.sha256, copy=copy)
    for sid, source in sources.items():
        fingerprint = source.fingerprint()
        members = {i.file.member: i.sha256 for i in staged if i.file.source == sid}
        if fingerprint:
            stats = (source.stat_key(),) if source.stat_key() else ()
            store.remember(fingerprint, SourceRecord(identities[sid], members, stats))
        # proven the pinned wheel (read and checked against the pin, or by a record)
        if can_fetch(source.spec) and identities[sid] == source.spec.sha256:
            pins.remember(store, source.spec.sha256, members, (wanted or {}).get(sid, ()))


def fill_or_warn(store: Store, recipe: Recipe, sources: Mapping[str, Source],
                  staged: list[StagedFile], identities: Mapping[str, str], copy: bool,
                  environ: Mapping[str, str], warnings: list[str]) -> None:
    """Fill the store with this pack's files, then hold it to its size cap (the least
    recently used go first, never this pack's)."""
    every: dict[str, set[str]] = {}
    for item in [*recipe.files.values(), *recipe.licences]:
        every.setdefault(item.source, set()).add(item.member)
    try:
        fill_store(store, sources, staged, identities, copy,
                   {sid: frozenset(members) for sid, members in every.items()})
        trim(store, size_cap(environ), frozenset(item.sha256 for item in staged))
    except StoreError as exc:
        warnings.append(f"{exc.message} ({exc.hint})")
    except OSError as exc:   # full, read-only: the bundle does not depend on it
        warnings.append(store_trouble(store, "keep this pack's files", exc))


def store_trouble(store: Store, what: str, exc: OSError) -> str:
    return (f"the runtime store {store.root} could not {what} ({exc.strerror or exc}); "
            "the bundle and lock are complete, the next pack reads the inputs again")
