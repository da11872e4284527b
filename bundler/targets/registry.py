"""The platform seam: what bundler knows of an operating system, behind one interface.

A recipe names its platform (`platform = "win-amd64"`) and `platform_for()` gives the
`Platform` that knows it: how its libraries are named and compared, the reader of its
binaries, its system and driver libraries, its driver table, and how a library's
origin is verified. The shared layers (recipe, pack, diagnose) ask the Platform; only
an OS package (bundler/windows/) knows an OS, and the architecture test keeps it so.
Like cuda-pathfinder's `_dynamic_libs`: one typed descriptor per OS, one interface.

The interface is platforms/api.py (a Protocol every OS class implements in full); this
module is the one place that knows the OS packages. A new platform is a package beside
bundler/windows/ with a class implementing `api.Platform`, one line in `_known()`, and
its recipes.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path

from bundler.errors import RecipeError
from bundler.linux.linux_platform import LINUX
from bundler.platforms.api import (
    CHANGED,
    OK,
    UNSIGNED,
    DriverProbe,
    FoundLibrary,
    Platform,
    SearchFolder,
    SignatureCheck,
    SignatureDigest,
    Trust,
)

# What the binary reader tells of a library (machine, version, imports, exports) and the
# shapes of an OS's facts and driver table, which every platform fills.
from bundler.platforms.driver_table import CompatFacts as DriverTable
from bundler.platforms.driver_table import FrameworkEntry
from bundler.platforms.library_facts import LibraryFacts, OSFacts
from bundler.windows.windows_platform import WINDOWS

__all__ = ["CHANGED", "OK", "UNSIGNED", "DriverProbe", "DriverTable", "FoundLibrary",
           "FrameworkEntry", "LibraryFacts", "OSFacts", "Platform", "SearchFolder",
           "SignatureCheck", "SignatureDigest", "Trust", "all_platforms", "known_platforms",
           "linux", "platform_for", "platform_for_release", "platform_for_wheel_tag",
           "platform_of_file", "this_machine", "windows"]


@cache
def _known() -> dict[str, Platform]:
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


def platform_of_file(path: Path) -> Platform | None:
    """The platform whose library the file is, by its header (PE: Windows, ELF: Linux);
    None when it is no platform's (a text file named .dll, a truncated one)."""
    return next((p for p in all_platforms() if p.is_library_file(path)), None)


def windows() -> Platform:
    """The Windows platform, for the OS packages' own tests and the registry: outside
    bundler/platforms/, windows/ and linux/ the product asks for a platform by what it
    examines (a recipe, a bundle's manifest, a file's header, this machine), never by
    name (tests/meta/test_seam.py)."""
    return WINDOWS


def linux() -> Platform:
    """The Linux platform (see `windows`)."""
    return LINUX


def this_machine() -> Platform | None:
    """The platform of the machine bundler runs on, or None where bundler packs for no
    platform of this OS (macOS). The one place that maps the running OS to a Platform:
    doctor examines this machine through what this returns. What the host does that is
    no target platform's (the pack lock, file stamps) asks for itself, in
    support/exclusive.py and support/file_stamps.py."""
    if os.name == "nt":
        return WINDOWS
    if sys.platform.startswith("linux"):
        return LINUX
    return None
