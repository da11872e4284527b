"""Streaming reads of zip members: stored, deflate and Deflate64, CRC checked.

Python's zipfile reads the central directory well but cannot decode Deflate64
(method 9), which NVIDIA's zips and Windows Explorer produce for large files. So
zipfile supplies the directory and this module decodes each member itself, in
chunks, so a member of hundreds of MB never sits in memory whole.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
import struct
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from bundler.errors import SourceError
from bundler.support import deflate
from bundler.support.hashing import CHUNK
from bundler.support.paths import windows_fold
from bundler.support.zip_decoders import (
    DECODERS,
    DEFLATE64,
    DEFLATED,
    STORED,
    BoundReached,
    Deflate64,
    decoded,
    skipped,
)

# cuDNN's and CUDA's zips and wheels hold tens to hundreds of members; these bound the
# memory zipfile spends on a directory (about 0.5 KB per member).
MAX_MEMBERS = 200_000
MAX_DIRECTORY_BYTES = 64 << 20
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_MAGIC = b"PK\x03\x04"
# What a corrupt member's decoding raises (inflate64: ValueError).
_CORRUPT: tuple[type[Exception], ...] = (*deflate.ERRORS, ValueError)
_METHOD_NAMES = {STORED: "stored", DEFLATED: "deflate", DEFLATE64: "Deflate64"}


@dataclass(frozen=True)
class Member:
    name: str
    size: int
    compressed_size: int
    crc: int
    method: int
    header_offset: int


# Sees every raw byte range a member read takes from the file: (offset, bytes).
# Lets a caller hash the whole archive from reads it does anyway (see hashing.py).
Tap = Callable[[int, bytes], None]


class ZipArchive:
    """A zip opened for streaming member reads. Use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
        _refuse_special(path)
        try:
            self._file: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by close()
        except OSError as exc:
            raise SourceError(f"{path}: cannot open: {exc.strerror}",
                              "check the path in [sources] or --source") from None
        try:
            self.members = self._read_directory()
        except BaseException:
            self._file.close()  # a refused archive must not stay open (Windows locks it)
            raise

    def _read_directory(self) -> dict[str, Member]:
        self._refuse_huge_directory()
        try:
            with zipfile.ZipFile(self._file) as directory:
                infos = directory.infolist()
                # Where the central directory starts: it and the end record follow.
                self.directory_offset: int = directory.start_dir  # type: ignore[attr-defined]
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, ValueError) as exc:
            raise SourceError(f"{self.path}: not a complete zip archive ({exc})",
                              "the download is probably truncated: download it again"
                              ) from None
        members: dict[str, Member] = {}
        folded: dict[str, str] = {}
        for info in infos:
            if not info.filename:   # zipfile's is_dir() would index the empty name
                raise SourceError(f"{self.path}: a member of its directory has no name",
                                  "this archive is damaged or tampered with: get the original")
            if info.is_dir():
                continue
            name = info.filename
            twin = folded.setdefault(windows_fold(name.replace("\\", "/")), name)
            if name in members or twin != name:
                what = (f"holds {name!r} twice" if twin == name else
                        f"members {twin!r} and {name!r} {_how_twins_differ(twin, name)}")
                raise SourceError(f"{self.path}: {what}; Windows (and bundler) can take "
                                  "only one of them",
                                  "this archive is damaged or tampered with: get the original")
            members[name] = _member(self.path, info)
        return members

    def _refuse_huge_directory(self) -> None:
        """zipfile holds the whole central directory in memory (an object per member):
        refuse one far larger than any runtime archive before it is read."""
        try:
            end = zipfile._EndRecData(self._file)  # type: ignore[attr-defined]
        except (OSError, ValueError):
            return  # zipfile names the problem
        if end is None:
            return
        entries = end[zipfile._ECD_ENTRIES_TOTAL]  # type: ignore[attr-defined]
        size = end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]
        if entries > MAX_MEMBERS or size > MAX_DIRECTORY_BYTES:
            raise SourceError(f"{self.path}: its directory lists {entries} members in {size} "
                              f"bytes, more than bundler reads ({MAX_MEMBERS} members, "
                              f"{MAX_DIRECTORY_BYTES >> 20} MiB)",
                              "this is not a runtime archive: check the path")

    def reader(self) -> ZipArchive:
        """The same archive on a file handle of its own, so that members can be read on
        several threads at once (each seeks on its own handle). It must be the same
        file: one put in its place since the directory was read is refused."""
        twin = ZipArchive.__new__(ZipArchive)
        twin.path, twin.members = self.path, self.members
        twin.directory_offset = self.directory_offset
        try:
            twin._file = open(self.path, "rb")  # noqa: SIM115 - closed by the caller
        except OSError as exc:
            raise SourceError(f"{self.path}: cannot open: {exc.strerror}",
                              "check the path in [sources] or --source") from None
        mine, theirs = os.fstat(self._file.fileno()), os.fstat(twin._file.fileno())
        if (mine.st_ino, mine.st_dev, mine.st_size) != (theirs.st_ino, theirs.st_dev,
                                                        theirs.st_size):
            twin._file.close()
            raise SourceError(f"{self.path}: the file changed while it was read",
                              "let the download finish, then pack again")
        return twin

    def __enter__(self) -> ZipArchive:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._file.close()

    def directory_digest(self) -> str:
        """A sha256 of the file's size and its central directory (every member's name,
        CRC, sizes and offset) with the end record: what the file holds, read in
        kilobytes. Two files with equal digests hold the same members (see docs/store.md)."""
        digest = hashlib.sha256(b"zip\0%d\0" % os.fstat(self._file.fileno()).st_size)
        self._file.seek(self.directory_offset)
        while chunk := self._file.read(CHUNK):
            digest.update(chunk)
        return digest.hexdigest()

    def read_chunks(self, name: str, tap: Tap | None = None) -> Iterator[bytes]:
        """Yield the member's bytes; raises SourceError if its size or CRC is wrong, and
        as soon as it would inflate past its declared size (nothing past it is yielded)."""
        member = self.members[name]
        crc, size = 0, 0
        try:
            for data in self._decoded(member, tap or _no_tap):
                size += len(data)
                if size > member.size:
                    raise SourceError(
                        f"{self.path}: member {name} inflates past its declared size "
                        f"of {member.size} bytes", "the archive is damaged or hostile "
                        "(a zip bomb): get the original")
                crc = deflate.crc32(data, crc)
                if data:
                    yield data
        except _CORRUPT as exc:
            raise SourceError(f"{self.path}: member {name} is corrupt ({exc})",
                              "the archive is damaged: download it again") from None
        if size != member.size or crc != member.crc:
            raise SourceError(
                f"{self.path}: member {name} is corrupt (CRC or size mismatch)",
                "the archive is damaged: download it again")

    def check_member(self, name: str, tap: Tap | None = None) -> None:
        """Decode a member only to check its CRC."""
        for _ in self.read_chunks(name, tap):
            pass

    def _decoded(self, member: Member, tap: Tap) -> Iterator[bytes]:
        """The member's output. A Deflate64 member is tried bounded first (fast; real
        DLLs never reach the bound) and only where a call reaches it, again carefully
        (zip_decoders.py says why)."""
        raw = self._raw_chunks(member, tap)
        if member.method != DEFLATE64:
            yield from decoded(DECODERS[member.method](), raw)
            return
        bounded, delivered, fed, chunk = Deflate64(), 0, 0, b""
        try:
            for chunk in raw:
                for out in bounded.feed(chunk):
                    delivered += len(out)
                    yield out
                fed += len(chunk)
            yield from bounded.finish()
            return
        except BoundReached:
            pass
        # Again from the first byte, carefully: what was read is read again (the tap saw
        # it in order already), the rest as before; what was handed on is not again.
        again = itertools.chain(self._read_again(member, fed), (chunk,), raw)
        yield from skipped(decoded(Deflate64(careful=True), again), delivered)

    def _read_again(self, member: Member, length: int) -> Iterator[bytes]:
        """The first `length` compressed bytes of a member, the file left where it was."""
        resume = self._file.tell()
        self._file.seek(self._data_start(member))
        while length:
            raw = self._file.read(min(CHUNK, length))
            if not raw:
                raise SourceError(f"{self.path}: the file changed while it was read",
                                  "let the download finish, then pack again")
            length -= len(raw)
            yield raw
        self._file.seek(resume)

    def _local_header(self, member: Member) -> bytes:
        self._file.seek(member.header_offset)
        header = self._file.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_MAGIC:
            raise SourceError(f"{self.path}: member {member.name} has no local header",
                              "the archive is damaged: download it again")
        fields = _LOCAL_HEADER.unpack(header)
        # Read (not seek past) the file name and extra field, so a tap sees every byte.
        return header + self._file.read(fields[9] + fields[10])

    def _data_start(self, member: Member) -> int:
        return member.header_offset + len(self._local_header(member))

    def _raw_chunks(self, member: Member, tap: Tap) -> Iterator[bytes]:
        offset = member.header_offset
        header = self._local_header(member)
        tap(offset, header)
        offset += len(header)
        remaining = member.compressed_size
        while remaining:
            raw = self._file.read(min(CHUNK, remaining))
            if not raw:
                raise SourceError(f"{self.path}: member {member.name} is cut short",
                                  "the download is probably truncated: download it again")
            tap(offset, raw)
            offset += len(raw)
            remaining -= len(raw)
            yield raw


def _refuse_special(path: Path) -> None:
    """A device (/dev/zero), pipe or socket never ends: only regular files are read."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # open() names the problem
    if not stat.S_ISREG(mode):
        raise SourceError(f"{path}: not a regular file (a device, pipe or folder)",
                          "give the path of the downloaded file itself")


def _no_tap(_offset: int, _data: bytes) -> None:
    pass


def _member(path: Path, info: zipfile.ZipInfo) -> Member:
    _refuse_escape(path, info.filename)
    if info.flag_bits & 0x1:
        raise SourceError(f"{path}: member {info.filename} is encrypted",
                          "use the archive as NVIDIA publishes it")
    if info.compress_type not in DECODERS:
        raise SourceError(f"{path}: member {info.filename} uses compression method "
                          f"{info.compress_type}, which bundler does not read",
                          f"re-pack it as {', '.join(_METHOD_NAMES.values())}")
    return Member(name=info.filename, size=info.file_size,
                  compressed_size=info.compress_size, crc=info.CRC,
                  method=info.compress_type, header_offset=info.header_offset)


def _refuse_escape(path: Path, name: str) -> None:
    """Refuse members that would land outside the folder they are unpacked into."""
    posix = PurePosixPath(name.replace("\\", "/"))
    drive = len(name) > 1 and name[1] == ":"
    if posix.is_absolute() or drive or ".." in posix.parts:
        raise SourceError(f"{path}: member {name!r} escapes the archive's folder",
                          "this archive is unsafe; get the original from NVIDIA")


def _how_twins_differ(first: str, second: str) -> str:
    """What makes two member names one for Windows: the separator (a zip's `bin\\x.dll`
    is `bin/x.dll` to Windows), the case, or both."""
    if first.replace("\\", "/") == second.replace("\\", "/"):
        return "are one path (one writes its folders with \\, the other with /)"
    if [c == "\\" for c in first] != [c == "\\" for c in second]:
        return "differ only in case and in writing folders with \\ or /"
    return "differ only in case"
