"""The zip reader: stored and deflate members stream with CRC checks; unsafe
names and damaged archives are refused. (Deflate64 from 7z is covered under
test_pack.py with the real NVIDIA layout.)"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import IO, Any

import pytest

from bundler.errors import SourceError
from bundler.support.zip_reader import ZipArchive


def make_zip(path: Path, members: dict[str, bytes], method: int) -> None:
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_members_stream_back_exactly(tmp_path: Path, method: int) -> None:
    payload = os.urandom(3 << 20) + b"x" * (2 << 20)
    make_zip(tmp_path / "a.zip", {"cuda/bin/a.dll": payload, "cuda/b.txt": b"hi"}, method)
    with ZipArchive(tmp_path / "a.zip") as archive:
        assert set(archive.members) == {"cuda/bin/a.dll", "cuda/b.txt"}
        assert b"".join(archive.read_chunks("cuda/bin/a.dll")) == payload


def test_corrupted_member_fails_its_crc(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    make_zip(path, {"cuda/a.bin": b"A" * 5000}, zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    at = data.index(b"A" * 100)
    data[at + 10] = ord("B")
    path.write_bytes(bytes(data))
    with ZipArchive(path) as archive, pytest.raises(SourceError, match="corrupt"):
        archive.check_member("cuda/a.bin")


def test_truncated_zip_is_named(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    make_zip(path, {"cuda/a.bin": os.urandom(10000)}, zipfile.ZIP_DEFLATED)
    path.write_bytes(path.read_bytes()[:6000])
    with pytest.raises(SourceError, match="truncated") as caught:
        ZipArchive(path)
    assert str(path) in caught.value.message


@pytest.mark.parametrize("name", ["../evil.dll", "cuda/../../evil.dll", "/etc/evil",
                                  "C:/Windows/evil.dll"])
def test_member_escaping_its_folder_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "a.zip"
    make_zip(path, {"cuda/ok.txt": b"ok", name: b"evil"}, zipfile.ZIP_STORED)
    with pytest.raises(SourceError, match="escapes"):
        ZipArchive(path)


def test_damaged_compressed_stream_is_named(tmp_path: Path) -> None:
    path = tmp_path / "a.zip"
    make_zip(path, {"cuda/a.bin": b"abc" * 100000}, zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    start = data.index(b"cuda/a.bin") + len("cuda/a.bin")
    data[start + 2: start + 6] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    with ZipArchive(path) as archive, pytest.raises(SourceError, match="corrupt"):
        archive.check_member("cuda/a.bin")


def _escaping(path: Path) -> None:
    make_zip(path, {"../evil.dll": b"evil"}, zipfile.ZIP_STORED)


def _encrypted(path: Path) -> None:
    make_zip(path, {"cuda/a.dll": b"data"}, zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())  # zipfile cannot write the flag: set it after
    data[data.index(b"PK\x01\x02") + 8] |= 0x1
    path.write_bytes(bytes(data))


def _bzip2(path: Path) -> None:
    make_zip(path, {"cuda/a.dll": b"data"}, zipfile.ZIP_BZIP2)


def _truncated(path: Path) -> None:
    make_zip(path, {"cuda/a.dll": b"data"}, zipfile.ZIP_STORED)
    path.write_bytes(path.read_bytes()[:-10])


@pytest.mark.parametrize("make, expected", [
    (_escaping, "escapes"),
    (_encrypted, "is encrypted"),
    (_bzip2, "uses compression method 12"),
    (_truncated, "not a complete zip"),
])
def test_a_refused_archive_is_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     make: Any, expected: str) -> None:
    # An archive left open stays locked on Windows: the user could not even replace it.
    path = tmp_path / "a.zip"
    make(path)
    opened: list[IO[bytes]] = []

    def recording_open(*args: Any, **kwargs: Any) -> IO[bytes]:
        opened.append(open(*args, **kwargs))  # noqa: SIM115 - closed by the code under test
        return opened[-1]

    monkeypatch.setattr("bundler.support.zip_reader.open", recording_open, raising=False)
    with pytest.raises(SourceError, match=expected):
        ZipArchive(path)
    assert len(opened) == 1 and opened[0].closed
