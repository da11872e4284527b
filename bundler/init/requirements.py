"""`bundler init`: the frameworks an app's `requirements.txt` pins, for an app whose
dependencies are not installed in its folder (no site-packages: pack installs them, with
the embedded-python builder).

A pin (`onnxruntime-gpu==1.20.0`, `cupy-cuda12x==13.6.0`) of a GPU framework bundler
knows names a release whose figures are read from its wheel without installing it, as
`bundler recipes --for` reads them (init/requested.py: its build-info file, and the
framework table's row for the release; where no wheel can be had, the row alone, or the
CUDA its name or version tag carries). A pinned GPU framework with neither is named, so
the spec says what is not known. Markers and ranges are not read: only exact pins name
a release; the file's --find-links folders are looked in for the wheels.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bundler.frameworks.facts import FrameworkFacts
from bundler.init.requested import lines_of, requested
from bundler.pack.requirement_files import read_requirements
from bundler.support.wheel_names import wheel_name
from bundler.targets.registry import Platform, platform_for_wheel_tag

REQUIREMENTS = "requirements.txt"
# Folders that hold installed packages: an app with one is packed as it is (folder).
_SITE = ("site-packages", "dist-packages")
_SITE_DEPTH = 4
# A wheel a requirement line names by file (a path or URL): its platform tag says whose.
_WHEEL_FILE = re.compile(r"([A-Za-z0-9_.+!-]+\.whl)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Pinned:
    """What the app's requirements file pins, as far as bundler knows it."""

    path: Path
    frameworks: tuple[FrameworkFacts, ...]   # releases whose figures bundler knows
    unknown: tuple[str, ...]                 # "paddlepaddle-gpu 2.6.2: no wheel ...": none
    said: tuple[tuple[str, str], ...] = ()   # (title, where its figures come from)


def find_requirements(app: Path, spec_folder: Path) -> Path | None:
    """The app's requirements.txt: in the app folder, else beside the spec (the
    project's top), a regular file either way."""
    for folder in (app, spec_folder):
        path = folder / REQUIREMENTS
        if path.is_file() and not path.is_symlink():
            return path
    return None


def unread_requirements(app: Path, spec_folder: Path) -> list[str]:
    """Each requirements.txt where find_requirements looks that it does not take (a
    link, a named pipe, a folder), said as such: init never passes one by in silence."""
    said = []
    for folder in (app, spec_folder):
        path = folder / REQUIREMENTS
        if os.path.lexists(path) and (path.is_symlink() or not path.is_file()):
            what = "a link" if path.is_symlink() else "not a regular file"
            said.append(f"{path}: {what}, not read (init reads a requirements.txt that is "
                        "a regular file)")
    return said


def has_site_packages(app: Path) -> bool:
    """Whether packages are installed inside the app folder (a site-packages a few levels
    down; git's folder is not the app's)."""
    level = [app]
    for _ in range(_SITE_DEPTH):
        below = []
        for folder in level:
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                if entry.name == ".git" or not entry.is_dir(follow_symlinks=False):
                    continue
                if entry.name in _SITE or entry.name.endswith(".dist-info"):
                    return True
                below.append(Path(entry.path))
        level = below
    return False


def pinned_frameworks(path: Path, platform: Platform, find_links: Sequence[Path] = (),
                      offline: bool = False) -> Pinned:
    """The GPU frameworks `path` pins exactly, each read from its wheel as `bundler
    recipes --for` reads it (init/requested.py: --find-links folders, the file's
    own, the wheel cache, else pip; its table row where no wheel can be had)."""
    lines, links = lines_of([str(path)])
    found = requested(lines, platform, [*links, *find_links], offline, pinned_only=True)
    return Pinned(path, found.frameworks, found.unknown, found.said)


def platform_in_requirements(path: Path) -> tuple[Platform, str] | None:
    """The platform of the first wheel `path` names by file whose platform tag is a
    platform's (`./wheels/x-1.0-cp311-cp311-manylinux_2_17_x86_64.whl`), with what says
    so; None where no line names one (a pin names no platform)."""
    text = read_requirements(path).decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        for found in _WHEEL_FILE.findall(line.split(" #")[0]):
            name = wheel_name(found.rsplit("/", 1)[-1])
            platforms = [p for p in (platform_for_wheel_tag(t) for t in name.platforms)
                         if p] if name else []
            if platforms:
                return platforms[0], f"line {number} names {found}, a " \
                    f"{platforms[0].label} wheel"
    return None
