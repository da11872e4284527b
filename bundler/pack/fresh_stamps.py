"""The stamps an up-to-date record keeps (pack/up_to_date.py), and the first one that no
longer holds, said in words.

What is stamped is what was read:

- a file by its own stamp (support/file_stamps.py: size, modification and change times,
  file id, device), and where it is a symbolic link also by the stamp of what it points
  to: an edit of the target changes nothing of the link;
- a folder by its own stamp (an entry added or removed at its top changes its times, a
  moved folder put back as a link is another file) and every entry below it, each link
  among them also by its target's stamp;
- a *listed* folder (a site-packages examined for second copies: nvidia-* wheels installed
  into it add entries at its top) by its own stamp and its top-level entries only.

The bundle's runtime files are hard links to the store's objects, which other bundles
link and unlink: each of those sets the file's change time (and link count) without a
byte changing. Such an entry whose size, modification time and file id are as recorded
counts as unchanged where the store proves its bytes (store/hashed.py: its stamp is the
one the store recorded when the object was last hashed or linked, else it is read again
here and must still hash to the manifest's sha256).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from bundler.formats.swap_journal import is_pack_file_of
from bundler.pack.store import hashed
from bundler.support.file_stamps import listing, stamp, through_link

Stamp = list[int]   # file_stamps.Stamp as JSON holds it, a link's target's after it
_DANGLING = [-1]   # a link to nothing, after the link's own stamp
ROOT = "."         # a folder's own stamp among its entries
_PROVING_THREADS = 4   # hashlib releases the GIL: two cores read two files
# bundler's own dependencies, where its metadata cannot be read (pyproject.toml's list)
_DEPENDENCIES = ("pefile", "inflate64", "tqdm", "signify", "pyelftools", "isal", "tomli")


def snapshot(files: Iterable[str], folders: Iterable[str], listed: Iterable[str],
             beside: Iterable[str], store_root: Path, skip_bytecode: str) -> dict[str, Any]:
    roots = list(folders)
    # A folder inside another recorded one (the bundle in the app's dist/) is walked on
    # its own; the store is bundler's cache, not an input.
    skip = {os.path.normcase(root) for root in roots} | {os.path.normcase(str(store_root))}
    return {"files": {name: file_stamp(name) for name in files},
            "folders": {root: walk(root, skip, skip_bytecode) for root in roots},
            "listed": {root: walk(root, skip, skip_bytecode, deep=False) for root in listed},
            "beside": {path: _pack_files_beside(Path(path)) for path in beside}}


def all_stamps(snapshot: Mapping[str, Any]) -> Iterable[Stamp | None]:
    yield from snapshot["files"].values()
    for kind in ("folders", "listed"):
        for entries in snapshot[kind].values():
            yield from entries.values()


def first_change(then: Mapping[str, Any], now: Mapping[str, Any], base: str,
                 objects: Mapping[str, Mapping[str, str]], store_root: Path, key: bytes
                 ) -> str | None:
    """What differs first between a record and the files as they are now, in words
    ("app/main.py changed"); None where nothing does. `objects`: per recorded folder,
    its entries that are store objects, by sha256. Those of them whose change time
    alone moved are proven last, all at once (read on several threads where the store's
    record does not hold)."""
    doubted: list[tuple[str, str, Stamp, Stamp]] = []
    for name, was in then["files"].items():
        if now["files"].get(name) != was:
            return _said(name, was, now["files"].get(name), base)
    for kind in ("folders", "listed"):
        for root, entries in then[kind].items():
            found = now[kind].get(root, {})
            shared = objects.get(root, {})
            # the entries first: what was added or removed says more than the
            # folder's own times, which that changed too
            for name in sorted(set(entries) | set(found), key=lambda n: (n == ROOT, n)):
                was, is_now = entries.get(name), found.get(name)
                if was == is_now:
                    continue
                path = root if name == ROOT else os.path.join(root, name)
                if name in shared and _only_linked(was, is_now):
                    doubted.append((path, shared[name], was, is_now))   # type: ignore[arg-type]
                    continue
                return _said(path, was, is_now, base)
    for path, names in then["beside"].items():
        if now["beside"].get(path) != names:
            return f"a killed pack left files beside {_shown(path, base)}"
    with ThreadPoolExecutor(_PROVING_THREADS) as pool:
        proven = list(pool.map(lambda d: _bytes_proven(store_root, key, d[1], d[0], d[3]),
                               doubted))
    for (path, _, was, is_now), holds in zip(doubted, proven):
        if not holds:
            return _said(path, was, is_now, base)
    return None


def file_stamp(path: str) -> Stamp | None:
    """None where nothing is there (it must still be absent); OSError where something
    is but its stamp cannot be read (no access): such a pack is never recorded, and
    a record naming it never holds."""
    try:
        own = list(stamp(path, follow_links=False))
    except (FileNotFoundError, NotADirectoryError):
        return None
    return own + _target(path) if os.path.islink(path) else own


def walk(root: str, skip: set[str], skip_bytecode: str, deep: bool = True
         ) -> dict[str, Stamp | None]:
    """The folder's own stamp (ROOT) and every entry below `root` by its relative path,
    folders included (an entry added or removed changes the listing); links stamped and
    their targets too, never entered. One that goes between the listing and its stamp
    is None (listed, absent); a folder that goes has no entries. A folder that is there
    but cannot be listed, or an entry that cannot be stamped, raises OSError."""
    found: dict[str, Stamp | None] = {ROOT: file_stamp(root)}
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
            if entry.is_folder and deep:
                if os.path.normcase(path) in skip or (
                        entry.name == "__pycache__" and root == skip_bytecode):
                    continue   # bundler's own bytecode is written as it runs
                pending.append((f"{name}/", path))
            own = list(entry.stamp) if entry.stamp else None
            found[name] = own + _target(path) if own and entry.is_link else own
    return found


def _target(path: str) -> Stamp:
    target = through_link(path)
    return list(target) if target is not None else _DANGLING


def _only_linked(was: Stamp | None, now: Stamp | None) -> bool:
    """The same file, size and modification time: only the change time moved (what
    another bundle's link to the same store object does)."""
    return was is not None and now is not None and len(was) == len(now) == 5 and \
        [was[0], was[1], was[3], was[4]] == [now[0], now[1], now[3], now[4]] and \
        now[2] > was[2]


def _bytes_proven(store_root: Path, key: bytes, sha256: str, path: str, now: Stamp) -> bool:
    """Whether the file at `path` (a hard link of the store object `sha256`) still has
    those bytes: the store's record of the object's last hash or link names its stamp,
    else it is read now (and the record renewed)."""
    if hashed.known(store_root, key, sha256, now) is not None:
        return True
    at = hashed.clock(store_root)
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        after = list(stamp(path))
    except OSError:
        return False
    if digest.hexdigest() != sha256 or after != now:
        return False
    if at is not None:
        hashed.remember(store_root, key, sha256, after, at)
    return True


def _said(path: str, was: Stamp | None, now: Stamp | None, base: str) -> str:
    shown = _shown(path, base)
    if was is None:
        return f"{shown} appeared since the last pack"
    if now is None:
        return f"{shown} is gone since the last pack"
    if len(was) != len(now) or (len(now) > 5 and was[:5] != now[:5]):
        return f"{shown} is another file or link than at the last pack"
    if len(now) > 5:
        return f"{shown}: what the link points to changed since the last pack"
    return f"{shown} changed since the last pack"


def _shown(path: str, base: str) -> str:
    """A path relative to the spec's folder where it lies inside it, else as it is."""
    if base:
        try:
            relative = os.path.relpath(path, base)
        except ValueError:   # another drive
            return path
        if not relative.startswith(".."):
            return Path(relative).as_posix()
    return path


def own_dependencies() -> tuple[list[Path], list[Path]]:
    """Where bundler's own dependencies are installed: (module files, package folders).
    An edited dependency packs anew, as an edited bundler does."""
    files: list[Path] = []
    folders: list[Path] = []
    for name in dependencies():
        for module in _top_level(name):
            try:
                found = find_spec(module)
            except (ImportError, ValueError):
                continue
            if found is None or not found.origin or found.origin in ("built-in", "frozen"):
                continue
            origin = Path(found.origin)
            if found.submodule_search_locations:
                folders.extend(Path(p) for p in found.submodule_search_locations)
            else:
                files.append(origin)
    return files, folders


@functools.cache   # asked twice a pack (the key, the files); installs do not change mid-run
def dependencies() -> dict[str, str]:
    """bundler's dependencies and their installed versions ("" where not installed)."""
    try:
        required = metadata.requires("bundler") or []
        names = [match.group(0) for line in required if "extra ==" not in line
                 if (match := re.match(r"[A-Za-z0-9._-]+", line))]
    except metadata.PackageNotFoundError:
        names = list(_DEPENDENCIES)
    versions = {}
    for name in sorted(set(names)):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return versions


def _top_level(distribution: str) -> list[str]:
    """The modules a distribution installs at the top (pyelftools -> elftools)."""
    try:
        found = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return []
    named = (found.read_text("top_level.txt") or "").split()
    if named:
        return named
    tops = {Path(str(f)).parts[0] for f in found.files or ()
            if str(f).endswith((".py", ".so", ".pyd")) and not str(f).startswith("..")}
    return sorted(top.split(".")[0] for top in tops if ".dist-info" not in top)


def _pack_files_beside(path: Path) -> list[str]:
    """The names of the files packs of `path` keep beside it (formats/swap_journal.py):
    its pack lock stays; a killed pack's staging folder or --zip note is debris."""
    try:
        return sorted(entry.name for entry in os.scandir(path.parent)
                      if is_pack_file_of(path, entry.name))
    except OSError:
        return []
