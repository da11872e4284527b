"""A re-pack whose zip would hold the very bytes the zip at --zip holds leaves that zip
as it was (bundler/pack/zip/unchanged.py): nothing written, the same file, the same
time. Any difference in it (a byte of a stream, of a header, bytes after its end) and
the zip is written anew, as a fresh pack writes it. Real packs of the stand-in runtime."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile
from pathlib import Path

import pytest

from bundler.errors import RefusedError
from bundler.pack.store.store import file_stamp
from bundler.pack.zip import output as zip_output
from bundler.support.file_stamps import stamp
from tests.harness.packing import Workspace, run_cli


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def zip_pack(capsys: pytest.CaptureFixture[str], workspace: Workspace, zipped: Path
             ) -> dict[str, object]:
    # --recheck: in full, never "up to date" (pack/up_to_date.py), so the zip is compared
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped, "--json",
                             "--recheck")
    assert code == 0, err
    counts: dict[str, object] = json.loads(out)["zip_members"]
    return counts


def test_an_unchanged_zip_is_left_as_it_was(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    cold = zip_pack(capsys, workspace, zipped)
    assert cold["unchanged"] is False
    before, content = file_stamp(zipped.stat()), zipped.read_bytes()

    def no_zip_written(*args: object, **kwargs: object) -> None:
        raise AssertionError("a zip was written")

    monkeypatch.setattr(zip_output, "_add_all", no_zip_written)
    warm = zip_pack(capsys, workspace, zipped)
    assert warm["unchanged"] is True and warm["compressed"] == 0
    assert warm["reused"] == cold["compressed"]   # every file's stream, checked in place
    assert file_stamp(zipped.stat()) == before and zipped.read_bytes() == content
    assert not list(tmp_path.glob(".app.zip.*.partial"))
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped, "--recheck")
    assert code == 0, err
    assert "the zip already held them, every byte checked: left as it was" in out


def _stream_offset(zipped: Path) -> int:
    """The middle of the largest member's stream, from its local header."""
    with zipfile.ZipFile(zipped) as archive:
        largest = max(archive.infolist(), key=lambda info: info.compress_size)
    data = zipped.read_bytes()
    name_length, extra_length = struct.unpack_from("<2H", data, largest.header_offset + 26)
    return largest.header_offset + 30 + name_length + extra_length + \
        largest.compress_size // 2


def _flip(path: Path, offset: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", ["a byte of a stream", "a byte of a header",
                                    "a byte after its end"])
def test_a_zip_that_differs_anywhere_is_written_anew(
        damage: str, workspace: Workspace, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped, fresh = tmp_path / "app.zip", tmp_path / "fresh.zip"
    zip_pack(capsys, workspace, zipped)
    shutil.copyfile(zipped, fresh)
    if damage == "a byte of a stream":   # same size: only the stream's hash tells
        _flip(zipped, _stream_offset(zipped))
    elif damage == "a byte of a header":
        _flip(zipped, 10)   # the first local header's time
    else:
        with open(zipped, "ab") as handle:
            handle.write(b"\0")
    assert zipped.read_bytes() != fresh.read_bytes()
    warm = zip_pack(capsys, workspace, zipped)
    assert warm["unchanged"] is False and warm["compressed"] == 0   # streams still kept
    assert zipped.read_bytes() == fresh.read_bytes()
    with zipfile.ZipFile(zipped) as archive:
        assert archive.testzip() is None


def test_a_zip_changed_after_its_check_is_not_called_the_bundles(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    zip_pack(capsys, workspace, zipped)
    checked = stamp(zipped)
    pending = zip_output.PendingZip(None, zipped, tmp_path / ".note", None, checked)
    pending.publish()   # still the file that was compared
    before = zipped.stat()
    with open(zipped, "r+b") as handle:   # a careful write: size and times put back
        handle.write(b"\0")
    os.utime(zipped, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert file_stamp(zipped.stat()) == file_stamp(before)
    with pytest.raises(RefusedError, match="changed while this pack compared it"):
        pending.publish()
