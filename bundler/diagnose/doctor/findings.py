"""What doctor reports: findings (problem / ok / note), the copies of a library name a
bare-name load would pick or pass over, the reports' shapes, and the findings' rendering.
(The public JSON is a view of these built on purpose: view.py.)"""

from __future__ import annotations

from dataclasses import dataclass

from bundler.diagnose.doctor.host import (
    DriverFacts,
    InstalledFramework,
    LibraryCopy,
    PlacedCopy,
    SearchFolder,
)
from bundler.targets.registry import FrameworkEntry

PROBLEM, OK, NOTE = "problem", "ok", "note"
REPACK = "re-run `bundler pack` (an antivirus may have quarantined a file)"


@dataclass(frozen=True)
class Finding:
    level: str     # PROBLEM, OK or NOTE
    about: str     # "dll", "driver", "framework", "bundle"
    message: str
    hint: str = ""


@dataclass(frozen=True)
class DriverReport:
    facts: DriverFacts
    cuda: str              # the CUDA the driver supports, from cuDriverGetVersion
    cuda_by_version: str   # the same, from its version number and compat.toml


@dataclass(frozen=True)
class FrameworkReport:
    installed: InstalledFramework
    expects: FrameworkEntry | None   # its row of the platform's driver table, if any
    libraries: tuple[str, ...] = ()  # CUDA/cuDNN libraries it opens by path (absolute)
    opens: str = ""   # how it opens them, per the platform's facts ("absolute", "preload")


@dataclass(frozen=True)
class MachineReport:
    platform: str   # this machine's (registry.this_machine), "" where none is
    python: str
    bits: int
    search_order: tuple[SearchFolder, ...]   # the folders its bare-name load searches
    # Every copy found: those its bare-name load reaches (picked, shadowed), those in
    # folders it only names (not searched), other platforms' files (file only)
    libraries: tuple[PlacedCopy, ...]
    driver: DriverReport
    frameworks: tuple[FrameworkReport, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not any(f.level == PROBLEM for f in self.findings)


def place(copies: list[LibraryCopy]) -> list[PlacedCopy]:
    """The first searched copy of each name (by folder order) is what a bare-name load
    picks: the folder search alone (the platform's `bare_name_search` is the loader's
    whole answer, host.reached_copies)."""
    picked: set[str] = set()
    placed = []
    for copy in sorted(copies, key=lambda c: (c.name.lower(), not c.folder.searched,
                                              c.folder.order)):
        if not copy.folder.searched:
            role = "not searched"
        elif copy.name.lower() in picked:
            role = "shadowed"
        else:
            role = "picked"
            picked.add(copy.name.lower())
        placed.append(PlacedCopy(copy, role))
    return placed


def plural(word: str) -> str:
    """A platform's word for its libraries in the plural: "DLLs", "libraries"."""
    return f"{word[:-1]}ies" if word.endswith("y") else f"{word}s"


def where(copy: LibraryCopy) -> str:
    version = f", version {copy.version}" if copy.version else ""
    return f"{copy.path} ({copy.folder.label}{version})"


_MARKS = {PROBLEM: "PROBLEM", OK: "ok", NOTE: "note"}


def render_findings(findings: tuple[Finding, ...]) -> list[str]:
    lines = []
    for finding in findings:
        lines.append(f"  {_MARKS[finding.level]:7}  {finding.message}")
        if finding.hint and finding.level == PROBLEM:
            lines.append(f"           hint: {finding.hint}")
    problems = sum(f.level == PROBLEM for f in findings)
    partial = any(f.about == "machine" for f in findings)  # no platform here: that note
    closing = (f"{problems} problem(s) found." if problems else
               "no problems found in what can be checked here." if partial else
               "healthy: no problems found.")
    lines += ["", closing]
    return lines


