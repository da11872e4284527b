"""What doctor reports: findings (problem / ok / note), the copies of a DLL name a
bare-name load would pick or pass over, and their rendering."""

from __future__ import annotations

from dataclasses import dataclass

from bundler.diagnose.doctor.host import DriverFacts, InstalledFramework, LibraryCopy, SearchFolder
from bundler.targets.registry import FoundLibrary, FrameworkEntry

PROBLEM, OK, NOTE = "problem", "ok", "note"
REPACK = "re-run `bundler pack` (an antivirus may have quarantined a file)"


@dataclass(frozen=True)
class Finding:
    level: str     # PROBLEM, OK or NOTE
    about: str     # "dll", "driver", "framework", "bundle"
    message: str
    hint: str = ""


@dataclass(frozen=True)
class PlacedCopy:
    """A DLL copy and what a bare-name load makes of it."""

    copy: LibraryCopy
    role: str   # "picked", "shadowed" (an earlier folder has the name), "not searched"


@dataclass(frozen=True)
class DriverReport:
    facts: DriverFacts
    cuda: str              # the CUDA the driver supports, from cuDriverGetVersion
    cuda_by_version: str   # the same, from its version number and compat.toml


@dataclass(frozen=True)
class FrameworkReport:
    installed: InstalledFramework
    expects: FrameworkEntry | None
    own_dlls: tuple[str, ...] = ()   # CUDA/cuDNN libraries it ships or opens by path
    opens: str = ""   # Linux: how it opens them ("absolute", "preload"; linux.toml)


@dataclass(frozen=True)
class MachineReport:
    python: str
    bits: int
    search_order: tuple[SearchFolder, ...]
    dlls: tuple[PlacedCopy, ...]
    driver: DriverReport
    frameworks: tuple[FrameworkReport, ...]
    findings: tuple[Finding, ...]
    platform: str = ""   # this machine's (platforms.this_machine), "" if none
    # Linux: each copy of a cuDNN/CUDA library a bare-name load reaches, in order
    libraries: tuple[FoundLibrary, ...] = ()

    @property
    def ok(self) -> bool:
        return not any(f.level == PROBLEM for f in self.findings)


def place(copies: list[LibraryCopy]) -> list[PlacedCopy]:
    """The first searched copy of each name is what a bare-name load picks."""
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
    partial = any(f.about == "machine" for f in findings)  # off Windows: see that note
    closing = (f"{problems} problem(s) found." if problems else
               "no problems found in what can be checked off Windows." if partial else
               "healthy: no problems found.")
    lines += ["", closing]
    return lines


