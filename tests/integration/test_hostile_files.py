"""Files bundler reads that no bundler wrote: values nested 100000 deep, a 5000-digit
number, a named pipe (FIFO) where a manifest, a lock or a lock file should be. Each is
refused in one line naming the file (exit 2) — never an internal error (exit 3), never a
hang — except in the runtime store, a cache, where a bad record is passed over."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import PROJECT_ROOT, Workspace, make_workspace, run_cli

DEEP_JSON = "[" * 100_000
LONG_NUMBER_JSON = '{"format": ' + "9" * 5000 + "}"
DEEP_TOML = "x = " + "[" * 100_000
LONG_NUMBER_TOML = "x = " + "9" * 5000
# A command that would block on a FIFO is stopped after this, and the test fails.
HANG_SECONDS = 60


@pytest.fixture()
def packed(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> Workspace:
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    code, _, err = run_cli(capsys, "pack", str(workspace.spec))
    assert code == 0, err
    return workspace


def refused_naming(capsys: pytest.CaptureFixture[str], path: Path, *args: object) -> str:
    code, _, err = run_cli(capsys, *map(str, args))
    assert code == 2, err
    assert err.startswith(f"bundler: error: {path}: ") and "\nhint: " in err, err
    assert "Traceback" not in err and "internal error" not in err
    return err


@pytest.mark.parametrize("text, says", [(DEEP_JSON, "nested too deeply"),
                                        (LONG_NUMBER_JSON, "more digits than Python reads")],
                         ids=["deep", "long-number"])
def test_a_manifest_beyond_the_parser_is_named_damaged(packed: Workspace, capsys,
                                                       text: str, says: str) -> None:
    manifest = packed.dist / "cudnn" / "manifest.json"
    manifest.write_text(text)
    err = refused_naming(capsys, manifest, "verify", packed.dist)
    assert "the manifest is damaged" in err and says in err


@pytest.mark.parametrize("text, says", [(DEEP_JSON, "nested too deeply"),
                                        (LONG_NUMBER_JSON, "more digits than Python reads")],
                         ids=["deep", "long-number"])
def test_a_lock_beyond_the_parser_is_named_damaged(packed: Workspace, capsys,
                                                   text: str, says: str) -> None:
    lock = packed.spec.with_name("app.spec.lock")
    lock.write_text(text)
    for command in (("verify", packed.dist, "--lock", lock), ("pack", packed.spec)):
        err = refused_naming(capsys, lock, *command)
        assert "not a valid lock file" in err and says in err


@pytest.mark.parametrize("text, says", [(DEEP_TOML, "nested too deeply"),
                                        (LONG_NUMBER_TOML, "more digits than Python reads")],
                         ids=["deep", "long-number"])
@pytest.mark.parametrize("what", ["spec", "recipe"])
def test_a_spec_or_recipe_beyond_the_parser_is_named(tmp_path: Path, capsys, what: str,
                                                     text: str, says: str) -> None:
    hostile = tmp_path / f"hostile.{what}"
    hostile.write_text(text)
    if what == "spec":
        err = refused_naming(capsys, hostile, "pack", hostile)
    else:
        err = refused_naming(capsys, hostile, "recipes", hostile)
    assert f"cannot read {what}: " in err and says in err


def test_store_records_beyond_the_parser_are_passed_over(packed: Workspace, capsys) -> None:
    """The store is a cache: a record no parser reads costs a cold read, not the pack."""
    store = Path(os.environ["BUNDLER_STORE"])
    records = [p for folder in ("sources", "locks", "signatures")
               for p in sorted((store / folder).glob("*"))]
    assert any(p.parent.name == "sources" for p in records)
    assert any(p.parent.name == "locks" for p in records)
    for number, record in enumerate(records):
        record.write_text(DEEP_JSON if number % 2 else LONG_NUMBER_JSON)
    shutil.rmtree(packed.dist)   # no earlier bundle to take files from: only the store
    code, out, err = run_cli(capsys, "pack", str(packed.spec))
    assert code == 0, err
    assert "read from the inputs" in out
    for command in (("cache",), ("cache", "prune")):
        code, _, err = run_cli(capsys, *command)
        assert code == 0, err


# --------------------------------------------------------------------- named pipes

def run_bounded(*args: object) -> subprocess.CompletedProcess[str]:
    """`python -m bundler ARGS` in a child that is killed if it blocks: a hang fails
    the test instead of stopping the suite."""
    path = os.pathsep.join(filter(None, (str(PROJECT_ROOT), os.environ.get("PYTHONPATH"))))
    try:
        return subprocess.run([sys.executable, "-m", "bundler", *map(str, args)],
                              env={**os.environ, "PYTHONPATH": path}, capture_output=True,
                              text=True, timeout=HANG_SECONDS, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"bundler {' '.join(map(str, args))} hung on a named pipe")


def make_fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def refused_fifo(fifo: Path, *args: object) -> str:
    done = run_bounded(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"bundler: error: {fifo}: not a regular file"), done.stderr
    assert "\nhint: " in done.stderr and "Traceback" not in done.stderr
    return done.stderr


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


@needs_fifo
def test_a_fifo_as_manifest_is_refused_not_waited_on(packed: Workspace) -> None:
    fifo = make_fifo(packed.dist / "cudnn" / "manifest.json")
    refused_fifo(fifo, "verify", packed.dist)
    refused_fifo(fifo, "doctor", packed.dist)


@needs_fifo
def test_a_fifo_as_lock_is_refused_not_waited_on(packed: Workspace) -> None:
    fifo = make_fifo(packed.spec.with_name("app.spec.lock"))
    refused_fifo(fifo, "verify", packed.dist, "--lock", fifo)
    refused_fifo(fifo, "pack", packed.spec)


@needs_fifo
@pytest.mark.parametrize("guarded", ["lock", "bundle"])
def test_a_fifo_as_a_pack_lock_file_is_refused_and_left(packed: Workspace,
                                                         guarded: str) -> None:
    target = packed.spec.with_name("app.spec.lock") if guarded == "lock" else packed.dist
    fifo = make_fifo(target.with_name(f".{target.name}.pack-lock"))
    assert "guards" in refused_fifo(fifo, "pack", packed.spec)
    assert fifo.exists()   # not bundler's to delete: the user is told to


@needs_fifo
def test_a_fifo_in_the_store_is_passed_over(packed: Workspace) -> None:
    store = Path(os.environ["BUNDLER_STORE"])
    for record in [*(store / "locks").glob("*"), *(store / "sources").glob("*")]:
        make_fifo(record)
    for command in (("cache",), ("cache", "prune"), ("pack", packed.spec)):
        done = run_bounded(*command)
        assert done.returncode == 0, done.stderr


@needs_fifo
def test_a_fifo_as_the_entry_script_fails_verify_without_waiting(packed: Workspace) -> None:
    make_fifo(packed.dist / "main.py")
    done = run_bounded("verify", packed.dist)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "link"])
def test_a_requirements_txt_init_does_not_read_is_said(tmp_path: Path, capsys, kind: str
                                                      ) -> None:
    """A requirements.txt that is a named pipe (never waited on) or a link is not read by
    init: it says so instead of writing the spec as if there were none."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("print('hi')\n")
    requirements = app / "requirements.txt"
    if kind == "fifo":
        os.mkfifo(requirements)
    else:
        (tmp_path / "real.txt").write_text("numpy==1.26.4\n")
        requirements.symlink_to(tmp_path / "real.txt")
    code, _, err = run_cli(capsys, "init", app, "--out", tmp_path / "app.spec")
    assert code == 0, err
    said = "a link" if kind == "link" else "not a regular file"
    assert f"warning: {requirements}: {said}, not read" in err, err
