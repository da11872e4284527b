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
