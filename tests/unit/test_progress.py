"""bundler/support/progress.py: bars on a terminal, lines elsewhere, nothing when
silenced; the interval from $BUNDLER_PROGRESS_INTERVAL."""

from __future__ import annotations

import io
import re
import time

import pytest

from bundler.support import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Err:
    """What the code under test printed on stderr (pytest's capture: not a terminal)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys

    def getvalue(self) -> str:
        return self._capsys.readouterr().err


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> _Err:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUNDLER_NO_PROGRESS", raising=False)
    monkeypatch.setenv(progress.INTERVAL_VARIABLE, "0.01")
    return _Err(capsys)


def test_off_a_terminal_a_line_every_interval_and_one_when_done(
        stderr: _Err) -> None:
    with progress.byte_progress(4 << 30, "zipping app") as bar:
        assert isinstance(bar, progress.ProgressLines)
        bar.update(1 << 30)
        time.sleep(0.1)
    lines = stderr.getvalue().splitlines()
    assert len(lines) >= 3, lines
    assert "bundler: zipping app: 1.0 GiB of 4.0 GiB (25%), 0 s" in lines
    assert all(re.fullmatch(r"bundler: zipping app: [\d.]+ (B|GiB) of 4.0 GiB "
                            r"\((0|25)%\), 0 s", line) for line in lines[:-1]), lines
    assert lines[-1] == "bundler: zipping app: done, 1.0 GiB in 0 s"


def test_counted_and_timed_only(stderr: _Err) -> None:
    with progress.line_progress("PyInstaller building app") as bar:
        bar.update(7)
        time.sleep(0.05)
    with progress.activity("fetching nvidia-cudnn-cu11==8.9.4.25"):
        time.sleep(0.05)
    text = stderr.getvalue()
    assert "bundler: PyInstaller building app: 7 lines, 0 s\n" in text
    assert "bundler: fetching nvidia-cudnn-cu11==8.9.4.25: running, 0 s\n" in text
    assert text.endswith("bundler: fetching nvidia-cudnn-cu11==8.9.4.25: done in 0 s\n")


def test_a_short_step_prints_nothing(stderr: _Err,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress.INTERVAL_VARIABLE, "60")
    with progress.byte_progress(10, "hashing x") as bar:
        bar.update(10)
    assert stderr.getvalue() == ""


def test_silenced_or_switched_off_prints_nothing(stderr: _Err,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with progress.silenced(), progress.byte_progress(10, "zipping app") as bar:
        time.sleep(0.05)
        bar.update(10)
    monkeypatch.setenv("BUNDLER_NO_PROGRESS", "1")
    with progress.activity("fetching x"):
        time.sleep(0.05)
    assert stderr.getvalue() == ""


def test_on_a_terminal_a_bar_and_in_ci_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stderr", _Terminal())
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUNDLER_NO_PROGRESS", raising=False)
    with progress.byte_progress(10, "zipping app") as bar:
        assert not isinstance(bar, progress.ProgressLines)
    monkeypatch.setenv("CI", "true")   # a CI runner's pseudo-terminal: lines, no bar
    with progress.byte_progress(10, "zipping app") as bar:
        assert isinstance(bar, progress.ProgressLines)


@pytest.mark.parametrize(("value", "seconds"), [("2.5", 2.5), ("0", 5.0), ("-1", 5.0),
                                                 ("soon", 5.0), ("inf", 5.0), ("", 5.0)])
def test_the_interval(monkeypatch: pytest.MonkeyPatch, value: str, seconds: float) -> None:
    monkeypatch.setenv(progress.INTERVAL_VARIABLE, value)
    assert progress.interval() == seconds


def test_sizes_and_durations() -> None:
    assert progress._size(512) == "512 B"
    assert progress._size(3 << 20) == "3.0 MiB"
    assert re.fullmatch(r"1 min 5 s", progress._duration(65.2))
