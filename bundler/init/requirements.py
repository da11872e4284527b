"""`bundler init`: the frameworks an app's `requirements.txt` pins, for an app whose
dependencies are not installed in its folder (no site-packages: pack installs them, with
the embedded-python builder).

A pin (`onnxruntime-gpu==1.20.0`, `cupy-cuda101==9.6.0`) names a framework release whose
figures bundler knows without its files: the framework table's row for that release
(bundler/windows/compat.toml: CUDA, cuDNN minimum, the libraries it loads by name) or the
CUDA its distribution name or version tag carries (facts.cuda_named). A pinned GPU
framework with neither is named, so the spec says what is not known. Options (`-r`,
`--index-url`), markers and ranges are not read: only exact pins name a release.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bundler.frameworks.facts import FrameworkFacts, cuda_named
from bundler.pack.requirement_files import read_requirements
from bundler.platforms.driver_table import CompatFacts as DriverTable
from bundler.support.wheel_names import normalize, wheel_name
from bundler.targets.registry import Platform, platform_for_wheel_tag

REQUIREMENTS = "requirements.txt"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*([A-Za-z0-9.!+_-]+)")
# GPU frameworks whose needs bundler reads from their installed files: pinned but not
# installed, they are named when no table row knows the release.
_GPU_FRAMEWORKS = {"paddlepaddle_gpu", "tensorflow", "tensorflow_gpu", "onnxruntime_gpu"}
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
    unknown: tuple[str, ...]                 # "paddlepaddle-gpu 2.6.2": no figures


def find_requirements(app: Path, spec_folder: Path) -> Path | None:
    """The app's requirements.txt: in the app folder, else beside the spec (the
    project's top), a regular file either way."""
    for folder in (app, spec_folder):
        path = folder / REQUIREMENTS
        if path.is_file() and not path.is_symlink():
            return path
    return None


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


def pinned_frameworks(path: Path, table: DriverTable) -> Pinned:
    """The GPU frameworks `path` pins exactly, with what bundler knows of each release."""
    text = read_requirements(path).decode("utf-8", errors="replace")
    known: list[FrameworkFacts] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for line in text.splitlines():
        found = _PIN.match(line.split(" #")[0].strip())
        if not found or normalize(found.group(1)) in seen:
            continue
        name, version = found.groups()
        seen.add(normalize(name))
        row = table.framework_entry(name, version)
        named_cuda, named_by = cuda_named(name, version)
        if row is not None or named_cuda:
            known.append(FrameworkFacts(name, version, row=row, cuda=named_cuda,
                                        file=named_by))
        elif normalize(name) in _GPU_FRAMEWORKS:
            unknown.append(f"{name} {version}")
    return Pinned(path, tuple(known), tuple(unknown))


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
