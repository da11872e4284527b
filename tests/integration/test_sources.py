"""Sources check, when opened, that they hold every member the pack will take, even
when the recipe does not list the source's contents: a missing member is a
SourceError naming it (exit 2), never a traceback from deep in the stage."""

from __future__ import annotations

import textwrap
import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.pack.sources import SOURCE_CLASSES, ArchiveSource, FolderSource
from bundler.recipe.load import SOURCE_KINDS, SourceSpec
from tests.harness.packing import run_cli

# A recipe whose source lists no contents: only its component says what it takes.
RECIPE = textwrap.dedent('''\
    name = "demo"
    platform = "win-amd64"

    [versions]
    cudnn = "8.0.3.33"
    cuda = "10.1"

    [sources.lib]
    kind = "{kind}"

    [components.core]
    files = ["lib:bin/demo64_1.dll"]
    ''')


def _archive_without_the_member(tmp_path: Path) -> Path:
    path = tmp_path / "lib.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("bin/other.dll", b"MZ")
    return path


def _folder_without_the_member(tmp_path: Path) -> Path:
    (tmp_path / "lib" / "bin").mkdir(parents=True)
    (tmp_path / "lib" / "bin" / "other.dll").write_bytes(b"MZ")
    return tmp_path / "lib"


@pytest.mark.parametrize("kind, make", [("archive", _archive_without_the_member),
                                        ("folder", _folder_without_the_member)])
def test_pack_names_a_taken_member_the_source_lacks(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, make) -> None:
    (tmp_path / "demo.toml").write_text(RECIPE.format(kind=kind))
    (tmp_path / "app").mkdir()
    source = make(tmp_path)
    spec = tmp_path / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\n[runtime]\nrecipe = "demo.toml"\n'
                    f'[sources]\nlib = "{source.name}"\n')
    code, _out, err = run_cli(capsys, "pack", spec)
    assert code == 2
    assert f"bundler: error: {source}: source 'lib' (from app.spec) lacks 1 expected " \
           "file(s): bin/demo64_1.dll" in err
    assert "Traceback" not in err
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize("make, source_class", [(_archive_without_the_member, ArchiveSource),
                                                (_folder_without_the_member, FolderSource)])
def test_listed_contents_and_taken_members_are_both_checked(
        tmp_path: Path, make, source_class: type[ArchiveSource] | type[FolderSource]) -> None:
    location = make(tmp_path)
    spec = SourceSpec(id="lib", kind="folder", contents=("bin/other.dll",))
    source_class(spec, location, "test", takes={"bin/other.dll"}).close()
    with pytest.raises(SourceError, match=r"lacks 2 expected file\(s\): bin/listed.dll, "
                                          r"bin/taken.dll"):
        source_class(SourceSpec(id="lib", kind="folder", contents=("bin/listed.dll",)),
                     location, "test", takes={"bin/taken.dll", "bin/listed.dll"})


def test_every_kind_a_recipe_accepts_has_a_source_class() -> None:
    # open_sources relies on it: the recipe loader refuses any other kind.
    assert set(SOURCE_CLASSES) == set(SOURCE_KINDS)
