"""A file's stamp: what tells, without reading it, that a file is the one seen before.

Size, modification time, change time, file id and device. The change time is the one
that matters against a careful edit: every write sets it and no user call sets it back
(`touch -r`, `os.utime` restore only the modification time). The store's input records
(pack/sources/archive_source.py, folder_source.py) and the up-to-date records
(pack/up_to_date.py) all compare these.

On Windows Python's `st_ctime` is the file's *creation* time, which a write leaves as it
is, and `os.scandir` entries carry no file id; so there the change time (NTFS's
ChangeTime) and the file id come from the file itself, through a handle opened for its
attributes only (`_windows_stamp`).
"""

from __future__ import annotations

import os
import sys

Stamp = tuple[int, int, int, int, int]   # size, mtime (ns), ctime (ns), file id, device


def stamp(path: str | os.PathLike[str], *, follow_links: bool = True) -> Stamp:
    """The stamp of the file (or folder) at `path`; of a link itself where not
    `follow_links`. OSError if there is none."""
    return _stamp(os.fspath(path), follow_links)


def _posix_stamp(path: str, follow_links: bool) -> Stamp:
    facts = os.stat(path, follow_symlinks=follow_links)
    return facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns, facts.st_ino, facts.st_dev


_stamp = _posix_stamp

if sys.platform == "win32":  # pragma: no cover - under Wine: tests/wine/test_file_stamps_wine.py
    import ctypes
    from ctypes import wintypes

    _READ_ATTRIBUTES = 0x80
    _SHARE_ALL = 0x1 | 0x2 | 0x4            # read, write, delete: never in anyone's way
    _OPEN_EXISTING = 3
    _BACKUP_SEMANTICS = 0x02000000          # needed to open a folder
    _OPEN_REPARSE_POINT = 0x00200000        # the link itself, as lstat
    _FILE_BASIC_INFO = 0                    # FILE_INFO_BY_HANDLE_CLASS
    _INVALID_HANDLE = wintypes.HANDLE(-1).value
    _EPOCH = 116444736000000000             # 1601 to 1970 in 100 ns ticks

    class _BasicInfo(ctypes.Structure):
        _fields_ = [("creation", ctypes.c_int64), ("access", ctypes.c_int64),
                    ("write", ctypes.c_int64), ("change", ctypes.c_int64),
                    ("attributes", wintypes.DWORD)]

    class _HandleInfo(ctypes.Structure):   # BY_HANDLE_FILE_INFORMATION
        _fields_ = [("attributes", wintypes.DWORD), ("creation", wintypes.FILETIME),
                    ("access", wintypes.FILETIME), ("write", wintypes.FILETIME),
                    ("volume", wintypes.DWORD), ("size_high", wintypes.DWORD),
                    ("size_low", wintypes.DWORD), ("links", wintypes.DWORD),
                    ("index_high", wintypes.DWORD), ("index_low", wintypes.DWORD)]

    _kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
    _kernel32.CreateFileW.restype = wintypes.HANDLE
    _kernel32.CreateFileW.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD,
                                      wintypes.LPVOID, wintypes.DWORD, wintypes.DWORD,
                                      wintypes.HANDLE]
    _kernel32.GetFileInformationByHandleEx.argtypes = [wintypes.HANDLE, ctypes.c_int,
                                                       wintypes.LPVOID, wintypes.DWORD]
    _kernel32.GetFileInformationByHandle.argtypes = [wintypes.HANDLE, wintypes.LPVOID]
    _kernel32.CloseHandle.argtypes = [wintypes.HANDLE]

    def _windows_stamp(path: str, follow_links: bool) -> Stamp:
        """One handle, two questions: the file's id, volume and size, and its basic
        times, ChangeTime among them. Where a file system keeps no change time (FAT may
        report 0) the creation time stands in, as Python's st_ctime would."""
        full = os.path.abspath(path)
        if len(full) >= 260 and not full.startswith("\\\\"):
            full = "\\\\?\\" + full   # past MAX_PATH: the long form, as os.stat does
        flags = _BACKUP_SEMANTICS | (0 if follow_links else _OPEN_REPARSE_POINT)
        handle = _kernel32.CreateFileW(full, _READ_ATTRIBUTES, _SHARE_ALL, None,
                                       _OPEN_EXISTING, flags, None)
        if handle == _INVALID_HANDLE:
            raise _error(path)
        try:
            basic, ids = _BasicInfo(), _HandleInfo()
            if not _kernel32.GetFileInformationByHandleEx(
                    handle, _FILE_BASIC_INFO, ctypes.byref(basic), ctypes.sizeof(basic)) \
                    or not _kernel32.GetFileInformationByHandle(handle, ctypes.byref(ids)):
                raise _error(path)
        finally:
            _kernel32.CloseHandle(handle)
        change = basic.change or basic.creation
        return ((ids.size_high << 32) | ids.size_low, (basic.write - _EPOCH) * 100,
                (change - _EPOCH) * 100, (ids.index_high << 32) | ids.index_low, ids.volume)

    def _error(path: str) -> OSError:
        code = ctypes.get_last_error()
        return OSError(None, ctypes.FormatError(code), path, code)  # winerror sets errno

    _stamp = _windows_stamp
