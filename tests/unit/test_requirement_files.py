"""The requirement files the lock records: every -r / -c file pip would read, in each of
pip's spellings, followed recursively, each once, in each encoding pip decodes; the
UTF-8 copies the resolver reads (bundler/pack/requirement_files.py)."""

from __future__ import annotations

import codecs
import hashlib
from pathlib import Path

import pytest

from bundler.errors import SpecError
from bundler.pack.requirement_files import (
    NOT_HASHED,
    hash_pins,
    nested_files,
    requirement_lines,
    resolver_copies,
    source_options,
)


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


@pytest.mark.parametrize("encode", [
    lambda text: text.encode("utf-8"),
    lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),
    lambda text: codecs.BOM_UTF16_LE + text.replace("\n", "\r\n").encode("utf-16-le"),
    lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
    lambda text: ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1"),
], ids=["utf-8", "utf-8-bom", "utf-16-le-bom-crlf", "utf-16-be-bom", "coding-line"])
def test_each_encoding_pip_reads_is_read(tmp_path: Path, encode: object) -> None:
    """PowerShell 5's `pip freeze > requirements.txt` writes UTF-16 with a BOM; pip
    reads it, and so does bundler, nested -c files and their hashes included."""
    text = "-c cons.txt\ndemo-a==1.0 \\\n  --hash=sha256:" + "a" * 64 + "  # café\n"
    (tmp_path / "requirements.txt").write_bytes(encode(text))   # type: ignore[operator]
    (tmp_path / "cons.txt").write_bytes(encode("demo-a<2\n"))   # type: ignore[operator]
    assert list(nested_files(tmp_path / "requirements.txt")) == ["cons.txt"]
    assert hash_pins(tmp_path / "requirements.txt") == {"demo-a": {"a" * 64}}
    assert requirement_lines(tmp_path / "cons.txt") == ["demo-a<2"]


def test_the_resolver_gets_utf8_copies_with_paths_that_still_lead_where_they_did(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "sub" / "wheels").mkdir(parents=True)
    (tmp_path / "local.whl").write_bytes(b"")
    top = tmp_path / "requirements.txt"
    top.write_bytes(codecs.BOM_UTF16_LE + (
        "--find-links=gone\n-r sub/base.txt\n./local.whl\n--index-url https://example.org/"
        "simple\n").encode("utf-16-le"))
    (tmp_path / "sub" / "base.txt").write_text("-f wheels\n-c ../cons.txt\ndemo-b\n")
    (tmp_path / "cons.txt").write_text("demo-b==2\n")
    copy = resolver_copies(top, tmp_path / "copies")
    assert copy.name == "requirements.txt" and copy.read_bytes()[:3] != codecs.BOM_UTF8
    lines = copy.read_text(encoding="utf-8").splitlines()
    base = Path(lines[0].split()[1])
    assert lines == [f"-r {base}", f"{tmp_path / 'local.whl'}",
                     "--index-url https://example.org/simple"]
    assert base.read_text().splitlines()[0] == f"--find-links {tmp_path / 'sub' / 'wheels'}"
    cons = Path(base.read_text().splitlines()[1].split()[1])
    assert cons.read_text() == "demo-b==2\n" and cons.is_relative_to(tmp_path / "copies")
    assert "--find-links gone: " in capsys.readouterr().err   # left out, as pip does


def test_source_options_of_every_file_are_kept_for_fetching_pins(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("-i https://example.org/simple\n"
                                               "-r sub/base.txt\ndemo\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "base.txt").write_text("--find-links=wheels\n--no-index\n")
    assert source_options(tmp_path / "requirements.txt") == [
        "-i https://example.org/simple\n", f"--find-links {tmp_path / 'sub' / 'wheels'}\n",
        "--no-index\n"]


def test_require_hashes_alone_asks_for_hashes(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("demo\n")
    assert hash_pins(tmp_path / "requirements.txt") is None
    (tmp_path / "requirements.txt").write_text("-r base.txt\ndemo\n")
    (tmp_path / "base.txt").write_text("--require-hashes\n")
    assert hash_pins(tmp_path / "requirements.txt") == {}
