"""What a bare-name load of a library (dlopen("libcudnn.so.9")) finds on this Linux
machine, for doctor: glibc's dynamic loader searches the LD_LIBRARY_PATH folders in
order, then the ldconfig cache (/etc/ld.so.cache, listed by `ldconfig -p`), so the first
copy of a name wins and every later one is shadowed. (A library's own RUNPATH comes
between the two for the loads *it* makes; that is why the bootstrap loads by absolute
path — docs/bootstrap.md.)
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from collections.abc import Iterable

from bundler.platforms.api import FoundLibrary

# "	libcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9"
_CACHE_LINE = re.compile(r"^\s+(?P<name>\S+)\s+\((?P<tags>[^)]*)\)(?:\s+OS ABI:[^=]*)?"
                         r"\s+=>\s+(?P<path>\S.*)$")


def ldconfig_cache(text: str, word: str = "x86-64") -> list[tuple[str, str]]:
    """(name, path) of each `ldconfig -p` entry for 64-bit x86 (`word` in its tags), in
    the cache's order; 32-bit entries (libc6 without x86-64) are not what a 64-bit
    process loads."""
    found = []
    for line in text.splitlines():
        match = _CACHE_LINE.match(line)
        if match and word in match.group("tags").split(","):
            found.append((match.group("name"), match.group("path").strip()))
    return found


def read_ldconfig() -> str:
    """This machine's `ldconfig -p`; "" when there is no ldconfig (a bare container)."""
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None)
    if ldconfig is None:
        return ""
    done = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else ""


def bare_name_search(patterns: Iterable[str], ld_library_path: str,
                     ldconfig_text: str) -> list[FoundLibrary]:
    """Every copy of a library whose name matches one of `patterns`, in the order the
    loader tries them, each marked picked or shadowed."""
    patterns = tuple(patterns)
    candidates: list[tuple[str, str, str]] = []
    # An empty LD_LIBRARY_PATH entry is the current folder, as glibc reads it.
    for index, folder in enumerate(ld_library_path.split(":") if ld_library_path else [], 1):
        for name in _listing(folder or "."):
            if _matches(name, patterns):
                candidates.append((name, os.path.join(folder or ".", name),
                                   f"LD_LIBRARY_PATH[{index}]"))
    candidates += [(name, path, "ldconfig cache") for name, path in ldconfig_cache(ldconfig_text)
                   if _matches(name, patterns)]
    picked: set[str] = set()
    found = []
    for name, path, reached_as in candidates:
        found.append(FoundLibrary(name, path, reached_as,
                                  "shadowed" if name in picked else "picked"))
        picked.add(name)
    return found


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _listing(folder: str) -> list[str]:
    try:
        return sorted(entry.name for entry in os.scandir(folder)
                      if entry.is_file() or entry.is_symlink())
    except OSError:
        return []   # a folder on LD_LIBRARY_PATH that is not there: the loader skips it
