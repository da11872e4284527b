"""Streaming reads of zip members: stored, deflate and Deflate64, CRC checked.

Python's zipfile reads the central directory well but cannot decode Deflate64
(method 9), which NVIDIA's zips and Windows Explorer produce for large files. So
zipfile supplies the directory and this module decodes each member itself, in
chunks, so a member of hundreds of MB never sits in memory whole.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Protocol

import inflate64

from bundler.errors import SourceError
from bundler.support.hashing import CHUNK

_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_MAGIC = b"PK\x03\x04"
STORED, DEFLATED, DEFLATE64 = 0, 8, 9
_METHOD_NAMES = {STORED: "stored", DEFLATED: "deflate", DEFLATE64: "Deflate64"}


@dataclass(frozen=True)
class Member:
    name: str
    size: int
    compressed_size: int
    crc: int
    method: int
    header_offset: int


class _Decoder(Protocol):
    def feed(self, data: bytes) -> bytes: ...


class _Stored:
    def feed(self, data: bytes) -> bytes:
        return data


class _Deflate:
    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(-15)

    def feed(self, data: bytes) -> bytes:
        return self._inflater.decompress(data)


class _Deflate64:
    def __init__(self) -> None:
        self._inflater = inflate64.Inflater()

    def feed(self, data: bytes) -> bytes:
        return self._inflater.inflate(data)


_DECODERS: dict[int, type[_Decoder]] = {STORED: _Stored, DEFLATED: _Deflate,
                                         DEFLATE64: _Deflate64}

# Sees every raw byte range a member read takes from the file: (offset, bytes).
# Lets a caller hash the whole archive from reads it does anyway (see hashing.py).
Tap = Callable[[int, bytes], None]


class ZipArchive:
    """A zip opened for streaming member reads. Use as a context manager."""

    def __init__(self, path: Path) -> None:
        self.path = path
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
        try:
            with zipfile.ZipFile(self._file) as directory:
                infos = directory.infolist()
                # Where the central directory starts: it and the end record follow.
                self.directory_offset: int = directory.start_dir  # type: ignore[attr-defined]
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise SourceError(f"{self.path}: not a complete zip archive ({exc})",
                              "the download is probably truncated: download it again"
                              ) from None
        return {info.filename: _member(self.path, info) for info in infos
                if not info.is_dir()}

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
        """Yield the member's bytes; raises SourceError if its size or CRC is wrong."""
        member = self.members[name]
        decoder = _DECODERS[member.method]()
        crc, size = 0, 0
        for raw in self._raw_chunks(member, tap or _no_tap):
            try:
                data = decoder.feed(raw)
            except (zlib.error, ValueError) as exc:  # inflate64 raises ValueError
                raise SourceError(f"{self.path}: member {name} is corrupt ({exc})",
                                  "the archive is damaged: download it again") from None
            crc = zlib.crc32(data, crc)
            size += len(data)
            if data:
                yield data
        if size != member.size or crc != member.crc:
            raise SourceError(
                f"{self.path}: member {name} is corrupt (CRC or size mismatch)",
                "the archive is damaged: download it again")

    def check_member(self, name: str, tap: Tap | None = None) -> None:
        """Decode a member only to check its CRC."""
        for _ in self.read_chunks(name, tap):
            pass

    def _raw_chunks(self, member: Member, tap: Tap) -> Iterator[bytes]:
        offset = member.header_offset
        self._file.seek(offset)
        header = self._file.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or header[:4] != _LOCAL_MAGIC:
            raise SourceError(f"{self.path}: member {member.name} has no local header",
                              "the archive is damaged: download it again")
        fields = _LOCAL_HEADER.unpack(header)
        # Read (not seek past) the file name and extra field, so a tap sees every byte.
        header += self._file.read(fields[9] + fields[10])
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


def _no_tap(_offset: int, _data: bytes) -> None:
    pass


def _member(path: Path, info: zipfile.ZipInfo) -> Member:
    _refuse_escape(path, info.filename)
    if info.flag_bits & 0x1:
        raise SourceError(f"{path}: member {info.filename} is encrypted",
                          "use the archive as NVIDIA publishes it")
    if info.compress_type not in _DECODERS:
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
