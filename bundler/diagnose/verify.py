"""`bundler verify APPDIR [--lock SPEC.lock]`: re-hash every bundled file against the
manifest, check again the Authenticode signature of every file the manifest records as
signed, check the entry script still loads the bootstrap, and (with --lock) check each
file against the lock, which pins every file's sha256 independently of the manifest: a
DLL swapped for another, with its hash edited into the manifest to match, is caught by
its signature (or its lack of one) and by the lock."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler.errors import BundlerError, LockError
from bundler.formats.lockfile import Lock
from bundler.formats.manifest import (
    INJECT_LOADS,
    INJECT_MARKER,
    SIGNATURE_VERIFIED,
    FileEntry,
    FoundManifest,
    find_manifest,
)
from bundler.support.bundle_files import (
    MISSING,
    RESIZED,
    describe_link,
    file_state,
    link_on_the_way,
    walk_files,
)
from bundler.support.hashing import sha256_file
from bundler.support.paths import is_inside_relative
from bundler.support.regular_files import NOT_REGULAR, NotARegularFile, open_regular
from bundler.targets.registry import Trust, platform_of_file

_MAX_ENTRY_BYTES = 64 << 20  # an entry script; only read to find the bootstrap lines
_LIBRARY = re.compile(r"\.(dll|so)(\.[0-9.]+)?$", re.IGNORECASE)   # cudnn64_8.dll, libcudnn.so.9


@dataclass
class VerifyReport:
    app: Path
    manifest: Path
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    not_as_locked: list[str] = field(default_factory=list)  # only with a lock
    lock: str = ""
    signatures: list[str] = field(default_factory=list)   # "relpath: what is wrong"
    signed: int = 0   # files whose signature was checked again
    # What the lock pins beyond the runtime files (the manifest, the entry script); []
    # for a lock written before it recorded them
    lock_pins: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.changed or self.unexpected or self.not_as_locked
                    or self.signatures)

    @property
    def hint(self) -> str:
        """The fix for everything verify found, fitting the kinds of file at fault."""
        altered = [*self.missing, *self.changed, *self.signatures, *self.not_as_locked]
        return repair_hint(altered) if altered else ADDED_HINT

    def to_dict(self) -> dict[str, object]:
        """What `verify --json` prints and doctor's report of a bundle holds."""
        return {"app": str(self.app), "manifest": str(self.manifest), "ok": self.ok,
                "checked": self.checked, "signed": self.signed, "missing": self.missing,
                "changed": self.changed, "unexpected": self.unexpected,
                "not_as_locked": self.not_as_locked, "lock": self.lock,
                "lock_pins": self.lock_pins, "signatures": self.signatures}


ADDED_HINT = ("remove what pack did not put in the runtime folder, or re-run `bundler pack` "
              "to rebuild it")


def repair_hint(items: list[str]) -> str:
    """How to repair a bundle whose `items` ("relpath" or "relpath (why)") are not as
    packed. Only a library is what an antivirus quarantines, holds or blocks: a changed
    licence text or entry script was edited, and blaming an antivirus would mislead."""
    names = [PurePosixPath(item.partition(" (")[0].partition(": ")[0]).name
             for item in items]
    if any(_LIBRARY.search(name) for name in names):
        return ("re-run `bundler pack` (an antivirus may have quarantined or altered a "
                "DLL: restore it from quarantine, or exclude the app's folder)")
    return ("re-run `bundler pack`: a file of the bundle was edited, replaced or removed "
            "after packing (change the app's own files, then pack again)")


def bundles_in(folder: Path) -> list[FoundManifest]:
    """The bundle `folder` is, or else each bundle directly inside it (`verify dist`)."""
    folder = folder.resolve()
    try:
        found: FoundManifest | None = find_manifest(folder)
    except BundlerError as exc:
        if type(exc) is not BundlerError or not folder.is_dir():
            raise  # damaged or newer (that bundle is named), or not a folder at all
        found, first_error = None, exc
    if found is not None and found.root in (folder, folder / "_internal"):
        return [found]
    inside = [sub for sub in sorted(folder.iterdir()) if sub.is_dir()]
    bundles = [f for sub in inside if (f := _bundle_at(sub)) is not None]
    if not bundles:
        raise first_error if found is None else BundlerError(
            f"{folder}: no bundle in it or directly below it", "give the bundle folder")
    return bundles


def _bundle_at(folder: Path) -> FoundManifest | None:
    try:
        found = find_manifest(folder)
    except BundlerError as exc:
        if type(exc) is not BundlerError:
            raise
        return None
    return found if found.root in (folder, folder / "_internal") else None


def verify(app: Path, found: FoundManifest | None = None, lock: Lock | None = None,
           lock_path: Path | None = None) -> VerifyReport:
    """Every file the manifest lists against its hash, and files it does not list.
    `found`: the app's manifest when the caller has looked it up already; `lock`: the
    app's lock, to check each file against too."""
    found = found or find_manifest(app.resolve())
    report = VerifyReport(app=app, manifest=found.path, lock=str(lock_path or ""))
    manifest = found.manifest
    expected = {entry.path: entry.sha256 for entry in manifest.files}
    sizes: dict[str, int | None] = {entry.path: entry.size for entry in manifest.files}
    signed = {e.path: e for e in manifest.files if e.signature == SIGNATURE_VERIFIED}
    if manifest.bootstrap.path:
        expected[manifest.bootstrap.path] = manifest.bootstrap.sha256
    hashes: dict[str, str] = {}
    # A runtime folder replaced by a link is one finding, not one per file in it.
    runtime_link = link_on_the_way(found.root, manifest.runtime_dir)
    if runtime_link:
        report.changed.append(f"{runtime_link}/ ({describe_link(found.root / runtime_link)}:"
                              " not walked)")
    manifest_link = link_on_the_way(found.root, found.path.relative_to(found.root).as_posix())
    if manifest_link and manifest_link != runtime_link:   # it may say anything: not used
        report.changed.append(f"{manifest_link} ({describe_link(found.root / manifest_link)}"
                              ": the manifest pack wrote is a file of the bundle; nothing "
                              "checked against this one)")
        return report
    for relpath, sha256 in sorted(expected.items()):
        path = found.root / relpath
        report.checked += 1
        if runtime_link and relpath.startswith(f"{runtime_link}/"):
            continue
        state = file_state(found.root, relpath, sizes.get(relpath))
        if state == MISSING:
            report.missing.append(relpath)
        elif state == RESIZED or (not state and _hash(path, relpath, hashes) != sha256):
            report.changed.append(relpath)   # another size: changed, without reading it
        elif state:   # a link, a pipe: never followed or read
            report.changed.append(f"{relpath} ({state})")
        elif relpath in signed:
            report.signed += 1
            problem = _signature_problem(path, signed[relpath])
            if problem:
                report.signatures.append(f"{relpath}: {problem}")
    for relpath, what in sorted(walk_files(found.root, manifest.runtime_dir)):
        if relpath not in expected and found.root / relpath != found.path:
            report.unexpected.append(f"{relpath} ({what})" if what else relpath)
    _check_built(found, report, hashes)
    _check_entry(found, report)
    if lock is not None:
        _check_lock(found, lock, report, hashes)
    return report


def _check_built(found: FoundManifest, report: VerifyReport, hashes: dict[str, str]) -> None:
    """The files a builder added beside the app (embedded-python's CPython, the wheels
    installed into it, its launcher): each against its hash, and no file added among
    them (but bytecode, which Python writes into __pycache__ as the app runs)."""
    built = found.manifest.built
    folders = sorted({entry.path.split("/")[0] for entry in built if "/" in entry.path})
    # A folder replaced by a link (python/ -> /) is refused, not walked: one line.
    linked = {folder for folder in folders if link_on_the_way(found.root, folder)}
    gone = {folder for folder in folders if not (found.root / folder).is_dir()} - linked
    for folder in sorted(gone | linked):   # one line for a folder, not one per file
        count = sum(1 for entry in built if entry.path.startswith(folder + "/"))
        report.checked += count
        if folder in linked:
            report.changed.append(f"{folder}/ ({describe_link(found.root / folder)}, not "
                                  f"the folder of {count} files pack built: not walked)")
        else:
            report.missing.append(f"{folder}/ (all {count} files)")
    for entry in built:
        if entry.path.split("/")[0] in gone | linked:
            continue
        report.checked += 1
        state = file_state(found.root, entry.path, entry.size)
        if state == MISSING:
            report.missing.append(entry.path)
        elif state == RESIZED or (not state and _hash(found.root / entry.path, entry.path,
                                                      hashes) != entry.sha256):
            report.changed.append(entry.path)
        elif state:
            report.changed.append(f"{entry.path} ({state})")
    listed = {entry.path for entry in built}
    for folder in folders:
        for relpath, what in sorted(walk_files(found.root, folder)):
            if relpath not in listed and "__pycache__" not in relpath.split("/"):
                report.unexpected.append(f"{relpath} ({what})" if what else relpath)


def _hash(path: Path, relpath: str, hashes: dict[str, str]) -> str:
    if relpath not in hashes:
        hashes[relpath] = sha256_file(path, f"verifying {path.name}")
    return hashes[relpath]


def _check_entry(found: FoundManifest, report: VerifyReport) -> None:
    """The entry script must still carry the lines that load the bootstrap: without
    them the app loads whatever cuDNN Windows finds first."""
    entry = found.manifest.bootstrap.entry
    if not entry:
        return
    report.checked += 1
    path = found.root / entry
    link = link_on_the_way(found.root, entry)
    if link:   # its text may be anything outside the bundle: not read
        report.changed.append(f"{entry} ({describe_link(found.root / link)})")
        return
    try:
        with open_regular(path) as handle:   # a FIFO put there would block open()
            text = handle.read(_MAX_ENTRY_BYTES).decode("utf-8", "replace")
    except NotARegularFile:
        report.changed.append(f"{entry} ({NOT_REGULAR})")
        return
    except OSError:
        report.missing.append(entry)
        return
    if INJECT_MARKER not in text or INJECT_LOADS not in text:
        report.changed.append(f"{entry} (the lines that load the bootstrap are gone)")


def _check_lock(found: FoundManifest, lock: Lock, report: VerifyReport,
                hashes: dict[str, str]) -> None:
    listed = {entry.path for entry in found.manifest.files}
    sizes = {entry.path: entry.size for entry in found.manifest.files}
    for relpath, sha256 in sorted(lock.files.items()):
        path = found.root / relpath
        state = file_state(found.root, relpath, sizes.get(relpath)) \
            if is_inside_relative(relpath) else MISSING
        if state == MISSING:
            report.not_as_locked.append(f"{relpath} (in the lock, not in the bundle)")
        elif state == RESIZED:   # a 200 GB sparse file is not read to say so
            report.not_as_locked.append(f"{relpath} (not the size the manifest gives: "
                                        "not read)")
        elif state:
            report.not_as_locked.append(f"{relpath} ({state})")
        elif _hash(path, relpath, hashes) != sha256:
            report.not_as_locked.append(f"{relpath} (its sha256 differs from the lock)")
    report.not_as_locked += [f"{relpath} (in the manifest, not in the lock)"
                             for relpath in sorted(listed - set(lock.files))]
    _check_locked_bundle(found, lock, report, hashes)


# Why a pinned file the bootstrap obeys differs, by what it is.
_EDITED = {"manifest": "the manifest was edited after packing: its load order, versions, "
                       "driver minimums or bootstrap hash may not be what pack wrote",
           "entry": "the entry script was edited after packing: code above the bootstrap "
                    "lines could load another cuDNN first"}


PREDATES_OPTION = "--lock-predates-record"


def require_bundle_record(lock: Lock | None, lock_path: Path | str, predates: bool) -> None:
    """LockError for a lock without its `bundle` record unless `predates` (the user says
    the lock was written before bundler recorded it): without it the lock pins neither
    the manifest nor the entry script, so an edited load order or code added above the
    bootstrap would pass as locked (a record deleted from the lock does the same)."""
    if lock is None or lock.bundle is not None or predates:
        return
    raise LockError(f"{lock_path}: the lock has no bundle record, so it does not pin the "
                    "manifest (load order, versions, driver minimums, the bootstrap's "
                    "hash) nor the entry script: it was written before bundler recorded "
                    "them, or the record was removed", "pack again to add the record and "
                    f"commit the lock; for a lock that predates the record, "
                    f"{PREDATES_OPTION} checks the runtime files alone")


def _check_locked_bundle(found: FoundManifest, lock: Lock, report: VerifyReport,
                         hashes: dict[str, str]) -> None:
    """The manifest as a whole and the entry script, against the lock's `bundle` record:
    the manifest's own hashes cannot vouch for it, and verify's entry check only looks
    for the bootstrap lines, not for what was added above them. A record that leaves
    either out (edited down) pins nothing for it: not as locked."""
    if lock.bundle is not None:
        needed = [found.path.relative_to(found.root).as_posix(),
                  *([found.manifest.bootstrap.entry] if found.manifest.bootstrap.entry
                    else [])]
        report.not_as_locked += [f"{relpath} (the lock's bundle record does not pin it)"
                                 for relpath in needed if relpath not in lock.bundle]
    for relpath, sha256 in sorted((lock.bundle or {}).items()):
        report.lock_pins.append(relpath)
        path = found.root / relpath
        what = "manifest" if path == found.path else "entry"
        state = file_state(found.root, relpath) if is_inside_relative(relpath) else MISSING
        if state == MISSING:
            report.not_as_locked.append(f"{relpath} (in the lock, not in the bundle)")
        elif state:   # a link is not followed: what it reaches is not the bundle's
            report.not_as_locked.append(f"{relpath} ({state})")
        elif _hash(path, relpath, hashes) != sha256:
            report.not_as_locked.append(f"{relpath} (its sha256 differs from the lock: "
                                        f"{_EDITED[what]})")


def _signature_problem(path: Path, entry: FileEntry) -> str:
    """What is wrong with the signature of a file pack found signed: the same signer,
    reaching the same root (its timestamp: any root bundler carries, or that one)."""
    # The scheme is that of the platform whose library the file is, by its header.
    platform = platform_of_file(path)
    if platform is None:
        return (f"pack found it signed by {entry.signer!r}, now it is no library bundler "
                "can read; get the original back (re-run `bundler pack`)")
    roots = (entry.signature_root,)
    trust = Trust(signer=entry.signer, roots=roots,
                  timestamp_roots=roots + platform.shipped_roots())
    found = platform.check_signature(path, trust)
    if found.ok:
        return ""
    return (f"pack found it signed by {entry.signer!r}, now it is {found.describe()}; "
            "get the original DLL back (re-run `bundler pack`)")
