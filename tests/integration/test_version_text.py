"""Smaller findings of issue 42 (#25), each said as what it is.

Versions are text without line breaks or control characters: a framework's build-info
file saying `cuda_version = '10.1\\n\\x1b[31mRED'` was taken as CUDA 10.1, its escape
sequence printed on the user's terminal. Such a file is one that cannot be read, which
stops the pack (docs/releases.md), its value shown escaped. And `inspect` of what is no
file says what it is."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bundler.pack.app_scan import scan_app
from bundler.targets.registry import windows
from tests.harness.packing import run_cli
from tests.integration.test_framework_facts import CU12, PADDLE_VERSION, install, write_spec


@pytest.mark.parametrize("cuda", ["10.1\\n\\x1b[31mRED", "11.8\\r9", "11.8 \\u202e"])
def test_a_version_with_a_line_break_or_an_escape_is_no_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cuda: str) -> None:
    install(tmp_path / "app" / "site-packages", "paddlepaddle-gpu", "3.0.0",
            {"paddle/version/__init__.py": PADDLE_VERSION.replace("'11.8'", f"'{cuda}'")})
    (facts,) = scan_app(tmp_path / "app", platform=windows()).framework_facts
    assert "holds a line break, a space or a control character" in facts.unreadable
    assert facts.cuda == ""
    code, out, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12))
    assert code == 2 and "build-info file cannot be read" in err, err
    assert "\x1b" not in out + err and "\u202e" not in out + err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes as POSIX makes them")
@pytest.mark.parametrize("make, said", [
    (lambda tmp: (os.mkfifo(tmp / "fifo.dll"), tmp / "fifo.dll")[1],
     "a named pipe (FIFO), not a file: not read"),
    (lambda tmp: Path("/dev/null"), "a character device, not a file: not read"),
    (lambda tmp: ((tmp / "gone.dll").symlink_to(tmp / "nowhere"), tmp / "gone.dll")[1],
     "a link to nothing"),
    (lambda tmp: tmp / "absent.dll", "no such file or folder"),
], ids=["fifo", "device", "dangling-link", "absent"])
def test_inspect_says_what_is_there_when_it_is_no_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, said: str) -> None:
    """#25: `inspect` of a FIFO said "no such file or folder"."""
    path = make(tmp_path)
    code, _, err = run_cli(capsys, "inspect", path)
    assert code == 2 and f"{path}: {said}" in err, err
