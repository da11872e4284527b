"""The previous bundle's site-packages taken again, instead of unpacking the wheels again.

An embedded-python re-pack whose lock names the same wheels made the same
site-packages as the bundle it replaces: unpacking them again cost an edit of one app
file 11 s for the Paddle 2.6.2 app (477 MB wheel, 3,947 files, 2.04 GB; issue 41). So
each pack keeps, sealed in the store (`installed/<hash of the bundle's path>.json`,
store/seal.py), what it put in its bundle's `python/Lib/site-packages`: each file's
sha256 and, once proven, its stamp, and the set it was made from (`set_key`: the
wheels' files and sha256, the embeddable CPython, the recipe and the one-copy rule
that left libraries out, and bundler's installer code). A later pack of the same set
into the same bundle hard-links those files into its staging folder, the store's rule
for its objects (store/hashed.py) proving each one's bytes:

- a file whose stamp is the recorded one, older than the clock the record was made
  by, is not read;
- any other (no stamp recorded: the pack that wrote it does not stamp what it wrote
  itself, as the store does not, since a write between that and the stamp would go
  unseen) is read, and must hash to the recorded sha256;
- after the swap (the links made, the old bundle's removed: only the change times
  moved) the pack records the stamps as they are, so the next pack reads none.

Anything else (a file gone or changed, another set, no record, a link refused) and
the wheels are unpacked as before, from the first file. Only what the record names is
taken: a file added to the previous bundle's site-packages stays behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bundler.errors import BundlerError
from bundler.pack.one_copy import LeftOutWheel
from bundler.pack.store import hashed
from bundler.pack.store.seal import seal, unseal
from bundler.pack.store.trust import write_record
from bundler.support.file_stamps import stamp
from bundler.support.hashing import sha256_file
from bundler.support.json_files import read_json

if TYPE_CHECKING:
    from bundler.pack.store.store import Store

FOLDER = "installed"
_KIND = "installed-site-packages"
_MAX_RECORD_BYTES = 64 << 20   # ~200 bytes a file: room for 300,000 files
_THREADS = 4   # hashlib releases the GIL: two cores read two files
# the code that decides what an installed site-packages holds: another version of it
# may make another tree from the same wheels
_INSTALLER_CODE = ("wheel_install.py", "pip_wheels.py", "embedded_python.py",
                   "installed_again.py", "../one_copy.py")


@dataclass(frozen=True)
class Keeping:
    """Where a pack may take and record installed site-packages: the store, and the
    bundle folder the pack replaces (its final path, not the staging one)."""

    store_root: Path
    key: bytes
    bundle: Path


def kept_at(store: Store | None, bundle: Path, copy: bool) -> Keeping | None:
    """Where a pack into `bundle` keeps its record; None without a store, or with
    --copy (the bundle's files its own: none linked from the previous bundle)."""
    return None if store is None or copy else Keeping(store.root, store.key, bundle)


@dataclass(frozen=True)
class Taken:
    """The site-packages as taken: each file's sha256 and how it was proven."""

    digests: dict[str, str]                       # relpath -> sha256
    proven: dict[str, tuple[int, ...]]            # relpath -> stamp when proven
    left_out: tuple[LeftOutWheel, ...]
    read: int                                     # files read to prove them


def set_key(wheels: Sequence[tuple[str, str]], embed_sha256: str, recipe: str,
            recipe_sha256: str, allow_app_copies: bool) -> str:
    """What the site-packages is made from, as one sha256."""
    here = Path(__file__).parent
    code = hashlib.sha256()
    for name in _INSTALLER_CODE:
        with contextlib.suppress(OSError):
            code.update((here / name).read_bytes())
    text = json.dumps([sorted(wheels), embed_sha256, recipe, recipe_sha256,
                       allow_app_copies, code.hexdigest()])
    return hashlib.sha256(text.encode()).hexdigest()


def take(keeping: Keeping, made_from: str, previous_site: Path, site: Path) -> Taken | None:
    """Link the recorded files of `previous_site` (the previous bundle's) into `site`
    (empty, in the staging folder), each proven; None (and `site` emptied) where any
    is not the file recorded."""
    record = _read(keeping)
    if record is None or record.get("set") != made_from:
        return None
    try:
        files: dict[str, list[object]] = record["files"]
        left_out = tuple(LeftOutWheel(str(w[0]), str(w[1]), tuple(w[2]), bool(w[3]))
                         for w in record["left_out"])
        at = int(record["at"]) if record.get("at") is not None else None
        proven = _proven(previous_site, files, at)
        if proven is None:
            return None
        read = sum(1 for _, _, was_read in proven.values() if was_read)
        for relpath, (_, then, _) in proven.items():
            _link(previous_site / relpath, site / relpath, then)
    except (OSError, KeyError, TypeError, ValueError, IndexError, _NotTheFile):
        shutil.rmtree(site, ignore_errors=True)
        site.mkdir(parents=True, exist_ok=True)
        return None
    return Taken({relpath: sha256 for relpath, (sha256, _, _) in proven.items()},
                 {relpath: then for relpath, (_, then, _) in proven.items()}, left_out, read)


class _NotTheFile(Exception):
    pass


def _proven(previous_site: Path, files: Mapping[str, list[object]], at: int | None
            ) -> dict[str, tuple[str, tuple[int, ...], bool]] | None:
    """relpath -> (sha256, stamp, read) for every recorded file, or None where one is not
    the recorded bytes. Files whose recorded stamp holds are not read; the rest are
    hashed on threads."""
    known: dict[str, tuple[str, tuple[int, ...], bool]] = {}
    doubted: list[tuple[str, str]] = []
    for relpath, (sha256, recorded) in files.items():
        if not isinstance(sha256, str) or Path(relpath).is_absolute() or ".." in \
                Path(relpath).parts:
            return None
        now = stamp(previous_site / relpath, follow_links=False)
        if at is not None and isinstance(recorded, list) and list(now) == recorded \
                and now[2] < at:
            known[relpath] = (sha256, now, False)
        else:
            doubted.append((relpath, sha256))

    def prove(item: tuple[str, str]) -> tuple[str, tuple[int, ...]] | None:
        relpath, sha256 = item
        path = previous_site / relpath
        before = stamp(path, follow_links=False)
        if sha256_file(path, f"checking {path.name}") != sha256:
            return None
        after = stamp(path, follow_links=False)
        return (relpath, after) if after == before else None

    with ThreadPoolExecutor(_THREADS) as pool:
        for (relpath, sha256), done in zip(doubted, pool.map(prove, doubted)):
            if done is None:
                return None
            known[relpath] = (sha256, done[1], True)
    return known


def _link(origin: Path, target: Path, then: tuple[int, ...]) -> None:
    """A hard link to the proven file: refused (_NotTheFile) unless the file linked is
    the one proven (size, modification time, file id, device; the link moves its change
    time)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    # os.link's own default (Windows has no follow_symlinks=False): were `origin` a link
    # now, the file linked would be another, and the stamp below refuses it
    os.link(origin, target)
    now = stamp(target, follow_links=False)
    if (now[0], now[1], now[3], now[4]) != (then[0], then[1], then[3], then[4]):
        raise _NotTheFile(target)


def remember(keeping: Keeping, made_from: str, site: Path, digests: Mapping[str, str],
             proven: Mapping[str, tuple[int, ...]], left_out: Sequence[LeftOutWheel]) -> None:
    """After the swap: record what `site` (the new bundle's) holds. A file proven by this
    pack (`proven`: its stamp then) gets its stamp as it is now where only its change time
    moved (the links); one it wrote itself gets none (read once by the next pack)."""
    at = hashed.clock(keeping.store_root)
    files: dict[str, list[object]] = {}
    for relpath, sha256 in digests.items():
        then = proven.get(relpath)
        recorded: list[int] | None = None
        if then is not None and at is not None:
            with contextlib.suppress(OSError):
                now = stamp(site / relpath, follow_links=False)
                if (now[0], now[1], now[3], now[4]) == (then[0], then[1], then[3], then[4]) \
                        and now[2] < at:
                    recorded = list(now)
        files[relpath] = [sha256, recorded]
    body = {"set": made_from, "at": at, "files": files, "bundle": str(keeping.bundle),
            "left_out": [[w.distribution, w.version, list(w.libraries), w.whole]
                         for w in left_out]}
    with contextlib.suppress(OSError):
        write_record(_path(keeping), seal(keeping.key, _KIND, str(keeping.bundle), body))


def prune(store_root: Path, key: bytes) -> set[str]:
    """`bundler cache prune`: remove the records of bundles that are gone (or that do not
    verify); the sha256 of every file the remaining records name (scan_memo.prune keeps
    what it read of those)."""
    named: set[str] = set()
    for path in sorted((store_root / FOLDER).glob("*.json")):
        try:
            record = read_json(path, _MAX_RECORD_BYTES, BundlerError, "")
            bundle = record["body"]["bundle"] if isinstance(record, dict) else None
            body = unseal(key, _KIND, str(bundle), record)
            if not isinstance(body, dict) or not Path(str(bundle)).is_dir():
                raise ValueError(path)
            named.update(str(entry[0]) for entry in body["files"].values())
        except (BundlerError, OSError, KeyError, TypeError, ValueError, IndexError):
            with contextlib.suppress(OSError):
                path.unlink()
    return named


def forget(keeping: Keeping) -> None:
    with contextlib.suppress(OSError):
        _path(keeping).unlink()


def _read(keeping: Keeping) -> dict[str, Any] | None:
    try:
        body = unseal(keeping.key, _KIND, str(keeping.bundle),
                      read_json(_path(keeping), _MAX_RECORD_BYTES, BundlerError, ""))
    except (BundlerError, OSError):
        return None
    return body if isinstance(body, dict) else None


def _path(keeping: Keeping) -> Path:
    name = hashlib.sha256(os.fsencode(keeping.bundle)).hexdigest()
    return keeping.store_root / FOLDER / f"{name}.json"
