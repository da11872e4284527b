"""`bundler pack --zip PATH`: the bundle as one deterministic zip to hand over.

The same bundle gives the same bytes: members sorted by path, every timestamp 1980-01-01
00:00, Unix permissions fixed (0644; 0755 for folders and executables: in a Windows
bundle by extension, as Windows reports them, on any machine), no extra fields, Deflate
by one compressor at one level (--zip-level; support/deflate.py). The zip is written to
a temporary file beside PATH while the new bundle is still staged, and renamed to PATH
only once the bundle and the lock are in place: a failure leaves no half zip, and a zip
never describes a bundle that was not swapped in. A pack killed before that rename
leaves its temporary file (`.<zip name>.<8 characters>.partial`); while it is written a
note beside the bundle (`.<bundle>.zipping`) names the zip, so any later pack of the
bundle, with or without --zip, removes it under the pack's locks (as does the next pack
of that zip), and no folder build copies one into a bundle meanwhile. The bytes are
written by zip/writer.py: on every core, reusing the streams earlier zips kept
(store/zip_streams.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from bundler.errors import RefusedError
from bundler.formats.manifest import MANIFEST_NAME
from bundler.formats.swap_journal import zip_note_path
from bundler.pack.store.seal import store_key
from bundler.pack.store.store import Store, StoreError
from bundler.pack.store.upkeep import size_cap
from bundler.pack.store.zip_streams import StreamCache
from bundler.pack.zip.unchanged import same_zip
from bundler.pack.zip.writer import Member, ZipCounts, ZipWriter, default_workers, settings
from bundler.support.bundle_files import describe_link, is_link
from bundler.support.deflate import FAST, Compressor, zip_compressor
from bundler.support.file_stamps import Stamp, stamp
from bundler.support.paths import is_unicode, shown_name
from bundler.support.progress import byte_progress

ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)   # the earliest time a zip can hold (zip_writer's)
_WINDOWS_EXECUTABLE = (".exe", ".bat", ".cmd", ".com")   # what os.stat on Windows says
# The temporary zip's name as write_zip's mkstemp makes it (8 of its characters).
_PARTIAL = re.compile(r"\.(?P<zip>.+\.zip)\.[a-z0-9_]{8}\.partial", re.IGNORECASE)


@dataclass(frozen=True)
class PendingZip:
    """A complete zip in a temporary file, waiting for the bundle's swap."""

    temporary: Path | None   # None: the zip at `final` already holds these bytes
    final: Path
    note: Path   # beside the bundle: names the zip while it is not published
    counts: ZipCounts | None = None   # members, reused streams, compressed now
    checked: Stamp | None = None   # the unchanged zip's, when it was compared

    def publish(self) -> None:
        if self.temporary is None:   # left as it was: unless it changed since the check
            if _stamp(self.final) != self.checked:
                raise RefusedError(f"{self.final}: changed while this pack compared it with "
                                   "the bundle; the new bundle and lock are in place, the "
                                   "zip is not", "pack again")
            return
        try:
            os.replace(self.temporary, self.final)
            self.note.unlink(missing_ok=True)
        except OSError as exc:
            self.discard()
            raise RefusedError(f"{self.final}: cannot be replaced ({exc.strerror or exc}); "
                               "the new bundle and lock are in place, the zip is not",
                               "close what holds the zip open, or choose another --zip path, "
                               "and pack again") from None

    def discard(self) -> None:
        if self.temporary is not None:
            self.temporary.unlink(missing_ok=True)
        self.note.unlink(missing_ok=True)


def check_zip_path(path: Path, target: Path) -> Path:
    """Where the zip goes, refused early if it cannot be written there."""
    # A link would be written through, to wherever it points (`--out` refuses links too).
    with contextlib.suppress(OSError):
        if is_link(os.lstat(path)):
            raise RefusedError(f"{path}: the zip path is {describe_link(path)}; refusing "
                               "to write through it",
                               "remove the link, or give --zip a path that is not a link")
    path = path.resolve()
    target = target.resolve()
    if path == target or target in path.parents:
        raise RefusedError(f"{path}: the zip would be inside the bundle it holds",
                           "write the zip beside the bundle, e.g. --zip dist/app.zip")
    if path.is_dir():
        raise RefusedError(f"{path}: is a folder, not a zip file name",
                           f"name the file, e.g. --zip {path / (target.name + '.zip')}")
    # A named pipe would be opened (below) and waited on for ever; a device replaced.
    if path.exists() and not path.is_file():
        raise RefusedError(f"{path}: not a regular file (a named pipe or a device); "
                           "refusing to replace it", "give --zip a file name")
    # A typo must not replace the spec, the lock or a script: only a zip is replaced.
    if path.exists() and not zipfile.is_zipfile(path):
        raise RefusedError(f"{path}: exists and is not a zip; refusing to replace it",
                           "choose another --zip path, or remove the file yourself")
    # Nor an archive of the user's: the cuDNN zip the spec packs from is a zip too.
    if path.exists() and not _written_by_bundler(path, target.name):
        raise RefusedError(f"{path}: exists and is not a zip bundler wrote of the bundle "
                           f"'{target.name}' (an input archive, or a zip of your own?); "
                           "refusing to replace it",
                           "choose another --zip path, or remove the file yourself")
    return path


def _written_by_bundler(path: Path, top: str) -> bool:
    """Whether `path` is a zip `write_zip` made of a bundle named `top`: every member
    below `top/` and dated ZIP_EPOCH, as no archive NVIDIA or a user makes is."""
    return _all_below(_members(path), top)


def is_bundle_zip(path: Path) -> bool:
    """Whether `path` is a zip `write_zip` made of any bundle (one top folder, every
    member dated ZIP_EPOCH, a manifest in it): output, which the folder builder never
    copies (an app folder of "." holds dist/ and the zip written there)."""
    if _PARTIAL.fullmatch(path.name):
        return path.is_file()   # a killed pack's zip, whole or not: output, not app
    if path.suffix.lower() != ".zip" or not path.is_file():
        return False
    infos = _members(path)
    top = infos[0].filename.split("/")[0] if infos else ""
    return _all_below(infos, top) and any(
        info.filename.endswith(f"/{MANIFEST_NAME}") for info in infos)


def _members(path: Path) -> list[zipfile.ZipInfo]:
    """The zip's members from its central directory ([] for anything but a zip)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.infolist()
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, ValueError):
        return []   # as support/zip_reader.py: zipfile's ways of saying "not a zip I read"


def _all_below(infos: list[zipfile.ZipInfo], top: str) -> bool:
    return bool(top) and bool(infos) and infos[0].filename == f"{top}/" and all(
        info.filename.startswith(f"{top}/") and info.date_time == ZIP_EPOCH
        for info in infos)


def write_zip(bundle: Path, top: str, path: Path, windows: bool, target: Path,
              streams: StreamCache | None = None,
              known: Mapping[str, str] | None = None,
              compressor: Compressor | None = None) -> PendingZip:
    """Zip every file below `bundle` under the folder `top` into a temporary file
    beside `path`; removed again on any failure. `windows`: a bundle for Windows, whose
    permissions are the ones Windows reports, not this machine's. `target`: the bundle's
    folder, beside which a note names the zip while it is written (so any later pack of
    `target` removes what a killed one left). `streams`: the kept streams to reuse;
    `known`: the sha256 of files the pack hashed as it staged them, by path (not read
    again to find their stream); `compressor`: --zip-level's (default: fast). A zip
    already at `path` that holds exactly these bytes is left as it is
    (zip/unchanged.py): nothing is written."""
    compressor = compressor or zip_compressor(FAST)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(path)
    note = zip_note_path(target)
    members, total = _members_of(bundle, top, windows, known or {})
    if streams is not None and path.is_file():
        unchanged = _unchanged(path, note, members, total, streams, compressor)
        if unchanged is not None:
            return unchanged
    note.write_text(str(path), encoding="utf-8")   # before the temporary file exists
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                                    dir=path.parent)
    pending = PendingZip(Path(name), path, note)
    try:
        with os.fdopen(handle, "wb") as raw:
            counts = _add_all(raw, members, total, top, streams, compressor)
        os.chmod(name, 0o644)   # mkstemp's 0600 is for secrets, not a zip
    except BaseException as exc:
        pending.discard()
        if isinstance(exc, OSError):
            raise RefusedError(f"{path}: the zip could not be written "
                               f"({exc.strerror or exc}); the previous bundle, lock and zip "
                               "were kept", "free some space or choose another --zip path"
                               ) from None
        raise
    return replace(pending, counts=counts)


def kept_streams(store: Store | None, environ: Mapping[str, str],
                 compressor: Compressor | None = None) -> StreamCache | None:
    """The zip streams kept in the store's folder that `compressor` (default: fast)
    made, under the store's size cap; none without a store (or with a cap that is not a
    size: the pack said so already)."""
    if store is None:
        return None
    try:
        return StreamCache(store.root, store_key(environ),
                           settings(compressor or zip_compressor(FAST)),
                           size_cap(environ))
    except StoreError:
        return None


def remove_killed_zip(target: Path) -> list[Path]:
    """What a pack of `target` killed while writing its zip left: the temporary zip the
    note beside `target` names, and the note. Any pack of `target` calls this under its
    locks, with or without --zip."""
    note = zip_note_path(target)
    try:
        named = note.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    removed = remove_stale_partials(Path(named)) if named else []
    note.unlink(missing_ok=True)
    return removed


def remove_stale_partials(path: Path) -> list[Path]:
    """Remove the temporary zips of `path` a killed pack left (this pack runs under
    the locks of its target, so no pack of that target is writing one now). Another
    zip's, and anything not named as mkstemp names them, is left."""
    removed = []
    for found in sorted(path.parent.iterdir()):
        match = _PARTIAL.fullmatch(found.name)
        if match and match["zip"] == path.name and found.is_file():
            try:
                found.unlink()
            except OSError:
                continue   # held open (Windows): the next pack tries again
            removed.append(found)
    return removed


def _unchanged(path: Path, note: Path, members: list[Member], total: int,
               streams: StreamCache, compressor: Compressor) -> PendingZip | None:
    """The zip at `path` to be left as it is, if it already holds the bytes of
    `members` (zip/unchanged.py); else None."""
    before = _stamp(path)
    with byte_progress(total, f"checking {path.name}") as progress:
        same = same_zip(str(path), members, compressor, streams, default_workers(),
                        progress.update)
    if same is None or _stamp(path) != before:
        return None
    counts, used = same
    streams.trim(frozenset(used))
    return PendingZip(None, path, note, counts, before)


def _stamp(path: Path) -> Stamp | None:
    """The change time among the rest: a write during the compare that puts the size and
    mtime back still shows (support/file_stamps.py)."""
    try:
        return stamp(path)
    except OSError:
        return None


def _members_of(bundle: Path, top: str, windows: bool, known: Mapping[str, str]
                ) -> tuple[list[Member], int]:
    """The zip's members in order, and their files' bytes in all."""
    entries = _entries(bundle, top)
    members = [Member(f"{top}/", _attributes(is_dir=True, executable=True))]
    for path, relpath, size in entries:
        if path.is_dir():
            members.append(Member(f"{top}/{relpath}/",
                                  _attributes(is_dir=True, executable=True)))
        else:
            members.append(Member(f"{top}/{relpath}", _attributes(
                is_dir=False, executable=_executable(path, windows)), str(path), size,
                known.get(str(path), "")))
    return members, sum(size for _, _, size in entries)


def _add_all(raw: BinaryIO, members: list[Member], total: int, top: str,
             streams: StreamCache | None, compressor: Compressor) -> ZipCounts:
    with byte_progress(total, f"zipping {top}") as progress:
        writer = ZipWriter(raw, compressor, streams, default_workers(), progress.update)
        counts = writer.write(members)
    if streams is not None:
        streams.trim(frozenset(writer.used))
    return counts


def _executable(path: Path, windows: bool) -> bool:
    """Windows knows no executable bit: Python there reports one by the extension. A
    Windows bundle takes that rule on any machine, so a Linux checkout's bits (git keeps
    them) give the same zip as a pack on Windows; elsewhere the build's bit counts."""
    if windows:
        return path.suffix.lower() in _WINDOWS_EXECUTABLE
    return bool(path.stat().st_mode & stat.S_IXUSR)


def _entries(bundle: Path, top: str) -> list[tuple[Path, str, int]]:
    """(path, relative path, size) of each folder and file, sorted by relative path.
    Links are followed: a hard or symbolic link into the runtime store zips as the file
    it names."""
    found = []
    for path in bundle.rglob("*"):
        relpath = path.relative_to(bundle).as_posix()
        if not is_unicode(relpath):   # zipfile would fail to encode it (exit 3)
            raise RefusedError(f"{top}/{shown_name(relpath)}: a file name that is not "
                               "UTF-8, which a zip cannot hold; the previous bundle, lock "
                               "and zip were kept",
                               "rename the file in the app folder (its name's bytes are not "
                               "UTF-8), and pack again")
        if path.is_dir():
            found.append((path, relpath, 0))
        elif path.is_file():
            found.append((path, relpath, path.stat().st_size))
    return sorted(found, key=lambda entry: entry[1])


def _attributes(is_dir: bool, executable: bool) -> int:
    mode = (stat.S_IFDIR if is_dir else stat.S_IFREG) | (0o755 if executable else 0o644)
    return (mode << 16) | (0x10 if is_dir else 0)   # 0x10: MS-DOS folder
