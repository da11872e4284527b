"""No input ends in a traceback: each bad input named in one line (exit 2), an
unexpected exception reported as an internal error (exit 3), output that any console
encoding can print, and the smaller refusals of specs a user can write."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bundler import cli
from bundler.commands import cmd_recipes
from tests.harness.packing import Workspace, make_workspace, run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def workspace(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
              standin_framework: Path) -> Workspace:
    return make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": standin_zip, "cuda": standin_toolkit})


def edit(spec: Path, old: str, new: str) -> None:
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new))


def refused(capsys: pytest.CaptureFixture[str], *args: object) -> str:
    code, _, err = run_cli(capsys, *map(str, args))
    assert code == 2, err
    assert err.startswith("bundler: error: ") and "Traceback" not in err
    return err


@pytest.mark.parametrize("old, new", [
    ('path = "app"', 'path = "ap\\u0000p"'),
    ('entry = "main.py"', 'entry = "main\\u0000.py"'),
    ('[sources]\n', '[sources]\ncudnn_x = "a\\u0000b"\n'),
    ('recipe = "', 'recipe = "x\\u0000'),
], ids=["app-path", "entry", "source", "recipe"])
def test_a_nul_character_in_a_spec_path_is_named(workspace: Workspace, capsys, old: str,
                                                 new: str) -> None:
    edit(workspace.spec, old, new)
    assert "contains a NUL character" in refused(capsys, "pack", workspace.spec)


def test_a_nul_character_in_a_recipe_is_named(workspace: Workspace, capsys,
                                              tmp_path: Path) -> None:
    from bundler.recipe.load import shipped_recipe_dir
    recipe = (shipped_recipe_dir() / "cudnn-8.0.3.33-cuda10.1-win-x64.toml").read_text()
    (workspace.root / "r.toml").write_text(recipe.replace('name = "', 'name = "x\\u0000', 1))
    edit(workspace.spec, 'recipe = "cudnn-8.0.3.33-cuda10.1-win-x64"', 'recipe = "r.toml"')
    assert "contains a NUL character" in refused(capsys, "pack", workspace.spec)


@pytest.mark.parametrize("where", ["spec", "recipe"])
def test_an_endless_spec_or_recipe_is_refused(workspace: Workspace, capsys, where: str) -> None:
    if where == "spec":
        err = refused(capsys, "pack", "/dev/zero")
    else:
        edit(workspace.spec, 'recipe = "cudnn-8.0.3.33-cuda10.1-win-x64"',
             'recipe = "/dev/zero"')
        err = refused(capsys, "pack", workspace.spec)
    assert "/dev/zero: not a regular file" in err


def test_an_oversized_spec_is_refused_in_one_short_line(workspace: Workspace, capsys) -> None:
    edit(workspace.spec, 'name = "app"', f'name = "{"a" * (2 << 20)}"')
    err = refused(capsys, "pack", workspace.spec)
    assert "larger than 1024 KiB" in err and len(err) < 500


def test_a_long_app_name_is_refused_in_one_short_line(workspace: Workspace, capsys) -> None:
    edit(workspace.spec, 'name = "app"', f'name = "{"a" * 5000}"')
    err = refused(capsys, "pack", workspace.spec)
    assert "longer than 1024 characters" in err and len(err) < 500
    edit(workspace.spec, "a" * 5000, "a" * 65)
    assert "longer than 64 characters" in refused(capsys, "pack", workspace.spec)


def test_a_spec_with_a_byte_order_mark_packs(workspace: Workspace, capsys) -> None:
    workspace.spec.write_bytes(b"\xef\xbb\xbf" + workspace.spec.read_bytes())
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err


def test_a_runtime_dir_differing_from_an_app_folder_by_case_is_refused(
        workspace: Workspace, capsys) -> None:
    (workspace.root / "app" / "cudnn").mkdir()
    (workspace.root / "app" / "cudnn" / "mine.txt").write_text("the app's own")
    edit(workspace.spec, "[runtime]\n", '[runtime]\ndir = "CUDNN"\n')
    err = refused(capsys, "pack", workspace.spec)
    assert "already has 'cudnn'" in err and "case" in err


@pytest.mark.parametrize("old, new, named", [
    ("[runtime]\n", '[runtime]\ndir = "a/b/c"\n', "more than 2 folders deep"),
    ('entry = "main.py"', 'entry = "_cudnn_bootstrap.py"', "is the bootstrap bundler writes"),
], ids=["runtime-dir-too-deep", "entry-is-the-bootstrap"])
def test_specs_bundler_could_not_read_back_are_refused(workspace: Workspace, capsys, old: str,
                                                       new: str, named: str) -> None:
    edit(workspace.spec, old, new)
    assert named in refused(capsys, "pack", workspace.spec)


def test_a_two_deep_runtime_dir_is_read_back(workspace: Workspace, capsys) -> None:
    edit(workspace.spec, "[runtime]\n", '[runtime]\ndir = "lib/cudnn"\n')
    assert run_cli(capsys, "pack", workspace.spec)[0] == 0
    assert run_cli(capsys, "verify", workspace.dist)[0] == 0


def test_a_manifest_that_is_not_json_is_named_damaged_and_packed_over(
        workspace: Workspace, capsys) -> None:
    assert run_cli(capsys, "pack", workspace.spec)[0] == 0
    (workspace.dist / "cudnn" / "manifest.json").write_text("{not json")
    err = refused(capsys, "verify", workspace.dist)
    assert "the manifest is damaged: not valid JSON" in err
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err


def test_stdout_that_cannot_encode_a_path_does_not_crash(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path
        ) -> None:
    """A Windows redirect (cp1252) and a path outside it: pack succeeds, says so."""
    workspace = make_workspace(tmp_path / "日本", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    done = subprocess.run([sys.executable, "-m", "bundler", "pack", workspace.spec],
                          capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT),
                               "PYTHONIOENCODING": "cp1252"})
    assert done.returncode == 0, done.stderr
    assert b"\\u65e5\\u672c" in done.stdout and b"Traceback" not in done.stderr


def test_an_unexpected_exception_is_an_internal_error_exit_3(
        monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def bug(_args: object) -> int:  # stands in for a bug: there is no real one to use
        raise KeyError("oops")
    monkeypatch.setattr(cmd_recipes, "run", bug)
    code, _, err = run_cli(capsys, "recipes")
    assert code == 3
    assert err.startswith("bundler: internal error: KeyError") and "Traceback" not in err
    assert "please report it" in err


def test_running_out_of_memory_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    def exhausted(_args: object) -> int:
        raise MemoryError
    monkeypatch.setattr(cmd_recipes, "run", exhausted)
    assert "ran out of memory" in refused(capsys, "recipes")


def test_a_full_disk_says_so() -> None:
    error = cli._file_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/x/lock"))
    assert "disk is full" in error.message and "free some space" in error.hint
