"""What the store knows of its objects' bytes without reading them again (git's index).

A pack takes a runtime file from the store only as the bytes its name says. Reading
every object again on every pack costs the runtime's size (1.78 GB for the cuDNN 8.9
set, 4.4 GB for an embedded Paddle app) for one edited app file. So each time an object
is hashed, the store keeps a sealed record (`hashed/ab/<sha256>.json`, store/seal.py) of
its stamp (size, modification and change times, file id, device: support/file_stamps.py)
and of the file-system clock read before its bytes were read; a later pack that finds
the same stamp takes the record's word for the bytes.

The racy-stamp rule: a record holds only where the stamp's change time is older than
that clock. A write after the bytes were read sets the change time to the clock's tick
or later, so it shows; a write in the very tick the stamp was taken would not, and
such a stamp is never recorded (read again next time).

Linking an object into a bundle, or removing another bundle's link to it, sets its
change time too (and its link count) without touching a byte. The pack that links an
object records its stamp after the link (`relinked`): it had proven the bytes (hashed,
or by a record) just before, and the file's size, modification time and file id are
still the proven ones. A write that also puts the modification time back, made in the
instant between that proof and the stamp after the link, is the one thing this does not
see (docs/store.md says so). `bundler verify` reads every byte, always.

The zip streams `--zip` keeps (store/zip_streams.py) are proven by the same rule, their
records beside them (`zip-streams/ab/<key>.hashed`, sealed as another kind): `Records`
names where a kind's records lie, so both share this code.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import BundlerError
from bundler.pack.store.seal import seal, unseal
from bundler.pack.store.trust import make_folder, write_record
from bundler.support.file_stamps import Stamp, stamp
from bundler.support.json_files import read_json

FOLDER = "hashed"
_KIND = "hashed-object"
_MAX_RECORD_BYTES = 64 << 10
_CLOCK_TRIES = 2000   # x 1 ms: a coarse file-system clock moves on within milliseconds


@dataclass(frozen=True)
class Records:
    """Where one kind of file's records of its last hash lie (`path`: store root and the
    name the record is bound to -> its file), and the kind its seal binds: a record of
    one kind is never taken for another's."""

    kind: str
    path: Callable[[Path, str], Path]


def _path(store_root: Path, sha256: str) -> Path:
    return store_root / FOLDER / sha256[:2] / f"{sha256}.json"


OBJECTS = Records(_KIND, _path)   # the store's objects, by their sha256


@dataclass(frozen=True)
class Known:
    """An object's bytes as a record proves them: its CRC-32 where one was computed."""

    crc: int | None


@dataclass(frozen=True)
class Proof:
    """An object whose bytes this pack proved (read, or known): its stamp then."""

    sha256: str
    path: Path
    stamp: Stamp
    crc: int | None


def known(store_root: Path, key: bytes, sha256: str, now: Sequence[int],
          records: Records = OBJECTS) -> Known | None:
    """The record of `sha256` if it names the stamp `now` (the object's, taken by the
    caller) and that stamp is older than the clock the record was made by."""
    try:
        body = unseal(key, records.kind, sha256, read_json(
            records.path(store_root, sha256), _MAX_RECORD_BYTES, BundlerError, ""))
        if not isinstance(body, dict) or body["stamp"] != list(now) or \
                not now[2] < int(body["at"]):
            return None
        crc = body.get("crc")
        return Known(crc if isinstance(crc, int) else None)
    except (BundlerError, KeyError, TypeError, ValueError, OSError):
        return None


def remember(store_root: Path, key: bytes, sha256: str, proven: Sequence[int], at: int,
             crc: int | None = None, records: Records = OBJECTS) -> bool:
    """Record that the object had `sha256` for its bytes with stamp `proven`, read after
    the file-system clock showed `at`. Nothing is kept where the stamp is not older than
    `at` (the racy rule) or the store cannot be written."""
    if not proven[2] < at:
        return False
    path = records.path(store_root, sha256)
    body = {"stamp": list(proven), "at": at, "crc": crc}
    try:
        write_record(path, seal(key, records.kind, sha256, body))
    except OSError:
        return False
    return True


def relinked(store_root: Path, key: bytes, proofs: Iterable[Proof]) -> None:
    """After a pack linked proven objects into its bundle: record each one's stamp as
    it is now where only its change time moved (the link), so the next pack need not
    read it again. The clock is read after every link, so each new change time is
    older than it."""
    proofs = list(proofs)
    if not proofs:
        return
    at = clock(store_root)
    if at is None:
        return
    for proof in proofs:
        try:
            now = stamp(proof.path)
        except OSError:
            continue
        if _same_but_change_time(now, proof.stamp):
            remember(store_root, key, proof.sha256, now, at, proof.crc)


def forget(store_root: Path, sha256: str, records: Records = OBJECTS) -> None:
    with contextlib.suppress(OSError):
        records.path(store_root, sha256).unlink()


def _same_but_change_time(now: Sequence[int], then: Sequence[int]) -> bool:
    return (now[0], now[1], now[3], now[4]) == (then[0], then[1], then[3], then[4]) and \
        now[2] >= then[2]


def clock(store_root: Path) -> int | None:
    """The file system's clock at the start of its next tick: every change time set
    before this call is older than the value, every one set after is not."""
    first = _file_system_clock(store_root)
    for _ in range(_CLOCK_TRIES):
        now = _file_system_clock(store_root)
        if first is None or now is None or now > first:
            return now
        time.sleep(0.001)
    return None


def _file_system_clock(store_root: Path) -> int | None:
    """The change time the file system gives a file written now (its coarse clock,
    not time.time_ns's)."""
    folder = store_root / FOLDER
    try:
        make_folder(folder)
        handle, name = tempfile.mkstemp(prefix=".clock.", dir=folder)
        try:
            try:
                os.write(handle, b"\0")
            finally:
                os.close(handle)
            return stamp(name)[2]
        finally:
            os.unlink(name)
    except OSError:
        return None
