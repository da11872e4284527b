"""Run `verify --run`'s command under its platform's tracer, or untraced (said).

The bundle's platform traces its programs on this machine (`Platform.trace_command`):
ptrace for a Linux bundle on Linux, the Windows debug API for a Windows bundle on Windows
or under Wine (run by a Windows Python: the command's own, else the bundle's
python/python.exe). Where it cannot (ptrace refused, no Windows Python under Wine) the
command runs untraced in its own session, and verify judges only what each process's
bootstrap reported of itself; the check says so.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from bundler.platforms.process_trace import MappedObject, Trace, tail
from bundler.targets.registry import Platform

__all__ = ["from_reports", "run_command", "under_wine", "unix_path", "windows_path"]


def under_wine(command: list[str]) -> bool:
    return bool(command) and os.path.basename(command[0]) in ("wine", "wine64")


def windows_path(path: str) -> str:
    """/work/app -> Z:\\work\\app (Wine maps the Linux root to drive Z:)."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


def unix_path(path: str) -> str:
    """Z:\\work\\app -> /work/app; "" for a path on another drive."""
    return path[2:].replace("\\", "/") if path[:2].upper() == "Z:" else ""


def run_command(platform: Platform, command: list[str], env: Mapping[str, str], cwd: Path,
                timeout: float, python: Path | None) -> Trace:
    """Run `command` traced where its platform can trace it here; its Trace (`traced`
    says whether, `why_not` why not)."""
    trace = platform.trace_command(command, env, str(cwd), timeout,
                                   str(windows_path(str(python)) if python and
                                       under_wine(command) else python or ""))
    if trace.traced:
        return trace
    return _untraced(command, env, cwd, timeout, trace.why_not)


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
        killpg = getattr(os, "killpg", None)   # the session (POSIX); the child elsewhere
        try:
            killpg(child.pid, signal.SIGKILL) if killpg else child.kill()
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
                trace.objects[path] = MappedObject(identity=path, path=path, deleted=False,
                                                   readable=readable, sha256="")
            trace.mappings.setdefault(pid, []).append(path)
