"""Bounded resources: a member never inflates past its declared size (zip bombs, in
deflate and Deflate64), memory stays small whatever a member holds, endless inputs
(devices, pipes) and oversized files are refused, duplicate and case-twin members are
refused by name."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.support.zip_reader import ZipArchive

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bounded_memory",
                                               ROOT / "bench" / "bounded_memory.py")
assert _spec and _spec.loader
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("method", [8, 9], ids=["deflate", "Deflate64"])
def test_a_zip_bomb_stops_at_the_first_byte_past_its_declared_size(
        tmp_path: Path, method: int) -> None:
    path = tmp_path / "bomb.zip"
    bench.write_zip(path, method, gib=0.25, bomb=True)  # declares 5000 bytes
    taken = 0
    with ZipArchive(path) as archive, pytest.raises(SourceError,
                                                    match="inflates past its declared size"):
        for chunk in archive.read_chunks("big.dll"):
            taken += len(chunk)
    assert taken <= 5000


@pytest.mark.parametrize("method, zeros", [(0, False), (8, False), (9, False), (8, True),
                                           (9, True)],
                         ids=["stored", "deflate", "Deflate64", "deflate-zeros",
                              "Deflate64-zeros"])
def test_memory_stays_small_for_a_large_member(tmp_path: Path, method: int, zeros: bool
                                               ) -> None:
    """The bench's child (bench/bounded_memory.py) on a 300 MiB member: the decoders
    hand out bounded pieces, so peak memory does not grow with the member."""
    path = tmp_path / "big.zip"
    bench.write_zip(path, method, gib=0.3, zeros=zeros)
    result = bench.measure(path, tmp_path)
    assert result["outcome"] == "ok" and result["written"] == int(0.3 * 1024) << 20
    assert result["peak_rss_mib"] < 150, result  # docs/performance.md: tens of MiB


def test_the_bomb_bench_refuses_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "bomb.zip"
    bench.write_zip(path, 8, gib=0.25, bomb=True)
    result = bench.measure(path, tmp_path)
    assert result["outcome"].startswith("refused") and result["written"] <= 5000


def test_duplicate_members_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "dup.zip"
    with pytest.warns(UserWarning), zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cuda/bin/cudnn64_8.dll", b"first")
        archive.writestr("cuda/bin/cudnn64_8.dll", b"second")
    with pytest.raises(SourceError, match="'cuda/bin/cudnn64_8.dll' twice"):
        ZipArchive(path)


def test_case_twin_members_are_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "twins.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cuda/bin/cudnn64_8.dll", b"first")
        archive.writestr("cuda/bin/CUDNN64_8.DLL", b"second")
    with pytest.raises(SourceError, match="differ only in case") as caught:
        ZipArchive(path)
    assert "CUDNN64_8.DLL" in caught.value.message


@pytest.mark.parametrize("make", [
    lambda tmp: Path("/dev/zero"),
    lambda tmp: (os.mkfifo(tmp / "fifo"), tmp / "fifo")[1],
], ids=["device", "pipe"])
def test_an_endless_source_is_refused(tmp_path: Path, make) -> None:
    with pytest.raises(SourceError, match="not a regular file"):
        ZipArchive(make(tmp_path))


def test_an_endless_source_given_on_the_command_line_is_one_line(
        tmp_path: Path, standin_toolkit: Path) -> None:
    spec = tmp_path / "app.spec"
    (tmp_path / "app").mkdir()
    spec.write_text('[app]\nname = "app"\npath = "app"\n[runtime]\n'
                    'recipe = "cudnn-8.0.3.33-cuda10.1-win-x64"\n')
    done = subprocess.run([sys.executable, "-m", "bundler", "pack", spec, "--source",
                           "cudnn=/dev/zero", "--source", f"cuda={standin_toolkit}",
                           "--offline"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2, done.stderr
    assert "/dev/zero: not a regular file" in done.stderr


def test_measure_reports_json(tmp_path: Path) -> None:
    path = tmp_path / "small.zip"
    bench.write_zip(path, 0, gib=1 / 1024)
    assert json.dumps(bench.measure(path, tmp_path))


def test_a_zip_needing_a_newer_reader_is_one_line(tmp_path: Path) -> None:
    """Found by tests/integration/test_fuzz.py: zipfile raises NotImplementedError for it."""
    path = tmp_path / "v64.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cuda/bin/cudnn64_8.dll", b"x")
    raw = bytearray(path.read_bytes())
    central = raw.index(b"PK\x01\x02")
    raw[central + 6] = 64  # version needed to extract: 6.4
    path.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match="not a complete zip archive"):
        ZipArchive(path)


def test_a_huge_zip_directory_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A 22-byte end record may claim a directory of any size (a zip64 one, millions of
    members); zipfile would read it whole and hold an object per member in memory."""
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a", b"x")
    raw = bytearray(path.read_bytes())
    end = raw.rindex(b"PK\x05\x06")
    raw[end + 12:end + 16] = (100 << 20).to_bytes(4, "little")  # directory size
    path.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match="more than bundler reads"):
        ZipArchive(path)


def test_a_wheel_whose_record_declares_gigabytes_is_refused_before_reading(
        tmp_path: Path) -> None:
    """RECORD is read whole; a bomb declaring 4 GB (or inflating to it) must not be."""
    from bundler.pack.sources import WheelSource
    from bundler.recipe.load import SourceSpec
    from tests.harness import wheelkit
    path = wheelkit.make_wheel(tmp_path, {"demo/bin/demo64_1.dll": b"x"}, name="demo_pkg",
                               version="1.0")
    raw = bytearray(path.read_bytes())
    name = b"demo_pkg-1.0.dist-info/RECORD"
    central = raw.rindex(name) - 46  # RECORD's central directory entry
    assert raw[central:central + 4] == b"PK\x01\x02"
    raw[central + 24:central + 28] = b"\xf0\xff\xff\xff"  # uncompressed size ~4 GiB
    path.write_bytes(bytes(raw))
    spec = SourceSpec(id="demo", kind="wheel", contents=("demo/bin/demo64_1.dll",),
                      package="demo-pkg", version="1.0", platform_tag="win_amd64")
    with pytest.raises(SourceError, match="larger than 16 MiB"):
        WheelSource(spec, path, "test")
