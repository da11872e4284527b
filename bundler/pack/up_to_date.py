"""Up to date: a re-pack with nothing changed since the last pack does no work (cargo's
fingerprints, make's times).

After a pack, `bundler pack` keeps a record in the runtime store (`fresh/<key>.json`,
sealed with the store's key like its other records, store/seal.py): the stamp (size,
modification and change times, file id) of every file the bundle was made from or
consists of: the spec, its lock, the requirement files, a recipe file, each input, the
app folder, the bundle folder and its zip, and bundler's own files, each folder with
every entry in it. The key names the rest of what decides the bundle: the spec's path,
the options that change the output, the environment variables bundler and pip read, the
Python that runs bundler.

The next pack with the same key compares first: every recorded path with the same
stamp and no entry added to or removed from a recorded folder, and it says "up to date"
at once, nothing read, hashed or written (the issue 30 goal: a re-pack with nothing
changed within 2x a `cp` of its zip). Anything else packs in full, as `--recheck` does.
What that claim rests on is said with it: stamps, not bytes (`bundler verify` reads
the bytes).

The stamps are support/file_stamps.py's (the change time among them: an edit with the
size and modification time put back still shows). A write in the same clock tick as
the stamp taken of its file would leave both times as they were, so a record is kept only once every
stamp is older than the file system's clock after the stamps were taken (the git
index's "racy" rule); see `_settled`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bundler.errors import BundlerError
from bundler.formats.swap_journal import is_pack_file_of
from bundler.pack.store.seal import seal, unseal
from bundler.support.file_stamps import listing, stamp
from bundler.support.json_files import json_bytes, read_json
from bundler.version import __version__

FOLDER = "fresh"
_KIND = "fresh-pack"
_MAX_RECORD_BYTES = 64 << 20   # a CUDA toolkit folder as an input: ~20k entries
# What bundler and pip read from the environment (the store, the caches, pip's index,
# the CUDA folders a source may come from, the search paths the app scan consults).
_VARIABLE_PREFIXES = ("BUNDLER_", "PIP_", "CUDA", "CUDNN")
_VARIABLES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV")
_SETTLE_TRIES = 20   # x 10 ms: a coarse file-system clock moves on within milliseconds
_OWN_CODE = Path(__file__).resolve().parents[1]   # the bundler package

# file_stamps.Stamp as JSON holds it (a list), so a fresh snapshot compares equal to a
# record read back
Stamp = list[int]


@dataclass(frozen=True)
class MadeFrom:
    """What a bundle was made from and consists of (pipeline.PackResult.made_from):
    files stamped one by one, folders with every entry below them; `beside`, paths
    whose pack files (a killed pack's staging folder, its --zip note) are listed;
    `outputs`, those of the files and folders the pack itself wrote (the bundle, the
    lock, the zip)."""

    files: tuple[Path, ...]
    folders: tuple[Path, ...]
    beside: tuple[Path, ...] = ()
    outputs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class Fresh:
    """A pack found up to date: what the last pack said (its JSON summary) and when."""

    summary: dict[str, Any]
    packed_at: str


def pack_key(spec_path: Path, options: Mapping[str, object],
             environ: Mapping[str, str]) -> str:
    """What besides the recorded files decides a bundle. `options`: the pack options
    that change what is written (--out, --zip, --copy, --source), as absolute paths."""
    variables = {name: value for name, value in environ.items()
                 if name.startswith(_VARIABLE_PREFIXES) or name in _VARIABLES}
    named = [os.path.abspath(spec_path), {k: str(v) for k, v in options.items()}, variables,
             sys.version, sys.executable, __version__]
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode("utf-8",
                                                                   "surrogatepass")).hexdigest()


def check(store_root: Path, key: bytes, pack: str) -> Fresh | None:
    """The last pack's record for `pack` (pack_key) if every path it names is as it
    was then; None for anything else (no record, a seal that does not hold, a change)."""
    try:
        body = unseal(key, _KIND, pack, read_json(_record_path(store_root, pack),
                                                  _MAX_RECORD_BYTES, BundlerError, ""))
        if not isinstance(body, dict):
            return None
        files, folders, beside = body["files"], body["folders"], body["beside"]
        now = _snapshot(files, folders, beside, store_root)
        if now != {"files": files, "folders": folders, "beside": beside}:
            return None
        return Fresh(summary=dict(body["summary"]), packed_at=str(body["packed_at"]))
    except (BundlerError, KeyError, TypeError, ValueError, OSError):
        return None


def remember(store_root: Path, key: bytes, pack: str, made: MadeFrom,
             summary: Mapping[str, Any], started: int | None) -> bool:
    """Keep the record of a pack that just finished (`started`: the file system's clock
    before it began). False (and no record) where an input changed while it ran (the
    pack wrote into its own app folder: a lock or a zip in an app of "."), where the
    stamps did not settle, or where the store cannot be written: the next pack then
    packs in full."""
    names = sorted({str(path) for path in made.files})
    roots = sorted({str(path) for path in made.folders})
    try:
        snapshot = _settled(names, roots, sorted({str(path) for path in made.beside}),
                            store_root)
    except OSError:   # a stamp that cannot be read: nothing to compare with next time
        return False
    if snapshot is None or started is None or \
            _changed_since(snapshot, {str(path) for path in made.outputs}, started):
        return False
    body = {**snapshot, "summary": dict(summary),
            "packed_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    path = _record_path(store_root, pack)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{pack}.", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(json_bytes(seal(key, _KIND, pack, body)))
        os.replace(temporary, path)
    except OSError:
        return False
    return True


def clock(store_root: Path) -> int | None:
    """The file system's clock at the start of its next tick, taken before a pack (for
    `remember`): a file written before this call has an older stamp, one the pack
    writes does not (a file written in the tick the clock was read in would look like
    one the pack wrote, and the pack would never be called up to date)."""
    first = _file_system_clock(store_root)
    for _ in range(_SETTLE_TRIES * 10):
        now = _file_system_clock(store_root)
        if first is None or now is None or now > first:
            return now
        time.sleep(0.001)
    return None


def _changed_since(snapshot: Mapping[str, Any], outputs: set[str], started: int) -> bool:
    """Whether an input (anything but the pack's outputs) was written after `started`:
    the bundle was then made from what it is no longer."""
    inputs = [stamp for name, stamp in snapshot["files"].items() if name not in outputs]
    inputs += [stamp for root, entries in snapshot["folders"].items() if root not in outputs
               for stamp in entries.values()]
    return any(stamp is not None and stamp[2] >= started for stamp in inputs)


def stale_records(store_root: Path) -> list[Path]:
    """The records of packs whose lock is gone (or that cannot be read): `bundler cache
    prune` removes them, as it removes the registrations of such locks."""
    stale = []
    for record in sorted((store_root / FOLDER).glob("*.json")):
        try:
            body = read_json(record, _MAX_RECORD_BYTES, BundlerError, "")["body"]
            if Path(body["summary"]["lock"]).is_file():
                continue
        except (BundlerError, KeyError, TypeError):
            pass
        stale.append(record)
    return stale


def own_code() -> Path:
    """bundler's own files: a changed bundler (a new version, an edit) packs anew."""
    return _OWN_CODE


def _record_path(store_root: Path, pack: str) -> Path:
    return store_root / FOLDER / f"{pack}.json"


def _settled(files: list[str], folders: list[str], beside: list[str], store_root: Path
             ) -> dict[str, Any] | None:
    """The stamps, once the file system's clock has moved past every one of them: a
    file stamped in the clock's current tick could still be written within that tick
    without its times changing, so the stamps are taken again after the tick."""
    for _ in range(_SETTLE_TRIES):
        snapshot = _snapshot(files, folders, beside, store_root)
        clock = _file_system_clock(store_root)
        if clock is None:
            return None
        if all(stamp is None or stamp[2] < clock for stamp in _stamps(snapshot)):
            return snapshot
        time.sleep(0.01)
    return None


def _file_system_clock(store_root: Path) -> int | None:
    """The time the file system gives a file written now (its coarse clock, not
    time.time_ns's)."""
    folder = store_root / FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(prefix=".clock.", dir=folder)
        try:
            try:
                os.write(handle, b"\0")
            finally:
                os.close(handle)
            return stamp(name)[2]   # the change time, as the stamps compared with it
        finally:
            os.unlink(name)
    except OSError:
        return None


def _stamps(snapshot: Mapping[str, Any]) -> Iterable[Stamp | None]:
    yield from snapshot["files"].values()
    for entries in snapshot["folders"].values():
        yield from entries.values()


def _snapshot(files: Iterable[str], folders: Iterable[str], beside: Iterable[str],
              store_root: Path) -> dict[str, Any]:
    roots = list(folders)
    # A folder inside another recorded one (the bundle in the app's dist/) is walked on
    # its own; the store is bundler's cache, not an input.
    skip = {os.path.normcase(root) for root in roots} | {os.path.normcase(str(store_root))}
    return {"files": {name: _stamp(name) for name in files},
            "folders": {root: _walk(root, skip) for root in roots},
            "beside": {path: _pack_files_beside(Path(path)) for path in beside}}


def _pack_files_beside(path: Path) -> list[str]:
    """The names of the files packs of `path` keep beside it (formats/swap_journal.py):
    its pack lock stays; a killed pack's staging folder or --zip note is debris."""
    try:
        return sorted(entry.name for entry in os.scandir(path.parent)
                      if is_pack_file_of(path, entry.name))
    except OSError:
        return []


def _stamp(path: str) -> Stamp | None:
    """None where nothing is there (it must still be absent); OSError where something
    is but its stamp cannot be read (no access): such a pack is never recorded, and
    a record naming it never holds."""
    try:
        return list(stamp(path, follow_links=False))
    except (FileNotFoundError, NotADirectoryError):
        return None


def _walk(root: str, skip: set[str]) -> dict[str, Stamp | None]:
    """Every entry below `root` by its relative path, folders included (an entry added
    or removed changes the listing); links are stamped, not followed. One that goes
    between the listing and its stamp is None (listed, absent); a folder that goes has no
    entries. A folder that is there but cannot be listed, or an entry that cannot be
    stamped, raises OSError (see `_stamp`)."""
    found: dict[str, Stamp | None] = {}
    pending = [("", root)]
    while pending:
        relative, folder = pending.pop()
        try:
            entries = listing(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue   # gone: its entries are missing from the listing
        for entry in entries:
            name = f"{relative}{entry.name}"
            path = os.path.join(folder, entry.name)
            if entry.is_folder:
                if os.path.normcase(path) in skip or (
                        entry.name == "__pycache__" and root == str(_OWN_CODE)):
                    continue   # bundler's own bytecode is written as it runs
                pending.append((f"{name}/", path))
            found[name] = list(entry.stamp) if entry.stamp else None
    return found
