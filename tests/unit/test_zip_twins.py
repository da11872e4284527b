"""Two members of a zip Windows takes for one file are refused, saying what makes them
one (issue 42, #25): a member written with backslashes beside the same path written
with slashes was reported as differing "only in case"."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.support.zip_reader import ZipArchive


@pytest.mark.parametrize("second, said", [
    ("cuda\\bin\\cudnn64_8.dll",
     "are one path (one writes its folders with \\, the other with /)"),
    ("cuda\\bin\\CUDNN64_8.DLL", "differ only in case and in writing folders with \\ or /"),
    ("cuda/bin/CUDNN64_8.DLL", "differ only in case"),
], ids=["backslashes", "backslashes-and-case", "case"])
def test_twin_members_are_refused_saying_how_they_differ(
        tmp_path: Path, second: str, said: str) -> None:
    path = tmp_path / "twins.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cuda/bin/cudnn64_8.dll", b"first")
        archive.writestr(second, b"second")
    with pytest.raises(SourceError) as caught:
        ZipArchive(path)
    assert caught.value.message.endswith(
        f"members 'cuda/bin/cudnn64_8.dll' and {second!r} {said}; Windows (and bundler) "
        "can take only one of them"), caught.value.message


def test_a_member_with_no_name_is_refused_not_a_crash(tmp_path: Path) -> None:
    """A damaged directory entry whose name starts with a NUL byte, which zipfile cuts the
    name at (found by test_fuzz's central directory fuzzing: zipfile's is_dir() then
    indexed the empty name, exit 3)."""
    path = tmp_path / "nameless.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cuda/bin/a.dll", b"first")
    raw = bytearray(path.read_bytes())
    central = raw.rindex(b"PK\x01\x02")
    raw[central + 46] = 0   # the name's first byte
    path.write_bytes(bytes(raw))
    with pytest.raises(SourceError) as caught:
        ZipArchive(path)
    assert "a member of its directory has no name" in caught.value.message
