"""Trace a command on Windows (or under Wine) with the debug API: every DLL any of its
processes loads.

Run as a script by a Windows Python — `python.exe process_trace.py OUT.json
TIMEOUT -- COMMAND ...` — it starts COMMAND with DEBUG_PROCESS, so every process the
command starts is debugged too, and waits for debug events: CREATE_PROCESS_DEBUG_EVENT
(the executable) and LOAD_DLL_DEBUG_EVENT (each DLL mapped, by LoadLibrary or the loader,
before the process runs a line of it; one unloaded later was seen), each file hashed
while the process waits, and EXIT_PROCESS_DEBUG_EVENT. At the timeout it terminates every
process it debugs. It writes OUT.json (bundler/windows/traced_run.py reads it).
The standard library only: it runs in whatever Windows Python starts it, not bundler's.

Not seen: code a process maps itself without the loader (a manual PE loader), and a
process started outside the tree (a service, a COM server spawned by the system).
"""

import ctypes
import hashlib
import json
import subprocess
import sys
import time
from ctypes import wintypes

_DEBUG_PROCESS = 0x1
_DBG_CONTINUE, _DBG_EXCEPTION_NOT_HANDLED = 0x00010002, 0x80010001
_EXCEPTION, _CREATE_PROCESS, _EXIT_PROCESS, _LOAD_DLL = 1, 3, 5, 6
_BREAKPOINTS = (0x80000003, 0x4000001F)   # the loader's first breakpoint (x64, WOW64)
_INFINITE_SLICE_MS = 200


class _CreateProcessInfo(ctypes.Structure):
    _fields_ = [("hFile", wintypes.HANDLE), ("hProcess", wintypes.HANDLE),
                ("hThread", wintypes.HANDLE), ("lpBaseOfImage", ctypes.c_void_p)]


class _LoadDllInfo(ctypes.Structure):
    _fields_ = [("hFile", wintypes.HANDLE), ("lpBaseOfDll", ctypes.c_void_p)]


class _ExceptionInfo(ctypes.Structure):
    _fields_ = [("ExceptionCode", wintypes.DWORD), ("ExceptionFlags", wintypes.DWORD)]


class _Info(ctypes.Union):
    _fields_ = [("create", _CreateProcessInfo), ("dll", _LoadDllInfo),
                ("exit_code", wintypes.DWORD), ("exception", _ExceptionInfo),
                ("space", ctypes.c_byte * 168)]


class _DebugEvent(ctypes.Structure):
    _fields_ = [("code", wintypes.DWORD), ("pid", wintypes.DWORD), ("tid", wintypes.DWORD),
                ("u", _Info)]


def _kernel32():
    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    kernel32.WaitForDebugEvent.argtypes = [ctypes.POINTER(_DebugEvent), wintypes.DWORD]
    kernel32.ContinueDebugEvent.argtypes = [wintypes.DWORD, wintypes.DWORD, wintypes.DWORD]
    kernel32.GetFinalPathNameByHandleW.argtypes = [wintypes.HANDLE, wintypes.LPWSTR,
                                                   wintypes.DWORD, wintypes.DWORD]
    kernel32.K32GetModuleFileNameExW.argtypes = [wintypes.HANDLE, ctypes.c_void_p,
                                                 wintypes.LPWSTR, wintypes.DWORD]
    kernel32.CloseHandle.argtypes = [wintypes.HANDLE]
    kernel32.TerminateProcess.argtypes = [wintypes.HANDLE, wintypes.UINT]
    return kernel32


def _path(kernel32, handle, process, base):
    """The file behind a debug event's handle (else the module at `base` of `process`)."""
    buffer = ctypes.create_unicode_buffer(32768)
    if handle and kernel32.GetFinalPathNameByHandleW(handle, buffer, 32768, 0):
        path = buffer.value
        return path[4:] if path.startswith("\\\\?\\") else path
    if process and base and kernel32.K32GetModuleFileNameExW(process, base, buffer, 32768):
        return buffer.value
    return ""


def _sha256(path):
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return ""
    return digest.hexdigest()


def trace(command, timeout):
    """{"traced", "exit_code", "timed_out", "killed", "objects", "mappings", "problems"}."""
    kernel32 = _kernel32()
    result = {"traced": True, "exit_code": None, "timed_out": False, "killed": [],
              "objects": {}, "mappings": {}, "problems": []}
    try:
        first = subprocess.Popen(command, creationflags=_DEBUG_PROCESS)
    except OSError as exc:
        result["problems"].append(f"the command {command[0]!r} did not start ({exc})")
        return result
    processes = {}   # pid -> its process handle (the debug event's)
    deadline = time.monotonic() + timeout
    event = _DebugEvent()
    started = False
    while processes or not started:
        if time.monotonic() > deadline and not result["timed_out"]:
            result["timed_out"] = True
            result["killed"] = sorted(processes)
            for handle in processes.values():
                kernel32.TerminateProcess(handle, 1)
            if not processes:
                first.kill()
        if not kernel32.WaitForDebugEvent(ctypes.byref(event), _INFINITE_SLICE_MS):
            if first.poll() is not None and not started:
                break   # it ended before any debug event
            continue
        started = True
        status = _DBG_CONTINUE
        pid = int(event.pid)
        if event.code == _CREATE_PROCESS:
            info = event.u.create
            processes[pid] = info.hProcess
            result["mappings"].setdefault(str(pid), [])
            _record(kernel32, result, pid, info.hFile, info.hProcess, info.lpBaseOfImage)
            if result["timed_out"]:
                kernel32.TerminateProcess(info.hProcess, 1)
        elif event.code == _LOAD_DLL:
            info = event.u.dll
            _record(kernel32, result, pid, info.hFile, processes.get(pid),
                    info.lpBaseOfDll)
        elif event.code == _EXIT_PROCESS:
            processes.pop(pid, None)
            if pid == first.pid and not result["timed_out"]:
                result["exit_code"] = int(event.u.exit_code)
        elif event.code == _EXCEPTION and event.u.exception.ExceptionCode not in _BREAKPOINTS:
            status = _DBG_EXCEPTION_NOT_HANDLED   # the process's own: its handlers decide
        kernel32.ContinueDebugEvent(event.pid, event.tid, status)
    return result


def _record(kernel32, result, pid, handle, process, base):
    path = _path(kernel32, handle, process, base)
    if handle:
        kernel32.CloseHandle(handle)
    if not path:
        result["problems"].append(f"process {pid}: a module at {base or 0:#x} has no file "
                                  "name")
        return
    identity = path.lower()
    if identity not in result["objects"]:
        result["objects"][identity] = {"path": path, "sha256": _sha256(path)}
    mappings = result["mappings"].setdefault(str(pid), [])
    if identity not in mappings:
        mappings.append(identity)


def main(argv):
    out, timeout, dashes, *command = argv
    if dashes != "--" or not command:
        print("usage: process_trace.py OUT.json TIMEOUT -- COMMAND ...",
              file=sys.stderr)
        return 2
    result = trace(command, float(timeout))
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
