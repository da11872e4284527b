"""The requirement files the lock records: every -r / -c file pip would read, in each of
pip's spellings, followed recursively, each once (bundler/pack/requirement_files.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bundler.errors import SpecError
from bundler.pack.requirement_files import NOT_HASHED, nested_files


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_spelling_is_followed_recursively_once(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    top = tmp_path / "requirements.txt"
    top.write_text("numpy==1.26.4  # -r not-this.txt\n-r a.txt\n--requirement=b.txt\n"
                   "-csub/c.txt\n--constraint \\\n  d.txt\n"
                   "-r https://example.org/remote.txt\n")
    for name in ("a.txt", "b.txt", "d.txt"):
        (tmp_path / name).write_text(f"# {name}\n")
    (tmp_path / "sub" / "c.txt").write_text("-r e.txt\n-r ../a.txt\n")   # relative to sub/
    (tmp_path / "sub" / "e.txt").write_text("")
    found = nested_files(top)
    assert found == {"a.txt": sha(tmp_path / "a.txt"), "b.txt": sha(tmp_path / "b.txt"),
                     "sub/c.txt": sha(tmp_path / "sub" / "c.txt"),
                     "sub/e.txt": sha(tmp_path / "sub" / "e.txt"),
                     "d.txt": sha(tmp_path / "d.txt"),
                     "https://example.org/remote.txt": NOT_HASHED}


def test_a_loop_is_recorded_once(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-r base.txt\n")
    (tmp_path / "base.txt").write_text("-r requirements.txt\n-r base.txt\n")
    assert list(nested_files(tmp_path / "requirements.txt")) == ["base.txt"]


def test_a_missing_file_is_named_with_the_file_naming_it(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-c gone.txt\n")
    with pytest.raises(SpecError, match=r"requirements\.txt: names gone\.txt with -r/-c"):
        nested_files(tmp_path / "requirements.txt")
