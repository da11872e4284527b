"""What the kernel saw a command's processes map: the shape `Platform.trace_command` fills
and `bundler verify --run` judges (diagnose/process_check.py). Each platform traces its
own programs: ptrace on Linux (bundler/linux/process_trace.py), the Windows debug API on
Windows and under Wine (bundler/windows/process_trace.py, run by
bundler/windows/traced_run.py).

A tracer runs the command, follows every process it starts (forks, vforks, threads,
execs; a child leaving through os._exit included), and records each executable object a
process maps as the kernel names it: the file behind the mapping (deleted or renamed
since, unloaded later: it is recorded when mapped), its content sha256 read through the
process's own handle, and a path bundler can read it through afterwards. At the timeout
every process it saw is killed, not the direct child alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass, field

__all__ = ["MappedObject", "Trace", "sha256_of"]

TAIL = 8   # the app's last lines of stderr kept


@dataclass(frozen=True)
class MappedObject:
    """One file some process mapped as code."""

    identity: str    # two mappings of one file are one object ("dev:inode", or the DLL's path)
    path: str        # as the kernel named it when it was mapped
    deleted: bool    # unlinked while mapped, or by the time the command ended
    sha256: str      # its content ("": not hashed yet; the judge reads `readable`)
    readable: str    # where bundler reads it now (an fd it holds, a copy); "" if nowhere


@dataclass
class Trace:
    """A traced run. `mappings`: each process (pid) and the objects it had mapped, those
    it inherited from its parent at fork included, in the order mapped."""

    traced: bool                    # False: no tracer here, `why_not` says why
    why_not: str = ""
    exit_code: int | None = None    # the command's own; None: it did not start, or was killed
    timed_out: bool = False
    killed: tuple[int, ...] = ()    # the pids killed at the timeout
    objects: dict[str, MappedObject] = field(default_factory=dict)
    mappings: dict[int, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    output: tuple[str, ...] = ()    # the app's last lines on stderr
    held: list[int] = field(default_factory=list)   # fds to close when judged

    def close(self) -> None:
        for fd in self.held:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.held.clear()


def sha256_of(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tail(text: bytes) -> tuple[str, ...]:
    lines = text.decode(errors="replace").splitlines()
    return tuple(line for line in lines[-TAIL:] if line.strip())
