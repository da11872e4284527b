"""A file's stamp: what tells, without reading it, that a file is the one seen before.

Size, modification time, change time, file id and device. The change time is the one
that matters against a careful edit: every write sets it and no user call sets it back
(`touch -r`, `os.utime` restore only the modification time). The store's input records
(pack/sources/archive_source.py, folder_source.py) and the up-to-date records
(pack/up_to_date.py) all compare these.

On Windows Python's `st_ctime` is the file's *creation* time, which a write leaves as it
is, and `os.scandir` entries carry no file id; so there the change time (NTFS's
ChangeTime) and the file id come from the file itself, through a handle opened for its
attributes only (`_windows_stamp`), and a folder's entries from one directory query that
gives every entry's times and id at once (`_windows_listing`): a handle per entry would
cost a system call or three each (under Wine ~0.7 ms, 3 s for the 4,000 entries of a
site-packages).
"""

from __future__ import annotations

import os
import sys
from typing import NamedTuple

Stamp = tuple[int, int, int, int, int]   # size, mtime (ns), ctime (ns), file id, device


class Entry(NamedTuple):
    name: str
    is_folder: bool       # a folder to enter: a link or junction to one is not
    stamp: Stamp | None   # None: gone between the listing and its stamp
    is_link: bool = False   # a symbolic link (or another reparse point on Windows)


def stamp(path: str | os.PathLike[str], *, follow_links: bool = True) -> Stamp:
    """The stamp of the file (or folder) at `path`; of a link itself where not
    `follow_links`. OSError if there is none."""
    return _stamp(os.fspath(path), follow_links)


def through_link(path: str | os.PathLike[str]) -> Stamp | None:
    """The stamp of what a link at `path` points to (links followed to the end); None
    where it points to nothing. What was read through a link is its target's bytes: an
    edit of the target changes this stamp, not the link's own."""
    try:
        return _stamp(os.fspath(path), True)
    except (FileNotFoundError, NotADirectoryError):
        return None


def listing(folder: str | os.PathLike[str]) -> list[Entry]:
    """The entries of `folder` with their stamps (of each entry itself, links not
    followed). OSError if the folder cannot be listed or an entry that is there cannot
    be stamped."""
    return _listing(os.fspath(folder))


def _posix_stamp(path: str, follow_links: bool) -> Stamp:
    facts = os.stat(path, follow_symlinks=follow_links)
    return facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns, facts.st_ino, facts.st_dev


def _posix_listing(folder: str) -> list[Entry]:
    with os.scandir(folder) as found:
        entries = list(found)
    listed = []
    for entry in entries:
        try:
            facts: Stamp | None = _posix_stamp(entry.path, False)
        except FileNotFoundError:
            facts = None
        listed.append(Entry(entry.name, entry.is_dir(follow_symlinks=False), facts,
                            entry.is_symlink()))
    return listed


_stamp, _listing = _posix_stamp, _posix_listing

if sys.platform == "win32":  # pragma: no cover - under Wine: tests/wine/test_file_stamps_wine.py
    import ctypes
    from ctypes import wintypes

    _READ_ATTRIBUTES = 0x80
    _SHARE_ALL = 0x1 | 0x2 | 0x4            # read, write, delete: never in anyone's way
    _OPEN_EXISTING = 3
    _BACKUP_SEMANTICS = 0x02000000          # needed to open a folder
    _OPEN_REPARSE_POINT = 0x00200000        # the link itself, as lstat
    _LIST_DIRECTORY = 0x1
    _FILE_BASIC_INFO = 0                    # FILE_INFO_BY_HANDLE_CLASS
    _ID_BOTH_DIRECTORY_INFO, _ID_BOTH_DIRECTORY_RESTART_INFO = 10, 11
    _NO_MORE_FILES = 18
    _DIRECTORY, _REPARSE_POINT = 0x10, 0x400   # file attributes
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

    class _DirectoryInfo(ctypes.Structure):   # FILE_ID_BOTH_DIR_INFO, the name after it
        _fields_ = [("next", wintypes.DWORD), ("index", wintypes.DWORD),
                    ("creation", ctypes.c_int64), ("access", ctypes.c_int64),
                    ("write", ctypes.c_int64), ("change", ctypes.c_int64),
                    ("size", ctypes.c_int64), ("allocation", ctypes.c_int64),
                    ("attributes", wintypes.DWORD), ("name_length", wintypes.DWORD),
                    ("ea_size", wintypes.DWORD), ("short_length", ctypes.c_byte),
                    ("short_name", wintypes.WCHAR * 12), ("file_id", ctypes.c_uint64),
                    ("name", wintypes.WCHAR * 1)]

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
        handle = _open(path, _READ_ATTRIBUTES, follow_links)
        try:
            basic, ids = _BasicInfo(), _HandleInfo()
            if not _kernel32.GetFileInformationByHandleEx(
                    handle, _FILE_BASIC_INFO, ctypes.byref(basic), ctypes.sizeof(basic)) \
                    or not _kernel32.GetFileInformationByHandle(handle, ctypes.byref(ids)):
                raise _error(path)
        finally:
            _kernel32.CloseHandle(handle)
        return _windows_times((ids.size_high << 32) | ids.size_low, basic.write,
                              basic.change or basic.creation,
                              (ids.index_high << 32) | ids.index_low, ids.volume)

    def _windows_listing(folder: str) -> list[Entry]:
        """One query per 64 KiB of entries, each with its times, size and file id (the
        same 64-bit id GetFileInformationByHandle gives); the volume is the folder's."""
        handle = _open(folder, _LIST_DIRECTORY, True)
        try:
            ids = _HandleInfo()
            if not _kernel32.GetFileInformationByHandle(handle, ctypes.byref(ids)):
                raise _error(folder)
            listed, buffer = [], ctypes.create_string_buffer(64 << 10)
            kind = _ID_BOTH_DIRECTORY_RESTART_INFO
            while _kernel32.GetFileInformationByHandleEx(handle, kind, buffer, len(buffer)):
                kind, offset = _ID_BOTH_DIRECTORY_INFO, 0
                while True:
                    info = _DirectoryInfo.from_buffer(buffer, offset)
                    name = ctypes.wstring_at(ctypes.addressof(buffer) + offset +
                                             _DirectoryInfo.name.offset, info.name_length // 2)
                    if name not in (".", ".."):
                        folder_only = info.attributes & (_DIRECTORY | _REPARSE_POINT)
                        listed.append(Entry(name, folder_only == _DIRECTORY, _windows_times(
                            info.size, info.write, info.change or info.creation,
                            info.file_id, ids.volume),
                            bool(info.attributes & _REPARSE_POINT)))
                    if not info.next:
                        break
                    offset += info.next
            if ctypes.get_last_error() != _NO_MORE_FILES:
                raise _error(folder)
            return listed
        finally:
            _kernel32.CloseHandle(handle)

    def _windows_times(size: int, write: int, change: int, file_id: int, volume: int
                       ) -> Stamp:
        """A stamp from Windows' 100 ns ticks since 1601."""
        return size, (write - _EPOCH) * 100, (change - _EPOCH) * 100, file_id, volume

    def _open(path: str, access: int, follow_links: bool) -> int:
        full = os.path.abspath(path)
        if len(full) >= 260 and not full.startswith("\\\\"):
            full = "\\\\?\\" + full   # past MAX_PATH: the long form, as os.stat does
        flags = _BACKUP_SEMANTICS | (0 if follow_links else _OPEN_REPARSE_POINT)
        handle: int = _kernel32.CreateFileW(full, access, _SHARE_ALL, None, _OPEN_EXISTING,
                                            flags, None)
        if handle == _INVALID_HANDLE:
            raise _error(path)
        return handle

    def _error(path: str) -> OSError:
        code = ctypes.get_last_error()
        return OSError(None, ctypes.FormatError(code), path, code)  # winerror sets errno

    _stamp, _listing = _windows_stamp, _windows_listing
