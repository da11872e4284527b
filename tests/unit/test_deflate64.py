"""The Deflate64 decoder (bundler/support/zip_decoders.py, zip_reader.py), the method
of NVIDIA's legacy cuDNN zips: inflate64 is fed 32 KiB slices with at most 8 MiB out
per call, and what they give is gathered into pieces of 1 MiB; a call that reaches the
bound loses input, so that member is decoded again from its start in 512-byte slices
with no bound, what was handed on skipped. Members written by 7-Zip and by inflate64
come back exactly, in whole pieces, wherever slices, pieces and the second try begin;
a member whose bytes differ from its CRC is refused wherever the difference lies, the
last piece included; bombs are refused at once with bounded memory."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sysconfig
import zlib
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.support import zip_reader
from bundler.support.zip_reader import ZipArchive

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bounded_memory",
                                               ROOT / "bench" / "bounded_memory.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

PIECE = 1 << 20
DEFLATE64 = 9


def pieces_of(path: Path, name: str) -> list[bytes]:
    with ZipArchive(path) as archive:
        assert archive.members[name].method == DEFLATE64
        return list(archive.read_chunks(name))


def assert_whole_pieces(pieces: list[bytes], payload: bytes) -> None:
    """Equal bytes, in pieces of exactly 1 MiB but the last (the gathering: pieces of
    a slice's ~1 KB each would be thousands per MiB)."""
    assert b"".join(pieces) == payload
    assert all(len(piece) == PIECE for piece in pieces[:-1]), [len(p) for p in pieces]
    assert len(pieces) == -(-len(payload) // PIECE)


def machine_code(at_least: int) -> bytes:
    """Real binary code: this Python's own extension modules, in name order (found
    beside _ctypes: a venv's platstdlib has no lib-dynload of its own)."""
    spec = importlib.util.find_spec("_ctypes")
    folder = Path(spec.origin).parent if spec and spec.origin else \
        Path(sysconfig.get_paths()["platstdlib"]) / "lib-dynload"
    code = b""
    for library in sorted(folder.glob("*.so")):
        code += library.read_bytes()
        if len(code) >= at_least:
            return code
    pytest.skip(f"{folder} holds less than {at_least} bytes of extension modules")


def test_a_7zip_member_of_machine_code_streams_back_exactly(tmp_path: Path) -> None:
    if shutil.which("7z") is None:
        pytest.skip("7z (p7zip-full) is not installed: run tests/setup.sh")
    payload = machine_code(5 << 20)
    (tmp_path / "cuda" / "bin").mkdir(parents=True)
    (tmp_path / "cuda" / "bin" / "code.dll").write_bytes(payload)
    subprocess.run(["7z", "a", "-tzip", "-mm=Deflate64", "-mtc=off", "-bd", "-bso0", "-bsp0",
                    "code.zip", "cuda"], cwd=tmp_path, check=True)
    assert_whole_pieces(pieces_of(tmp_path / "code.zip", "cuda/bin/code.dll"), payload)


@pytest.mark.parametrize("size", [0, 100, 511, 512, PIECE, 3 * PIECE + 12345],
                         ids=["empty", "short", "slice-1", "slice", "one-piece",
                              "pieces-and-a-bit"])
def test_members_of_every_length_stream_back_exactly(tmp_path: Path, size: int) -> None:
    # Half random, half a run: slices whose output is far longer than their input.
    payload = (os.urandom(size // 2) + b"r" * size)[:size]
    path = tmp_path / "a.zip"
    bench.write_members(path, DEFLATE64, [("a.dll", [payload])])
    assert_whole_pieces(pieces_of(path, "a.dll"), payload)


def test_a_run_longer_than_a_piece_streams_back_exactly(tmp_path: Path) -> None:
    """A run reaches the bounded try's bound; in the careful second try one 512-byte
    slice of it inflates to megabytes: it is handed on in pieces."""
    payload = os.urandom(1000) + bytes(40 << 20) + os.urandom(777)
    path = tmp_path / "a.zip"
    bench.write_members(path, DEFLATE64, [("a.dll", [payload])])
    assert_whole_pieces(pieces_of(path, "a.dll"), payload)


def _with_crc_of(path: Path, crc: int) -> None:
    """Write `crc` into the one member's central directory entry (what the reader checks)."""
    raw = bytearray(path.read_bytes())
    entry = raw.rindex(b"PK\x01\x02")
    raw[entry + 16:entry + 20] = crc.to_bytes(4, "little")
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("where", [0, 511, 512, PIECE - 1, PIECE, 2 * PIECE + 99, -1],
                         ids=["first", "slice-end", "slice-start", "piece-end",
                              "piece-start", "middle", "last"])
def test_a_byte_unlike_the_crc_is_refused_wherever_it_is(tmp_path: Path, where: int) -> None:
    """The member decodes cleanly but one byte differs from what its CRC says: found in
    the first piece, at slice and piece edges, and in the last, gathered piece."""
    payload = os.urandom(3 * PIECE + 4321)
    expected = bytearray(payload)
    expected[where] ^= 0x01
    path = tmp_path / "a.zip"
    bench.write_members(path, DEFLATE64, [("a.dll", [payload])])
    _with_crc_of(path, zlib.crc32(expected))
    with ZipArchive(path) as archive, pytest.raises(SourceError, match="CRC or size mismatch"):
        archive.check_member("a.dll")


def test_a_damaged_stream_is_refused(tmp_path: Path) -> None:
    payload = os.urandom(5000) + b"y" * (2 << 20)
    path = tmp_path / "a.zip"
    bench.write_members(path, DEFLATE64, [("a.dll", [payload])])
    raw = bytearray(path.read_bytes())
    start = 30 + len("a.dll") + 4000   # the member's stream starts after its header
    raw[start:start + 600] = b"\xff" * 600   # across a slice's end
    path.write_bytes(bytes(raw))
    refused = r"member a\.dll (is corrupt|inflates past its declared size)"
    with ZipArchive(path) as archive, pytest.raises(SourceError, match=refused):
        archive.check_member("a.dll")


def test_a_deflate64_bomb_is_refused_at_once_with_little_memory(tmp_path: Path) -> None:
    """Declares 5 KB, inflates to 256 MiB of zeros: the first gathered piece is past
    its size, so nothing is written and memory stays small."""
    path = tmp_path / "bomb.zip"
    bench.write_zip(path, DEFLATE64, gib=0.25, bomb=True)
    result = bench.measure(path, tmp_path)
    assert result["outcome"].startswith("refused: member big.dll inflates past"), result
    assert result["written"] == 0
    assert result["peak_rss_mib"] < 150, result   # docs/performance.md: tens of MiB


@pytest.fixture
def careful_tries(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """One entry per member decoded a second time, carefully."""
    tries: list[bool] = []
    real = zip_reader.Deflate64

    def counting(careful: bool = False) -> zip_reader.Deflate64:
        if careful:
            tries.append(careful)
        return real(careful)

    monkeypatch.setattr(zip_reader, "Deflate64", counting)
    return tries


def test_machine_code_is_decoded_in_one_bounded_try(tmp_path: Path,
                                                   careful_tries: list[bool]) -> None:
    """7-Zip's stream, as NVIDIA's zips are (inflate64's own Deflater loses 772 bytes
    of this input when inflate64 reads it back, with or without a bound)."""
    if shutil.which("7z") is None:
        pytest.skip("7z (p7zip-full) is not installed: run tests/setup.sh")
    payload = machine_code(5 << 20)
    (tmp_path / "code.dll").write_bytes(payload)
    subprocess.run(["7z", "a", "-tzip", "-mm=Deflate64", "-mtc=off", "-bd", "-bso0",
                    "-bsp0", "code.zip", "code.dll"], cwd=tmp_path, check=True)
    assert_whole_pieces(pieces_of(tmp_path / "code.zip", "code.dll"), payload)
    assert careful_tries == []


def test_a_run_past_the_bound_is_decoded_again_and_comes_back_exactly(
        tmp_path: Path, careful_tries: list[bool]) -> None:
    """3 MiB handed on, then a run whose slice gives 8 MiB at once: the member is read
    again from its start, the 3 MiB already handed on are not handed on twice, and the
    archive's bytes reach the tap once each, in order (the pin is hashed from them)."""
    payload = os.urandom(3 * PIECE + 999) + bytes(200 << 20) + os.urandom(PIECE + 5)
    path = tmp_path / "a.zip"
    bench.write_members(path, DEFLATE64, [("a.dll", [payload])])
    seen: list[tuple[int, int]] = []
    with ZipArchive(path) as archive:
        pieces = list(archive.read_chunks(
            "a.dll", lambda offset, data: seen.append((offset, len(data)))))
        end = archive.directory_offset
    assert_whole_pieces(pieces, payload)
    assert careful_tries == [True]
    assert seen[0][0] == 0 and all(offset + size == following for (offset, size), (
        following, _) in zip(seen, seen[1:]))
    assert seen[-1][0] + seen[-1][1] == end
