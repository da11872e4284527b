"""The platform seam: what bundler knows of an operating system, behind one interface.

A recipe names its platform (`platform = "win-amd64"`) and `platform_for()` gives the
`Platform` that knows it: how its libraries are named and compared, the reader of its
binaries, its system and driver libraries, its driver table, and how a library's
origin is verified. The shared layers (recipe, pack, diagnose) ask the Platform; only
an OS package (bundler/windows/) knows an OS, and the architecture test keeps it so.
Like cuda-pathfinder's `_dynamic_libs`: one typed descriptor per OS, one interface.

A new platform is a package beside bundler/windows/ that builds a `Platform`, one line
in `_known()`, and its recipes.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Protocol

from bundler.errors import RecipeError

__all__ = ["CHANGED", "OK", "UNSIGNED", "DriverTable", "FrameworkEntry", "LibraryFacts",
           "Platform", "SignatureCheck", "Trust", "all_platforms", "known_platforms",
           "platform_for", "platform_for_release", "platform_for_wheel_tag", "this_machine",
           "windows"]

# What a signer's trust pins and what a check found (Authenticode's on Windows), and
# what the binary reader tells of a library (machine, version, imports, exports).
from bundler.platforms.driver_table import CompatFacts as DriverTable
from bundler.platforms.driver_table import FrameworkEntry
from bundler.platforms.library_facts import LibraryFacts, OSFacts
from bundler.windows.authenticode import CHANGED, OK, UNSIGNED, SignatureCheck, Trust


@dataclass(frozen=True)
class FoundLibrary:
    """One copy of a library name a bare-name load could reach (doctor)."""

    name: str
    path: str
    reached_as: str   # "LD_LIBRARY_PATH[1]" or "ldconfig cache"
    role: str         # "picked" (the load gets it) or "shadowed" (an earlier copy wins)


class SignatureDigest(Protocol):
    """What a signature check compares, computed from a file's bytes as they stream."""

    def update(self, data: bytes) -> None: ...

    def digests(self) -> dict[str, bytes]: ...   # {} when the stream could not give one


@dataclass(frozen=True)
class Platform:
    """One operating system and architecture, as bundler's shared layers see it."""

    name: str                 # the recipe's `platform`: "win-amd64"
    os_name: str              # for messages: "Windows"
    wheel_tag: str            # PyPI's platform tag: "win_amd64"
    machine: str              # what the binary reader calls the architecture: "AMD64"
    bits: Mapping[str, int]   # each machine the reader names -> its word size
    library_names: str        # a regular expression a library's file name matches
    library_word: str         # what messages call one: "DLL"
    binary_suffixes: tuple[str, ...]   # an app's files whose imports the app scan reads
    case_insensitive: bool    # the file system and loader ignore letter case
    windows_names: bool       # Windows's name rules (reserved names, case twins) apply
    signature_scheme: str     # "Authenticode"; "" where the wheel's pin is the trust
    read_library: Callable[..., LibraryFacts]       # (path, exports=False): machine, ...
    is_library_file: Callable[[Path], bool]         # by its header, not its name
    returned_constant: Callable[[Path, str], int | None]   # an export's constant
    facts: Callable[[], OSFacts]               # system, driver and CUDA libraries
    driver_table: Callable[[], DriverTable]         # driver minimums, framework rows
    # (path, trust[, digests]): `digests`, the file's signature digests by algorithm
    # (sha256 -> bytes) computed as it was written, spare the check a re-read.
    check_signature: Callable[..., SignatureCheck]
    shipped_roots: Callable[[], tuple[str, ...]]    # every root a shipped recipe pins
    any_shipped_signer: Callable[[], Trust]         # any signer the shipped recipes name
    # How releases and wheels name the platform, and how a CUDA library is named on it:
    # the release catalogue and the recipe families share one body of data across
    # platforms and ask these for the names (cudnn_graph64_9.dll / libcudnn_graph.so.9).
    release_suffix: str       # a release name's tail: "win-x64" (cudnn-9.1.0.70-cuda12-win-x64)
    label: str                # what a recipe's description says: "Windows x64"
    wheel_tags: str           # a regular expression matching its wheels' platform tags
    library_stem: Callable[[str], str]         # cudnn_graph64_9.dll -> cudnn_graph ("" if none)
    library_file: Callable[[str, str], str]    # (cudnn_graph, 9) -> the file's name
    # This machine's driver: (its library's path, cuDriverGetVersion, release, error).
    # Linux's; Windows doctor and the bootstrap use the bootstrap's own probe_driver.
    probe_driver: Callable[[], tuple[str, int, str, str]] | None = None
    # Why two copies of one library in one process fail here ({name}: the library's), for
    # pack's refusal of an app that ships its own copy of one the bundle preloads.
    app_copy_harm: str = ""
    # (patterns, the search path variable's value): every copy a bare-name load could
    # reach, in order. Linux's; Windows doctor has its own DLL search (diagnose/doctor/host.py).
    bare_name_search: Callable[[tuple[str, ...], str], list[FoundLibrary]] | None = None
    # (size) -> a digest of a file's bytes fed in order (`update`), whose `digests()`
    # check_signature takes: pack computes it from the bytes it writes. None: no scheme.
    signature_digest: Callable[[int], SignatureDigest] | None = None
    # (every path a bundle ships, relative, '/') -> the first this OS cannot hold and
    # why, or None: pack asks it of the whole staged bundle before the swap.
    unholdable_path: Callable[[Iterable[str]], tuple[str, str] | None] = \
        lambda _relpaths: None

    def name_key(self, name: str) -> str:
        """The form two library names are compared in (the same file when equal)."""
        return name.lower() if self.case_insensitive else name

    def same_name(self, first: str, second: str) -> bool:
        return self.name_key(first) == self.name_key(second)

    def matches(self, name: str, patterns: Iterable[str]) -> bool:
        """Whether a file name matches one of the glob patterns, as the platform compares
        names (without regard to case on Windows)."""
        key = self.name_key(name)
        return any(fnmatch.fnmatchcase(key, self.name_key(p)) for p in patterns)

    def is_library(self, name: str) -> bool:
        """Whether a file name is a shared library's (by name: `is_library_file` reads)."""
        return re.fullmatch(self.library_names, name,
                            re.IGNORECASE if self.case_insensitive else 0) is not None


@cache
def _known() -> dict[str, Platform]:
    from bundler.linux.linux_platform import LINUX
    from bundler.windows.windows_platform import WINDOWS

    return {p.name: p for p in (WINDOWS, LINUX)}


def platform_for(name: str, where: object = "") -> Platform:
    """The platform a recipe names; RecipeError naming the known ones otherwise."""
    found = _known().get(name)
    if found is None:
        prefix = f"{where}: " if where else ""
        raise RecipeError(f"{prefix}platform {name!r} is not one bundler knows",
                          f"use one of: {', '.join(sorted(_known()))}")
    return found


def platform_for_release(suffix: str) -> Platform | None:
    """The platform of a release name's tail ("win-x64", "linux-x64"); None if none."""
    return next((p for p in _known().values() if p.release_suffix == suffix), None)


def platform_for_wheel_tag(tag: str) -> Platform | None:
    """The platform whose wheels carry this platform tag ("manylinux_2_27_x86_64")."""
    return next((p for p in _known().values() if re.fullmatch(p.wheel_tags, tag)), None)


def known_platforms() -> tuple[str, ...]:
    return tuple(sorted(_known()))


def all_platforms() -> tuple[Platform, ...]:
    """Every platform bundler knows, Windows first (what inspect tries a file against)."""
    return tuple(_known()[name] for name in sorted(_known(), key=lambda n: n != "win-amd64"))


def windows() -> Platform:
    """The platform of Windows bundles: what commands that examine a Windows machine or
    a bundle without a recipe (doctor, inspect) speak of."""
    return platform_for("win-amd64")


def this_machine() -> Platform | None:
    """The platform of the machine bundler runs on, or None where bundler packs for no
    platform of this OS (macOS). The one place outside the OS packages that asks the
    running OS: doctor examines this machine through what this returns."""
    if os.name == "nt":
        return windows()
    if sys.platform.startswith("linux"):
        return platform_for("linux-x86_64")
    return None
