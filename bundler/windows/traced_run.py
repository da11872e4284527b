"""Run a Windows command under the debugger (bundler/windows/process_trace.py): on Windows
with the Python running bundler, on another OS under Wine (`wine X.exe ...`) with a
Windows Python: the command's own when it starts python*.exe, else the one given (an
embedded-python bundle's python/python.exe). It reads the trace the debugger writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bundler.platforms.process_trace import MappedObject, Trace, tail

__all__ = ["trace_windows_command"]

_DEBUGGER = Path(__file__).with_name("process_trace.py")
_GRACE = 60.0   # how long past the timeout the host waits for the debugger itself
_WINE = ("wine", "wine64")


def _wine_path(path: str) -> str:
    """/work/app -> Z:\\work\\app (Wine maps the Linux root to drive Z:)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def _host_path(path: str) -> str:
    """Z:\\work\\app -> /work/app; "" for a path on another drive."""
    return path[2:].replace("\\", "/") if path[:2].upper() == "Z:" else ""


def _is_python(word: str) -> bool:
    name = word.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.startswith("python") and name.endswith(".exe")


def trace_windows_command(command: Sequence[str], env: Mapping[str, str], cwd: str,
                          timeout: float, python: str = "") -> Trace:
    """Every DLL the command's processes load; `traced` False (and nothing run) where no
    debugger can run here."""
    if os.name == "nt":
        return _debugged([sys.executable], command, env, cwd, timeout, str, str)
    if not command or os.path.basename(command[0]) not in _WINE:
        return Trace(traced=False, why_not="a Windows program runs here only under Wine, "
                     "and the command does not start with wine")
    if len(command) > 1 and _is_python(command[1]):
        python = command[1]
    if not python:
        return Trace(traced=False, why_not="no Windows Python to run the debugger under "
                     "Wine (the command starts no python.exe and the bundle has none)")
    return _debugged([command[0], python], command[1:], env, cwd, timeout, _wine_path,
                     _host_path)


def _debugged(runner: list[str], command: Sequence[str], env: Mapping[str, str], cwd: str,
              timeout: float, convert: Callable[[str], str], back: Callable[[str], str]
              ) -> Trace:
    """`runner` (a Windows Python, or wine and one) runs the debugger; `convert` gives it
    a path of this machine, `back` turns its paths into this machine's ("" if none)."""
    with tempfile.TemporaryDirectory(prefix="bundler-trace-") as folder:
        out = os.path.join(folder, "trace.json")
        script = shutil.copy(_DEBUGGER, os.path.join(folder, "debugger.py"))
        full = [*runner, convert(script), convert(out), f"{timeout:g}", "--", *command]
        try:
            done = subprocess.run(full, env=dict(env), cwd=cwd, capture_output=True,
                                  timeout=timeout + _GRACE, check=False)
        except OSError as exc:
            return Trace(traced=False, why_not=f"{runner[0]!r} did not start ({exc})")
        except subprocess.TimeoutExpired:
            return Trace(traced=True, timed_out=True, problems=[
                f"the debugger did not end {_GRACE:g} s after the timeout"])
        sys.stderr.write(done.stdout.decode(errors="replace"))
        try:
            with open(out, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            lines = tail(done.stderr)
            return Trace(traced=True, exit_code=done.returncode, output=lines,
                         problems=["the Windows debugger wrote no trace: "
                                   f"{lines[-1] if lines else exc}"])
    objects = {identity: MappedObject(identity=identity, path=item["path"], deleted=False,
                                      sha256=item["sha256"],
                                      readable=back(item["path"]))
               for identity, item in data["objects"].items()}
    return Trace(traced=True, exit_code=data["exit_code"], timed_out=data["timed_out"],
                 killed=tuple(data["killed"]), objects=objects,
                 mappings={int(pid): ids for pid, ids in data["mappings"].items()},
                 problems=list(data["problems"]), output=tail(done.stderr))
