"""What a bare-name load of a DLL (LoadLibrary("cudnn64_9.dll")) searches on Windows, for
doctor: the folders of windows.toml's dll_search_order (the application folder, System32,
System, the Windows folder, the current folder, then PATH in order), and the CUDA_PATH
bin folders apart, which no load searches but installers name. The first copy of a name
(compared without regard to case) wins; every later one is shadowed."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

from bundler.platforms.api import FoundLibrary, SearchFolder
from bundler.windows.facts import windows_facts


def system_folders() -> dict[str, str]:
    """System32, System and the Windows folder as the loader sees them (not from
    %SystemRoot%); empty where this process has no kernel32 (not Windows)."""
    try:
        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return {}
    folders = {}
    for key, function in (("system32", kernel32.GetSystemDirectoryW),
                          ("windows", kernel32.GetWindowsDirectoryW)):
        buffer = ctypes.create_unicode_buffer(32768)
        function(buffer, len(buffer))
        folders[key] = buffer.value
    folders["system16"] = os.path.join(folders["windows"], "System")
    return folders


def search_folders(environ: Mapping[str, str], application: str,
                   system: Mapping[str, str] | None = None,
                   current: str | None = None) -> list[SearchFolder]:
    """The bare-name search order (windows.toml), then the CUDA_PATH bin folders.

    `system` maps "system32"/"system16"/"windows" to folders (queried on Windows).
    A folder reached twice is listed once, under its first label plus the others.
    """
    if system is None:
        system = system_folders()
    facts = windows_facts()
    named = {"application": ("application folder", application),
             "current": ("current folder", current if current is not None else os.getcwd()),
             "system32": ("System32", system.get("system32", "")),
             "system16": ("System", system.get("system16", "")),
             "windows": ("Windows folder", system.get("windows", ""))}
    ordered: list[tuple[str, str, bool]] = []
    for step in facts.dll_search_order:
        if step == "path":
            ordered += [(f"PATH[{i}]", entry, True) for i, entry in enumerate(
                _path_entries(environ.get("PATH", "")), start=1)]
        elif named[step][1]:
            ordered.append((*named[step], True))
    ordered += [(variable, os.path.join(environ[variable], "bin"), False)
                for variable in sorted(environ, key=_cuda_path_order)
                if facts.is_cuda_path_variable(variable) and environ[variable]]
    return _merge(ordered)


def bare_name_search(patterns: Iterable[str], path: str) -> list[FoundLibrary]:
    """Every copy of a DLL whose name matches one of `patterns` (without regard to case)
    in the folders a bare-name load searches, in order, each marked picked or shadowed;
    `path`, the PATH a process of this Python would search."""
    patterns = tuple(p.lower() for p in patterns)
    folders = [f for f in search_folders({"PATH": path}, os.path.dirname(sys.executable))
               if f.searched]
    picked: set[str] = set()
    found = []
    for folder in folders:
        for name in _listing(folder.path):
            if any(fnmatchcase(name.lower(), p) for p in patterns):
                found.append(FoundLibrary(name, os.path.join(folder.path, name), folder.label,
                                          "shadowed" if name.lower() in picked else "picked"))
                picked.add(name.lower())
    return found


def _listing(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted((e.name for e in entries if e.is_file()), key=str.lower)
    except OSError:
        return []   # a PATH entry that does not exist is common and harmless


def _path_entries(value: str) -> list[str]:
    # Windows accepts quoted entries ("C:\\Program Files\\x") and empty ones.
    return [entry.strip().strip('"') for entry in value.split(os.pathsep) if entry.strip()]


def _cuda_path_order(variable: str) -> tuple[int, str]:
    return (0 if variable.upper() == "CUDA_PATH" else 1, variable.upper())


def _merge(ordered: list[tuple[str, str, bool]]) -> list[SearchFolder]:
    seen: dict[str, int] = {}
    merged: list[SearchFolder] = []
    for label, path, searched in ordered:
        key = os.path.normcase(os.path.abspath(path))
        if key in seen:
            first = merged[seen[key]]
            merged[seen[key]] = SearchFolder(first.path, f"{first.label}, {label}",
                                             first.searched, first.order)
            continue
        seen[key] = len(merged)
        order = sum(f.searched for f in merged) + 1 if searched else 0
        merged.append(SearchFolder(path, label, searched, order))
    return merged
