"""The GPU frameworks a requirements line (or file) names, with what each release says it
needs, before anything is installed: `bundler recipes --for` and `bundler init` from a
requirements.txt take them from here, so a spec init writes packs as written.

Each requirement of a framework bundler knows (a build-info reader, a framework table
row, a CUDA in its name) is looked up as a wheel (wheel_facts.look_up: find-links
folders, the wheel cache, pip) and read; where no wheel can be had, an exact pin still
gets its framework table row (or the CUDA its name or tag carries), and says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bundler.frameworks.build_names import cuda_named
from bundler.frameworks.facts import FrameworkFacts, build_info_member
from bundler.init.wheel_facts import Requirement, look_up, parse_requirement
from bundler.pack.requirement_files import requirement_lines
from bundler.platforms.api import Platform
from bundler.support.wheel_names import normalize

# The CPU builds' names, and the GPU build a user most likely means.
GPU_BUILDS = {"onnxruntime": "onnxruntime-gpu", "paddlepaddle": "paddlepaddle-gpu",
              "cupy": "cupy-cuda12x (or cupy-cuda11x)", "mxnet": "mxnet-cu112 (or another "
              "mxnet-cuNNN)"}
_FIND_LINKS = re.compile(r"^(?:-f|--find-links)(?:\s+|=)(\S+)$")


@dataclass(frozen=True)
class Requested:
    frameworks: tuple[FrameworkFacts, ...]
    said: tuple[tuple[str, str], ...]   # (title, where its figures come from)
    unknown: tuple[str, ...]            # "tensorflow 9.99.0: no wheel (...) and no row"
    others: tuple[str, ...]             # requirements that are no GPU framework bundler knows


def is_framework(name: str, platform: Platform) -> bool:
    """Whether bundler reads this distribution's needs (a reader, a table row, a name)."""
    table = platform.driver_table()
    return bool(build_info_member(name) or cuda_named(name, "")[0]
                or normalize(name) in {normalize(d) for d in table.framework_distributions})


def lines_of(items: Sequence[str]) -> tuple[list[str], list[Path]]:
    """The requirement lines `items` give (each a requirement, or a requirements file:
    its lines) and the find-links folders those files name (relative to the file)."""
    lines: list[str] = []
    links: list[Path] = []
    for item in items:
        path = Path(item)
        if path.is_file():
            for line in requirement_lines(path):
                found = _FIND_LINKS.match(line)
                if found:
                    links.append(path.parent / found.group(1))
                else:
                    lines.append(line)
        else:
            lines.append(item)
    return lines, links


def requested(lines: Iterable[str], platform: Platform, find_links: Sequence[Path],
              offline: bool, pinned_only: bool = False,
              environ: Mapping[str, str] = os.environ) -> Requested:
    """The frameworks `lines` name, each read from its wheel where one can be had.
    `pinned_only`: only exact pins count (init: a range is pip's choice at pack time)."""
    frameworks: list[FrameworkFacts] = []
    said: list[tuple[str, str]] = []
    unknown: list[str] = []
    others: list[str] = []
    seen: set[str] = set()
    for line in lines:
        requirement = parse_requirement(line)
        if requirement is None or normalize(requirement.name) in seen:
            continue
        if not is_framework(requirement.name, platform) or (
                pinned_only and not requirement.pinned):
            others.append(requirement.line)
            continue
        seen.add(normalize(requirement.name))
        looked = look_up(requirement, platform, find_links, offline, environ)
        facts = looked.facts or _from_table(requirement, platform)
        title = f"{requirement.name} {requirement.pinned or requirement.spec}".strip()
        if facts is None:
            why = looked.missing or f"pip found none for {platform.release_suffix}"
            unknown.append(f"{title} (no wheel: {why}; no row of bundler's framework "
                           "table)")
            continue
        frameworks.append(facts)
        said.append((facts.title, f"its wheel {looked.wheel} ({looked.where})" if looked.wheel
                     else f"bundler's framework table; its wheel was not read "
                          f"({looked.missing})"))
    return Requested(tuple(frameworks), tuple(said), tuple(unknown), tuple(others))


def _from_table(requirement: Requirement, platform: Platform) -> FrameworkFacts | None:
    """An exact pin's table row (or the CUDA its name or tag carries), where no wheel
    could be read."""
    version = requirement.pinned
    if not version:
        return None
    row = platform.driver_table().framework_entry(requirement.name, version)
    cuda, by = cuda_named(requirement.name, version)
    if row is None and not cuda:
        return None
    return FrameworkFacts(requirement.name, version, by, cuda=cuda, row=row)
