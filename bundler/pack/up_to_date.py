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

What is stamped, and how a difference is said, is pack/fresh_stamps.py's: links by
what they point to too, folders by their own stamp as well as their entries, the
bundle's store objects by what the store proves of their bytes (another bundle's link
to the same object is not a change). A record is kept only where nothing the pack read
changed while it ran (`_changed_since`). A pack that runs in full says why: the first
difference (`Stale`).

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
from bundler.pack.fresh_stamps import ROOT, all_stamps, dependencies, first_change, snapshot
from bundler.pack.store.seal import seal, unseal
from bundler.pack.store.trust import make_folder, write_record
from bundler.support.file_stamps import stamp
from bundler.support.json_files import read_json
from bundler.version import __version__

FOLDER = "fresh"
_KEYS = "keys"   # fresh/keys/<spec>.json: the parts of the last pack's key, hashed
_KIND = "fresh-pack"
_KEY_KIND = "fresh-key"
_MAX_RECORD_BYTES = 64 << 20   # a CUDA toolkit folder as an input: ~20k entries
# What bundler and pip read from the environment (the store, the caches, pip's index,
# the CUDA folders a source may come from, the search paths the app scan consults). A
# `~` in an input's path is not a variable's name but where the path leads: the inputs'
# paths as resolved are part of the key (cmd_pack), so another HOME is another pack.
_VARIABLE_PREFIXES = ("BUNDLER_", "PIP_", "CUDA", "CUDNN")
_VARIABLES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV")
_OPTION_NAMES = {"sources": "the option --source",
                 "inputs": "where an input's path leads (a `~`, a link)"}
_SETTLE_TRIES = 20   # x 10 ms: a coarse file-system clock moves on within milliseconds
_OWN_CODE = Path(__file__).resolve().parents[1]   # the bundler package


@dataclass(frozen=True)
class MadeFrom:
    """What a bundle was made from and consists of (pipeline.PackResult.made_from):
    files stamped one by one, folders with every entry below them; `listed`, folders
    with their top-level entries only (a site-packages examined for second copies);
    `beside`, paths whose pack files (a killed pack's staging folder, its --zip note)
    are listed; `outputs`, those of the files and folders the pack itself wrote (the
    bundle, the lock, the zip); `base`, the folder paths are said relative to (the
    spec's)."""

    files: tuple[Path, ...]
    folders: tuple[Path, ...]
    beside: tuple[Path, ...] = ()
    outputs: tuple[Path, ...] = ()
    listed: tuple[Path, ...] = ()
    base: Path | None = None


@dataclass(frozen=True)
class Fresh:
    """A pack found up to date: what the last pack said (its JSON summary) and when."""

    summary: dict[str, Any]
    packed_at: str


@dataclass(frozen=True)
class Stale:
    """A pack that runs in full, and why: the first thing that changed."""

    reason: str


@dataclass(frozen=True)
class PackKey:
    """The record's name, and the parts it was hashed from (to say which changed)."""

    name: str
    parts: dict[str, str]


def pack_key(spec_path: Path, options: Mapping[str, object],
             environ: Mapping[str, str]) -> PackKey:
    """What besides the recorded files decides a bundle. `options`: the pack options
    that change what is written (--out, --zip, --copy, --source) and the paths the
    inputs resolve to (a `~`, a link), as absolute paths."""
    parts = {"the spec's path": os.path.abspath(spec_path),
             "Python": f"{sys.version} {sys.executable}", "bundler": __version__}
    parts |= {_OPTION_NAMES.get(name, f"the option --{name.replace('_', '-')}"):
              json.dumps(value, sort_keys=True, default=str) for name, value in options.items()}
    parts |= {f"the variable {name}": value for name, value in environ.items()
              if name.startswith(_VARIABLE_PREFIXES) or name in _VARIABLES}
    parts |= {f"the installed {name}": version for name, version in dependencies().items()}
    named = json.dumps(parts, sort_keys=True).encode("utf-8", "surrogatepass")
    return PackKey(hashlib.sha256(named).hexdigest(), parts)


def check(store_root: Path, key: bytes, pack: PackKey) -> Fresh | Stale:
    """The last pack's record for `pack` if every path it names is as it was then;
    else why not (no record, a seal that does not hold, the first change)."""
    try:
        body = unseal(key, _KIND, pack.name, read_json(_record_path(store_root, pack.name),
                                                       _MAX_RECORD_BYTES, BundlerError, ""))
    except (BundlerError, OSError):
        return Stale(_no_record(store_root, key, pack))
    if not isinstance(body, dict):
        return Stale("the last pack's record does not hold (its seal, or its form)")
    try:
        now = snapshot(body["files"], body["folders"], body["listed"], body["beside"],
                       store_root, str(_OWN_CODE))
        changed = first_change(body, now, str(body["base"]), body["objects"],
                               store_root, key)
        if changed is not None:
            return Stale(changed)
        return Fresh(summary=dict(body["summary"]), packed_at=str(body["packed_at"]))
    except OSError as exc:
        return Stale(f"{exc.filename or 'a recorded file'} cannot be looked at "
                     f"({exc.strerror or exc})")
    except (KeyError, TypeError, ValueError, AttributeError):
        return Stale("the last pack's record is of another form (another bundler)")


def remember(store_root: Path, key: bytes, pack: PackKey, made: MadeFrom,
             summary: Mapping[str, Any], started: int | None) -> bool:
    """Keep the record of a pack that just finished (`started`: the file system's clock
    before it began). False (and no record) where what it read changed while it ran (an
    app file added or removed, an input written; the pack wrote into its own app folder:
    a lock or a zip in an app of "."), where the stamps did not settle, or where the
    store cannot be written: the next pack then packs in full."""
    _remember_key(store_root, key, pack)
    names = sorted({str(path) for path in made.files})
    roots = sorted({str(path) for path in made.folders})
    listed = sorted({str(path) for path in made.listed} - set(roots))
    try:
        taken = _settled(names, roots, listed, sorted({str(path) for path in made.beside}),
                         store_root)
    except OSError:   # a stamp that cannot be read: nothing to compare with next time
        return False
    if taken is None or started is None or \
            _changed_since(taken, {str(path) for path in made.outputs}, started):
        return False
    body = {**taken, "summary": dict(summary), "base": str(made.base or ""),
            "objects": _store_objects(taken, summary, store_root),
            "packed_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    return _write(_record_path(store_root, pack.name), seal(key, _KIND, pack.name, body))


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


def _changed_since(taken: Mapping[str, Any], outputs: set[str], started: int) -> bool:
    """Whether what the pack read (anything but its outputs) was written, or had an entry
    added or removed, after `started`: the bundle was then made from what it is no
    longer (an app file deleted while the pack ran is in the bundle, not in the app)."""
    inputs = [stamp for name, stamp in taken["files"].items() if name not in outputs]
    inputs += [stamp for kind in ("folders", "listed")
               for root, entries in taken[kind].items() if root not in outputs
               for stamp in entries.values()]
    # None: a path that is not there (was not written after `started` either)
    return any(max(stamp[2::5]) >= started for stamp in inputs
               if stamp is not None and len(stamp) >= 5)


def _store_objects(taken: Mapping[str, Any], summary: Mapping[str, Any], store_root: Path
                   ) -> dict[str, dict[str, str]]:
    """The bundle's runtime files that are hard links of store objects: their entry in
    the bundle's folder -> sha256 (another bundle linking the same object changes their
    change time, not their bytes: fresh_stamps.first_change asks the store)."""
    out = str(summary.get("out", ""))
    entries = taken["folders"].get(out, {})
    found: dict[str, str] = {}
    for entry in summary.get("files", []):
        relpath, sha256 = str(entry.get("path", "")), str(entry.get("sha256", ""))
        objected = store_root / "objects" / sha256[:2] / sha256
        try:
            facts = stamp(objected)
        except OSError:
            continue
        for name, was in entries.items():
            if name != ROOT and (name == relpath or name.endswith(f"/{relpath}")) and \
                    was is not None and len(was) == 5 and \
                    (was[3], was[4]) == (facts[3], facts[4]):
                found[name] = sha256
    return {out: found} if found else {}


def _no_record(store_root: Path, key: bytes, pack: PackKey) -> str:
    """Why there is no record for this key: what differs from the last pack of this
    spec's key (an option, a variable, Python, bundler, a dependency), by name."""
    try:
        last = unseal(key, _KEY_KIND, pack.parts["the spec's path"], read_json(
            _key_path(store_root, pack), _MAX_RECORD_BYTES, BundlerError, ""))
    except (BundlerError, OSError):
        last = None
    if not isinstance(last, dict):
        return "no earlier pack of this spec is recorded"
    hashed = _hashed_parts(pack.parts)
    changed = sorted(name for name in set(hashed) | set(last)
                     if hashed.get(name) != last.get(name))
    if not changed:
        return "the last pack left no record (something it read changed while it ran, " \
            "or it was a --recheck of another state)"
    return f"{changed[0]} changed since the last pack" + (
        f" (and {len(changed) - 1} more)" if len(changed) > 1 else "")


def _remember_key(store_root: Path, key: bytes, pack: PackKey) -> None:
    _write(_key_path(store_root, pack),
           seal(key, _KEY_KIND, pack.parts["the spec's path"], _hashed_parts(pack.parts)))


def _hashed_parts(parts: Mapping[str, str]) -> dict[str, str]:
    """The key's parts with their values hashed: a variable may hold a secret (an index
    URL with a token), and only whether it changed is said."""
    return {name: hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
            for name, value in parts.items()}


def _write(path: Path, data: object) -> bool:
    try:
        write_record(path, data)
    except OSError:
        return False
    return True


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


def _key_path(store_root: Path, pack: PackKey) -> Path:
    spec = hashlib.sha256(pack.parts["the spec's path"].encode("utf-8", "surrogatepass"))
    return store_root / FOLDER / _KEYS / f"{spec.hexdigest()}.json"


def _settled(files: list[str], folders: list[str], listed: list[str], beside: list[str],
             store_root: Path) -> dict[str, Any] | None:
    """The stamps, once the file system's clock has moved past every one of them: a
    file stamped in the clock's current tick could still be written within that tick
    without its times changing, so the stamps are taken again after the tick."""
    for _ in range(_SETTLE_TRIES):
        taken = snapshot(files, folders, listed, beside, store_root, str(_OWN_CODE))
        now = _file_system_clock(store_root)
        if now is None:
            return None
        if all(stamp is None or max(stamp[2::5]) < now for stamp in _stamps(taken)):
            return taken
        time.sleep(0.01)
    return None


def _stamps(taken: Mapping[str, Any]) -> Iterable[list[int] | None]:
    for found in all_stamps(taken):
        yield found if found is None or len(found) >= 5 else None


def _file_system_clock(store_root: Path) -> int | None:
    """The time the file system gives a file written now (its coarse clock, not
    time.time_ns's)."""
    folder = store_root / FOLDER
    try:
        make_folder(folder)
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
