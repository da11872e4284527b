"""Progress of long work (fetching, staging, hashing, zipping hundreds of MB).

On an interactive terminal, a bar (tqdm). Anywhere else (a CI log, a pipe, a file),
where a bar would be noise, a line on stderr every few seconds while a step runs:
what, how far, how long, as pip and cargo write in CI logs (`bundler: zipping app:
412 MiB of 1.7 GiB (24%), 20 s`), and one line when a step that printed any ends. A
step shorter than the interval prints nothing. The interval is $BUNDLER_PROGRESS_INTERVAL
seconds (default 5). None of either under --json (its stderr carries warnings only),
--quiet or $BUNDLER_NO_PROGRESS.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from types import TracebackType

from tqdm import tqdm

_SILENT = {"on": False}   # inside silenced(): a --json or --quiet run
INTERVAL_VARIABLE = "BUNDLER_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 5.0


def _shown() -> bool:
    return not os.environ.get("BUNDLER_NO_PROGRESS") and not _SILENT["on"]


def _wanted() -> bool:
    """A bar: a terminal, not CI, not switched off."""
    return sys.stderr.isatty() and not os.environ.get("CI") and _shown()


def _lines_wanted() -> bool:
    """Lines instead: progress shown, but not as a bar."""
    return _shown() and not _wanted()


@contextlib.contextmanager
def silenced(on: bool = True) -> Iterator[None]:
    """No progress while inside, when `on` (a --json run: its stderr carries warnings
    only, its stdout one document; a --quiet run)."""
    before = _SILENT["on"]
    _SILENT["on"] = before or on
    try:
        yield
    finally:
        _SILENT["on"] = before


def interactive() -> bool:
    """Whether long work should show a bar (a terminal, not CI, not switched off)."""
    return _wanted()


def interval() -> float:
    """Seconds between two progress lines ($BUNDLER_PROGRESS_INTERVAL; default 5; a
    value that is not a positive number is the default)."""
    try:
        seconds = float(os.environ.get(INTERVAL_VARIABLE, ""))
    except ValueError:
        return DEFAULT_INTERVAL
    return seconds if 0 < seconds < float("inf") else DEFAULT_INTERVAL


def _size(count: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GiB"   # not reached


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


class ProgressLines:
    """A bar's interface (update, a context) that prints a line every `interval()`
    seconds on stderr from a thread of its own, whether or not the work advanced (a
    step that stalls still shows it is alive). `total` 0: a step of unknown length,
    counted in `unit` (bytes: "B"; "": not counted, only timed)."""

    def __init__(self, description: str, total: int = 0, unit: str = "B") -> None:
        self._description = description
        self._total = total
        self._unit = unit
        self._done = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._start = time.monotonic()
        self._printed = False
        self._thread = threading.Thread(target=self._tick, daemon=True,
                                        name="progress-lines")

    def __enter__(self) -> ProgressLines:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        if self._printed and kind is None:
            took = _duration(time.monotonic() - self._start)
            self._say(f"done, {self._amount(self._done)} in {took}" if self._unit
                      else f"done in {took}")

    def update(self, count: int = 1) -> None:
        with self._lock:
            self._done += count

    def _amount(self, count: int) -> str:
        return _size(count) if self._unit == "B" else f"{count}{self._unit}"

    def line(self) -> str:
        """What the next line says: how far, how long."""
        with self._lock:
            done = self._done
        far = self._amount(done) if self._unit else "running"
        if self._total:
            far += f" of {self._amount(self._total)} ({100 * done // self._total}%)"
        return f"{far}, {_duration(time.monotonic() - self._start)}"

    def _say(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):   # a closed stderr: no lines
            print(f"bundler: {self._description}: {text}", file=sys.stderr, flush=True)

    def _tick(self) -> None:
        every = interval()
        while not self._stop.wait(every):
            self._say(self.line())
            self._printed = True


def byte_progress(total: int, description: str) -> tqdm | ProgressLines:
    if _lines_wanted():
        return ProgressLines(description, total)
    return tqdm(total=total, desc=description, unit="B", unit_scale=True,
                unit_divisor=1024, disable=not _wanted(), leave=False, file=sys.stderr)


def line_progress(description: str) -> tqdm | ProgressLines:
    """A running count for work of unknown length, e.g. lines of a child's log."""
    if _lines_wanted():
        return ProgressLines(description, unit=" lines")
    return tqdm(desc=description, unit=" lines", disable=not _wanted(), leave=False,
                file=sys.stderr)


def activity(description: str) -> contextlib.AbstractContextManager[object]:
    """Work whose progress cannot be counted (a child process: pip fetching a wheel):
    off a terminal, a line every few seconds that it still runs and for how long."""
    if _lines_wanted():
        return ProgressLines(description, unit="")
    return contextlib.nullcontext()
