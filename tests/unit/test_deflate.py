"""The deflate engine (bundler/support/deflate.py): ISA-L where installed, else zlib;
members stream back exactly and corrupt ones are refused whichever does the work."""

from __future__ import annotations

import importlib.util
import os
import zipfile
import zlib
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.support import deflate
from bundler.support.zip_reader import ZipArchive

ENGINES = ["zlib"] + (["isal_zlib"] if importlib.util.find_spec("isal") else [])


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "zlib":   # as on a machine where isal has no wheel
        monkeypatch.setattr(deflate, "_engine", zlib)
        monkeypatch.setattr(deflate, "ERRORS", (zlib.error,))
    return str(request.param)


def test_isal_does_the_work_where_it_is_installed() -> None:
    """pyproject.toml asks for isal on x86-64 and ARM64: the fast engine is the one used."""
    if "isal_zlib" not in ENGINES:
        pytest.skip("isal has no wheel for this machine")
    assert deflate.ENGINE == "isal_zlib"
    assert type(deflate.raw_inflater()).__module__.startswith("isal")


@pytest.mark.parametrize("shape", ["run-at-the-end", "run-inside"])
def test_members_stream_back_exactly(tmp_path: Path, engine: str, shape: str) -> None:
    # A long run packs into a few bytes that inflate to several full pieces: at the
    # end of a member ISA-L has taken all its input and still holds output back.
    payload = (os.urandom(3 << 20) + b"x" * (2 << 20) if shape == "run-at-the-end"
               else os.urandom(3 << 20) + b"x" * (5 << 20) + os.urandom(12345))
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bin/a.dll", payload)
    with ZipArchive(path) as archive:
        pieces = list(archive.read_chunks("bin/a.dll"))
    assert b"".join(pieces) == payload
    assert max(map(len, pieces)) <= 1 << 20   # bounded pieces, a zip bomb's guard


def test_a_corrupt_stream_is_refused(tmp_path: Path, engine: str) -> None:
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("bin/a.dll", os.urandom(1000) + b"y" * 200_000)
    data = bytearray(path.read_bytes())
    data[40:60] = b"\xff" * 20   # inside the member's deflate stream
    path.write_bytes(bytes(data))
    with ZipArchive(path) as archive, pytest.raises(SourceError, match="corrupt"):
        archive.check_member("bin/a.dll")


def test_crc32_is_zlibs(engine: str) -> None:
    data = os.urandom(100_000)
    assert deflate.crc32(data, 7) == zlib.crc32(data, 7)
