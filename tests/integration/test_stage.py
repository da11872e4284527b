"""The stage: each source is swept once. A pack of a subset copies the members it
takes and CRC-checks the others in one front-to-back pass, and the archive's own
sha256 (for the lock) comes from those same reads: each byte is read once.

Reads of the zip are counted where they reach the operating system (the raw file
under Python's buffer), as /proc/self/io would count them, but for this one file.
"""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bundler.errors import SourceError
from bundler.pack.pipeline import pack
from bundler.pack.sources import ArchiveSource
from bundler.pack.spec import load_spec
from bundler.pack.stage import stage_files
from bundler.recipe.load import RuntimeFile, SourceSpec
from tests.harness.packing import central_directory_offset, make_workspace, times_read


def test_a_subset_pack_reads_each_member_byte_once(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        zip_reads: Any) -> None:
    source = tmp_path / standin_zip.name
    source.write_bytes(standin_zip.read_bytes())
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": source, "cuda": standin_toolkit},
                               extra_runtime='components = ["cnn_infer"]')
    reads = zip_reads(source)
    result = pack(load_spec(workspace.spec))
    shipped = {Path(entry.path).name for entry in result.manifest.files}
    assert "cudnn_cnn_infer64_8.dll" in shipped and "cudnn_cnn_train64_8.dll" not in shipped
    times = times_read(reads, source.stat().st_size)
    members_end = central_directory_offset(source)
    # The members: every byte read (the lock's sha256 covers them), none twice. (The
    # small central directory at the end is read to list them, and again for the hash.)
    assert all(t == 1 for t in times[:members_end]), (
        f"{sum(times[:members_end])} bytes read for {members_end} bytes of members")


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def _corrupt(path: Path, data: bytes) -> None:
    raw = bytearray(path.read_bytes())
    raw[raw.index(data) + len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


def _files(*refs: tuple[str, str]) -> list[RuntimeFile]:
    return [RuntimeFile(name=name, source="lib", member=member, component="core")
            for name, member in refs]


def _open(path: Path, files: list[RuntimeFile]) -> ArchiveSource:
    return ArchiveSource(SourceSpec(id="lib", kind="archive", contents=()), path, "test",
                         takes={f.member for f in files})


def test_a_member_not_taken_is_crc_checked_while_staging(tmp_path: Path) -> None:
    path = _zip(tmp_path / "lib.zip", {"a.dll": b"A" * 4000, "b.lib": b"B" * 4000,
                                       "c.dll": b"C" * 4000})
    _corrupt(path, b"B" * 4000)
    files = _files(("a.dll", "a.dll"), ("c.dll", "c.dll"))
    source = _open(path, files)
    try:
        with pytest.raises(SourceError, match="member b.lib is corrupt"):
            stage_files(files, {"lib": source}, tmp_path / "out", "out")
    finally:
        source.close()


def test_a_member_shipped_under_two_names_is_read_once(tmp_path: Path) -> None:
    data = b"MZ" + bytes(range(256)) * 64
    path = _zip(tmp_path / "lib.zip", {"bin/x.dll": data, "bin/y.dll": b"y"})
    files = _files(("x.dll", "bin/x.dll"), ("x_alias.dll", "bin/x.dll"), ("y.dll", "bin/y.dll"))
    source = _open(path, files)
    try:
        staged = stage_files(files, {"lib": source}, tmp_path / "out", "out")
        assert source.identity({}) == hashlib.sha256(path.read_bytes()).hexdigest()
    finally:
        source.close()
    assert [(s.relpath, s.path.read_bytes()) for s in staged] == [
        ("out/x.dll", data), ("out/x_alias.dll", data), ("out/y.dll", b"y")]
    assert staged[0].sha256 == staged[1].sha256 == hashlib.sha256(data).hexdigest()


def test_a_sweep_checks_what_its_caller_left_unread(tmp_path: Path) -> None:
    path = _zip(tmp_path / "lib.zip", {"a.dll": b"A" * 4000, "b.dll": b"B"})
    _corrupt(path, b"A" * 4000)
    source = _open(path, _files(("a.dll", "a.dll"), ("b.dll", "b.dll")))
    try:
        with pytest.raises(SourceError, match="member a.dll is corrupt"):
            for _member, _chunks in source.sweep():
                pass  # the bytes are never read: the source still checks them
    finally:
        source.close()
