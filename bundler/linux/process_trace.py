"""Trace a command on Linux with ptrace: every file any of its processes maps as code.

The command starts with PTRACE_TRACEME and a seccomp filter (inherited by every process
it starts, across fork and exec) that stops it at each mmap(2) of a file with PROT_EXEC:
how ld.so (glibc's and musl's) maps a library's code, whether by dlopen, LD_PRELOAD or
NEEDED. At that stop, before the call runs, the file is the one behind
/proc/TID/fd/FD: bundler stats it, opens it (an open fd keeps a file readable that is
deleted or renamed later) and reads its name as the kernel gives it. Nothing else stops
the process, so tracing costs one stop per library mapped (docs/diagnosing.md has the
figures). PTRACE_O_TRACEFORK/VFORK/CLONE follow every child and thread, and
PTRACE_O_EXITKILL kills them all if bundler dies.

Not seen: code mapped without PROT_EXEC then made executable with mprotect (no loader
bundler knows does that for a library), code written into anonymous memory, and
processes of another word size (a 32-bit process's mmap2 is not filtered: said).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform as host
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from bundler.platforms.process_trace import MappedObject, Trace, tail

__all__ = ["trace_command", "tracing_unavailable"]

_PTRACE_TRACEME, _PTRACE_CONT, _PTRACE_SETOPTIONS, _PTRACE_GETEVENTMSG = 0, 7, 0x4200, 0x4201
_PTRACE_GET_SYSCALL_INFO = 0x420E
_O_TRACESYSGOOD, _O_TRACEFORK, _O_TRACEVFORK, _O_TRACECLONE = 1, 2, 4, 8
_O_TRACEEXEC, _O_TRACESECCOMP, _O_EXITKILL = 0x10, 0x80, 0x100000
_EVENT_FORK, _EVENT_VFORK, _EVENT_CLONE, _EVENT_EXEC, _EVENT_SECCOMP = 1, 2, 3, 4, 7
_WALL = 0x40000000
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_ALLOW, _RET_TRACE = 0x7FFF0000, 0x7FF00000
_PROT_EXEC, _MAP_ANONYMOUS = 4, 0x20
# The machine -> (its AUDIT_ARCH, mmap's syscall number).
_ARCHES = {"x86_64": (0xC000003E, 9), "aarch64": (0xC00000B7, 222)}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _filter(arch: int, mmap: int) -> list[tuple[int, int, int, int]]:
    """Stop (RET_TRACE) at mmap(addr, len, prot & PROT_EXEC, flags without MAP_ANONYMOUS,
    fd != -1); let every other call run. seccomp_data: nr at 0, arch at 4, args at 16."""
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06
    return [(ld, 0, 0, 4), (jeq, 0, 8, arch),          # another arch: allow
            (ld, 0, 0, 0), (jeq, 0, 6, mmap),
            (ld, 0, 0, 16 + 2 * 8), (jset, 0, 4, _PROT_EXEC),
            (ld, 0, 0, 16 + 3 * 8), (jset, 2, 0, _MAP_ANONYMOUS),
            (ld, 0, 0, 16 + 4 * 8), (jeq, 0, 1, 0xFFFFFFFF),
            (ret, 0, 0, _RET_ALLOW), (ret, 0, 0, _RET_TRACE)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    return libc


def _program() -> _SockFprog:
    arch, mmap = _ARCHES[host.machine()]
    rules = _filter(arch, mmap)
    program = (_SockFilter * len(rules))(*[_SockFilter(*rule) for rule in rules])
    return _SockFprog(len(rules), program)


def _traced_from_here(libc: ctypes.CDLL, fprog: _SockFprog) -> str:
    """In a child, before exec: ask to be traced and install the filter ("" or what
    failed). Async-signal-safe calls only (ctypes to libc, no allocation to speak of)."""
    if libc.ptrace(_PTRACE_TRACEME, 0, None, None) != 0:
        return "ptrace"
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0):
        return "seccomp"
    return ""


def tracing_unavailable() -> str:
    """Why this machine cannot trace ("" if it can): not Linux, a kernel before 5.3
    (PTRACE_GET_SYSCALL_INFO), an architecture bundler has no filter for, or ptrace or
    the seccomp filter refused (a container's seccomp profile, Yama's ptrace_scope 3)."""
    if not sys.platform.startswith("linux"):
        return "ptrace traces Linux programs on Linux only"
    if host.machine() not in _ARCHES:
        return f"bundler has no syscall filter for {host.machine()}"
    release = tuple(int(part) for part in re.findall(r"\d+", os.uname().release)[:2])
    if release < (5, 3):
        return f"Linux {os.uname().release} is older than 5.3 (PTRACE_GET_SYSCALL_INFO)"
    libc, fprog = _libc(), _program()
    pid = os.fork()
    if pid == 0:   # the child tries what a traced command's child does, and says how it went
        os._exit({"": 0, "ptrace": 1}.get(_traced_from_here(libc, fprog), 2))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == 1:
        return "ptrace is not permitted here (a container's seccomp profile, or Yama's " \
               "ptrace_scope 3)"
    if code != 0:
        return "a seccomp filter cannot be installed here (a container's profile)"
    return ""


def trace_command(command: Sequence[str], env: Mapping[str, str], cwd: str,
                  timeout: float) -> Trace:
    """Run `command` traced; every process's mapped code, its exit status and output.
    Where ptrace is unavailable nothing runs: `traced` False and `why_not` why."""
    why = tracing_unavailable()
    if why:
        return Trace(traced=False, why_not=why)
    libc, fprog = _libc(), _program()

    limits = _hold_more_files()

    def in_the_child() -> None:   # after fork, before exec
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)   # the command's own limit
        failed = _traced_from_here(libc, fprog)
        if failed:
            raise OSError(ctypes.get_errno(), failed)

    trace = Trace(traced=True)
    try:
        child = subprocess.Popen(list(command), env=dict(env), cwd=cwd,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, preexec_fn=in_the_child)
    except (OSError, subprocess.SubprocessError) as exc:
        trace.problems.append(f"the command {command[0]!r} did not start ({exc})")
        return trace
    out, err = bytearray(), bytearray()
    readers = [threading.Thread(target=_drain, args=(pipe, into), daemon=True)
               for pipe, into in ((child.stdout, out), (child.stderr, err))]
    for reader in readers:
        reader.start()
    _Tracer(libc, trace, child.pid, timeout).run()
    _mark_deleted(trace)
    child.returncode = trace.exit_code if trace.exit_code is not None else -9  # reaped here
    for reader in readers:
        reader.join(5)
    os.write(2, bytes(out))   # the app's stdout goes to stderr: --json stays whole
    trace.output = tail(bytes(err))
    return trace


def _hold_more_files() -> tuple[int, int]:
    """Let bundler hold an fd to each file the command maps (an app maps hundreds, a
    process tree more): the soft limit of open files raised towards 65536, within the
    hard limit. Returns the limits as they were, for the command."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    return soft, hard


def _mark_deleted(trace: Trace) -> None:
    """A file deleted after it was mapped (the fd bundler holds counts no link left)."""
    for identity, obj in trace.objects.items():
        if not obj.deleted and os.stat(obj.readable).st_nlink == 0:
            trace.objects[identity] = replace(obj, deleted=True)


def _drain(pipe: object, into: bytearray) -> None:
    for block in iter(lambda: pipe.read1(65536), b""):  # type: ignore[attr-defined]
        into += block
    pipe.close()  # type: ignore[attr-defined]


class _Tracer:
    def __init__(self, libc: ctypes.CDLL, trace: Trace, first: int, timeout: float) -> None:
        self.libc, self.trace, self.first = libc, trace, first
        self.process: dict[int, int] = {first: first}   # each traced tid -> its process
        self.seen: set[int] = {first}
        self.attach_stop: set[int] = set()   # children whose first SIGSTOP is to come
        self.early: set[int] = set()         # children stopped before their parent's event
        self.started = False          # the first exec stop: options set
        self.deadline = time.monotonic() + timeout
        self.timeout = timeout
        self.by_file: dict[tuple[int, int], str] = {}    # (dev, ino) -> identity
        trace.mappings[first] = []
        self.lock = threading.Lock()
        self.timer = threading.Timer(timeout, self.kill_all)

    def kill_all(self) -> None:
        with self.lock:
            self.trace.timed_out = True
            pids = sorted(self.seen)
            self.trace.killed = tuple(sorted(set(self.process.values())))
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def ptrace(self, request: int, pid: int, addr: int = 0, data: int | object = 0) -> int:
        return int(self.libc.ptrace(request, pid, addr, data))

    def run(self) -> None:
        self.timer.start()
        try:
            while self.seen:
                try:
                    pid, status = os.waitpid(-1, _WALL)
                except ChildProcessError:
                    break
                self.step(pid, status)
        finally:
            self.timer.cancel()

    def step(self, pid: int, status: int) -> None:
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            with self.lock:
                self.seen.discard(pid)
            if pid == self.first and not self.trace.timed_out:
                self.trace.exit_code = os.waitstatus_to_exitcode(status)
            return
        if not os.WIFSTOPPED(status):
            return
        with self.lock:
            if pid not in self.seen:   # a new child's first stop, before its parent's event
                self.seen.add(pid)
                if self.trace.timed_out:
                    os.kill(pid, signal.SIGKILL)
        signal_number, event = os.WSTOPSIG(status), status >> 16
        deliver = 0
        if event == _EVENT_SECCOMP:
            self.mapped(pid)
        elif event in (_EVENT_FORK, _EVENT_VFORK, _EVENT_CLONE):
            self.started_child(pid, event)
        elif event == _EVENT_EXEC:
            tgid = self.process.get(pid, pid)
            self.trace.mappings[tgid] = []   # a new image: nothing of the old one is mapped
            self.check_word_size(tgid)
        elif pid == self.first and not self.started and signal_number == signal.SIGTRAP:
            self.started = True   # stopped at its exec: follow it from here
            self.ptrace(_PTRACE_SETOPTIONS, pid, 0, _O_TRACESYSGOOD | _O_TRACEFORK |
                        _O_TRACEVFORK | _O_TRACECLONE | _O_TRACEEXEC | _O_TRACESECCOMP |
                        _O_EXITKILL)
            self.check_word_size(pid)
        elif signal_number == signal.SIGSTOP and (pid in self.attach_stop or
                                                  pid not in self.process):
            # A new child's attach stop, before or after its parent's event: not a signal
            # of its own (handing it on would stop the child once more).
            if pid in self.process:
                self.attach_stop.discard(pid)
            else:
                self.early.add(pid)
        else:
            deliver = signal_number   # the process's own signal: hand it on
        self.ptrace(_PTRACE_CONT, pid, 0, deliver)

    def started_child(self, parent: int, event: int) -> None:
        message = ctypes.c_ulong()
        self.ptrace(_PTRACE_GETEVENTMSG, parent, 0, ctypes.addressof(message))
        child, tgid = message.value, self.process.get(parent, parent)
        with self.lock:
            self.seen.add(child)
            if self.trace.timed_out:
                os.kill(child, signal.SIGKILL)
        if child in self.early:
            self.early.discard(child)    # its attach stop came first, and is over
        else:
            self.attach_stop.add(child)  # it comes next
        if event == _EVENT_CLONE and _tgid(child) == tgid:
            self.process[child] = tgid    # a thread of the same process
            return
        self.process[child] = child       # a process: it starts with its parent's maps
        self.trace.mappings[child] = list(self.trace.mappings.get(tgid, []))

    def mapped(self, tid: int) -> None:
        """At the entry of mmap(..., PROT_EXEC, ..., fd, ...): the file behind fd."""
        info = (ctypes.c_uint64 * 11)()
        if self.ptrace(_PTRACE_GET_SYSCALL_INFO, tid, ctypes.sizeof(info),
                       ctypes.addressof(info)) <= 0:
            self.trace.problems.append(f"process {tid}: a mapping could not be read "
                                       f"(PTRACE_GET_SYSCALL_INFO: errno "
                                       f"{ctypes.get_errno()})")
            return
        # struct ptrace_syscall_info: op and arch, ip, sp, then nr and args[0..5]
        fd = info[8] & 0xFFFFFFFF   # args[4]
        handle = f"/proc/{tid}/fd/{fd}"
        tgid = self.process.get(tid, tid)
        try:
            identity = self.examine(handle)
        except OSError as exc:
            self.trace.problems.append(f"process {tgid}: a mapped file could not be read "
                                       f"({handle}: {exc.strerror})")
            return
        mappings = self.trace.mappings.setdefault(tgid, [])
        if identity not in mappings:
            mappings.append(identity)

    def examine(self, handle: str) -> str:
        """The object behind a tracee's fd: known by (dev, inode), else opened and kept."""
        facts = os.stat(handle)
        key = (facts.st_dev, facts.st_ino)
        if key in self.by_file:
            return self.by_file[key]
        name = os.readlink(handle)
        held = os.open(handle, os.O_RDONLY | os.O_CLOEXEC)
        deleted = os.fstat(held).st_nlink == 0
        if deleted and name.endswith(" (deleted)"):
            name = name[:-len(" (deleted)")]
        self.trace.held.append(held)
        identity = f"{facts.st_dev}:{facts.st_ino}"
        self.trace.objects[identity] = MappedObject(
            identity=identity, path=name, deleted=deleted,
            sha256="", readable=f"/proc/self/fd/{held}")   # hashed when judged
        self.by_file[key] = identity
        return identity

    def check_word_size(self, tgid: int) -> None:
        try:
            with open(f"/proc/{tgid}/exe", "rb") as exe:
                head = exe.read(5)
        except OSError:
            return
        if head[:4] == b"\x7fELF" and head[4:5] == b"\x01":
            self.trace.problems.append(f"process {tgid} is a 32-bit program: what it maps "
                                       "is not traced")


def _tgid(tid: int) -> int:
    try:
        with open(f"/proc/{tid}/status", encoding="utf-8") as status:
            for line in status:
                if line.startswith("Tgid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return tid
