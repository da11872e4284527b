"""Run `verify --run`'s command under the tracer this machine has, or untraced (said).

- Linux: ptrace (process_trace_linux.py), when the kernel permits it.
- Windows, or a Windows command under Wine on Linux (`wine X.exe ...`): the debug API
  (process_trace_windows.py), run by a Windows Python: the command's own when it starts
  python*.exe, else the bundle's (an embedded-python bundle's python/python.exe).
- Elsewhere, or without those: the command runs untraced, in its own session, and verify
  judges only what each process's bootstrap reported of itself; the check says so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from bundler.platforms.process_trace import MappedObject, Trace, tail

__all__ = ["run_command", "under_wine", "windows_path", "unix_path"]

_WINDOWS_TRACER = Path(__file__).parents[1] / "windows" / "process_trace.py"
_GRACE = 60.0   # how long past --timeout the host waits for a Windows tracer itself


def under_wine(command: list[str]) -> bool:
    return bool(command) and os.path.basename(command[0]) in ("wine", "wine64")


def windows_path(path: str) -> str:
    """/work/app -> Z:\\work\\app (Wine maps the Linux root to drive Z:)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def unix_path(path: str) -> str:
    """Z:\\work\\app -> /work/app; "" for a path on another drive."""
    return path[2:].replace("\\", "/") if path[:2].upper() == "Z:" else ""


def run_command(command: list[str], env: Mapping[str, str], cwd: Path, timeout: float,
                windows_python: Path | None) -> Trace:
    """Run `command` traced where this machine can; its Trace (`traced` says which)."""
    if sys.platform == "win32":
        return _windows_traced([sys.executable], command, env, cwd, timeout, wine=False)
    if under_wine(command):
        python = command[1] if len(command) > 1 and _is_python(command[1]) else (
            str(windows_python) if windows_python else "")
        if python:
            return _windows_traced([command[0], python], command[1:], env, cwd, timeout,
                                   wine=True)
        return _untraced(command, env, cwd, timeout, "no Windows Python to run the "
                         "debugger under Wine (the command starts no python.exe and the "
                         "bundle has none)")
    if sys.platform.startswith("linux"):
        from bundler.linux.process_trace import trace_command, tracing_unavailable
        why = tracing_unavailable()
        if not why:
            return trace_command(command, env, str(cwd), timeout)
        return _untraced(command, env, cwd, timeout, why)
    return _untraced(command, env, cwd, timeout, f"bundler cannot trace on {sys.platform}")


def _is_python(word: str) -> bool:
    name = word.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.startswith("python") and name.endswith(".exe")


def _windows_traced(runner: list[str], command: list[str], env: Mapping[str, str],
                    cwd: Path, timeout: float, wine: bool) -> Trace:
    """The debug-API tracer, run by a Windows Python (under Wine when `wine`)."""
    convert = windows_path if wine else str
    with tempfile.TemporaryDirectory(prefix="bundler-trace-") as folder:
        out = os.path.join(folder, "trace.json")
        script = shutil.copy(_WINDOWS_TRACER, os.path.join(folder, "tracer.py"))
        full = [*runner, convert(script), convert(out), f"{timeout:g}", "--", *command]
        try:
            done = subprocess.run(full, env=dict(env), cwd=cwd, capture_output=True,
                                  timeout=timeout + _GRACE, check=False,
                                  start_new_session=True)
        except OSError as exc:
            return Trace(traced=False, why_not=f"{runner[0]!r} did not start ({exc})",
                         problems=[f"the command {runner[0]!r} did not start ({exc})"])
        except subprocess.TimeoutExpired:
            return Trace(traced=True, timed_out=True, problems=[
                f"the debugger did not end {_GRACE:g} s after --timeout"])
        sys.stderr.write(done.stdout.decode(errors="replace"))
        try:
            with open(out, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as exc:
            lines = tail(done.stderr)
            return Trace(traced=False, why_not=f"the Windows debugger wrote no trace ({exc})",
                         exit_code=done.returncode, output=lines,
                         problems=[f"the Windows debugger failed: {lines[-1] if lines else exc}"])
    objects = {identity: MappedObject(
        identity=identity, path=item["path"], deleted=False, sha256=item["sha256"],
        readable=(unix_path(item["path"]) if wine else item["path"]))
        for identity, item in data["objects"].items()}
    return Trace(traced=True, exit_code=data["exit_code"], timed_out=data["timed_out"],
                 killed=tuple(data["killed"]), objects=objects,
                 mappings={int(pid): ids for pid, ids in data["mappings"].items()},
                 problems=list(data["problems"]), output=tail(done.stderr))


def _untraced(command: list[str], env: Mapping[str, str], cwd: Path, timeout: float,
              why: str) -> Trace:
    """The command in its own session; at the timeout the whole session is killed."""
    trace = Trace(traced=False, why_not=why)
    try:
        child = subprocess.Popen(command, env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
    except OSError as exc:
        trace.problems.append(f"the command {command[0]!r} did not start ({exc})")
        return trace
    try:
        out, err = child.communicate(timeout=timeout)
        trace.exit_code = child.returncode
    except subprocess.TimeoutExpired:
        trace.timed_out, trace.killed = True, (child.pid,)
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            child.kill()
        out, err = child.communicate()
    sys.stderr.write(out.decode(errors="replace"))
    trace.output = tail(err)
    return trace


def from_reports(trace: Trace, reports: list[dict]) -> None:
    """Untraced: each process's own list of what it maps, as objects to judge."""
    for report in reports:
        pid = int(report["pid"])
        for path in report["modules"]:
            readable = next((p for p in (path, unix_path(path)) if p and os.path.isfile(p)),
                            "")
            if path not in trace.objects:
                trace.objects[path] = MappedObject(
                    identity=path, path=path, deleted=False, readable=readable,
                    sha256="")   # hashed when judged
            trace.mappings.setdefault(pid, []).append(path)
