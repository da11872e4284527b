"""Progress outside a terminal (bundler/support/progress.py): with stderr a file, as in
a CI log, the long steps of a pack print a line every $BUNDLER_PROGRESS_INTERVAL
seconds (what, how far, how long); --quiet and --json print none. Real packs of the
stand-in runtime in a child process, its stderr redirected to a file."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import Workspace

ROOT = Path(__file__).resolve().parents[2]
# The zip step's lines: how far of how much, and for how long.
ZIPPING = re.compile(r"^bundler: zipping app: [\d.]+ (B|KiB|MiB|GiB) of [\d.]+ "
                     r"(B|KiB|MiB|GiB) \(\d+%\), \d+ s$", re.MULTILINE)
STEP_LINE = re.compile(r"^bundler: (zipping|staging|checking|hashing|fetching)",
                       re.MULTILINE)


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def stderr_in_a_file(workspace: Workspace, tmp_path: Path, *more: str,
                     seconds: str = "0.001") -> str:
    """A pack --zip (in full: --recheck) in a child whose stderr is a file; that file."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "BUNDLER_NO_PROGRESS")}
    env |= {"PYTHONPATH": str(ROOT), "BUNDLER_PROGRESS_INTERVAL": seconds}
    log = tmp_path / "stderr.log"
    with open(log, "w", encoding="utf-8") as stderr:
        done = subprocess.run([sys.executable, "-m", "bundler", "pack", str(workspace.spec),
                               "--zip", str(tmp_path / "app.zip"), "--recheck", *more],
                              env=env, stdout=subprocess.DEVNULL, stderr=stderr,
                              timeout=300, check=False)
    text = log.read_text(encoding="utf-8")
    assert done.returncode == 0, text
    return text


def test_a_pack_with_stderr_in_a_file_prints_progress_lines(
        workspace: Workspace, tmp_path: Path) -> None:
    """Lines, not a bar (no carriage returns), and a last one when the step is done."""
    text = stderr_in_a_file(workspace, tmp_path)
    assert ZIPPING.search(text), text
    assert re.search(r"^bundler: zipping app: done, [\d.]+ (B|KiB|MiB|GiB) in \d+ s$",
                     text, re.MULTILINE), text
    assert re.search(r"^bundler: staging runtime: ", text, re.MULTILINE), text
    assert "\r" not in text


def test_quiet_and_json_print_no_progress(workspace: Workspace, tmp_path: Path) -> None:
    for flag in ("--quiet", "-q", "--json"):
        text = stderr_in_a_file(workspace, tmp_path, flag)
        assert not STEP_LINE.search(text), (flag, text)


def test_a_step_shorter_than_the_interval_prints_no_line(
        workspace: Workspace, tmp_path: Path) -> None:
    """The default interval (5 s) is longer than any step of the stand-in's pack."""
    text = stderr_in_a_file(workspace, tmp_path, seconds="600")
    assert not STEP_LINE.search(text), text
