"""`bundler doctor APPDIR`: a bundle on this machine, one path for every platform, over
the `Platform` its manifest names. Its files against the manifest (verify), whether each
bundled library would load here, the driver against the runtime's minimum (the
bootstrap's own check), how the bootstrap loads the bundle's libraries, and the
same-named copies a bare-name load of that platform reaches on this machine
(`bare_name_search`): what a process that skipped the bootstrap would pick up instead."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath

from bundler.diagnose.doctor.bundle_environment import environment_findings
from bundler.diagnose.doctor.bundle_frameworks import framework_findings
from bundler.diagnose.doctor.bundle_loads import preload_findings
from bundler.diagnose.doctor.findings import (
    NOTE,
    OK,
    PROBLEM,
    REPACK,
    Finding,
    PlacedCopy,
    render_findings,
    where,
)
from bundler.diagnose.doctor.host import (
    LibraryCopy,
    reached_copies,
    system_folders,
)
from bundler.diagnose.inspection import Dependency, InspectedLibrary, dll_facts
from bundler.diagnose.verify import ADDED_HINT, VerifyReport, repair_hint, verify
from bundler.formats.lockfile import Lock
from bundler.formats.manifest import FileEntry, Versions, find_manifest
from bundler.recipe.load import Recipe, shipped_recipes
from bundler.runtime.rules import glibc_problem, judge_driver, same_file
from bundler.support.bundle_files import link_on_the_way
from bundler.support.hashing import sha256_file
from bundler.support.text_tables import format_table
from bundler.targets.registry import (
    Platform,
    all_platforms,
    known_platforms,
    platform_for,
    this_machine,
)


@dataclass(frozen=True)
class BundledLibrary:
    facts: InspectedLibrary
    on_search_path: tuple[PlacedCopy, ...]  # same-named copies outside the bundle


@dataclass(frozen=True)
class BundleReport:
    app: str
    manifest: str
    recipe: str
    platform: str
    versions: dict[str, str]
    require_driver: bool
    verify: dict[str, object]
    dlls: tuple[BundledLibrary, ...]
    driver: dict[str, str]
    findings: tuple[Finding, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not any(f.level == PROBLEM for f in self.findings)


def examine_bundle(app: Path, environ: Mapping[str, str] | None = None,
                   lock: Lock | None = None, glibc: str = "",
                   lock_path: Path | None = None) -> BundleReport:
    """`lock`: the bundle's lock, to check each file against it too (doctor --lock,
    `lock_path` its file);
    `glibc`: the glibc of the machine the app is for (default: this one's, on Linux)."""
    found = find_manifest(app.resolve())
    checked = verify(app, found, lock, lock_path)
    manifest = found.manifest
    environ = os.environ if environ is None else environ
    target = bundle_platform(manifest.platform)
    entries = tuple(e for e in manifest.files if target.is_library(PurePosixPath(e.path).name))
    names = sorted({PurePosixPath(e.path).name for e in entries})
    placed = _reached(target, environ, names)
    versions = _plain_versions(manifest.versions)
    report = BundleReport(
        app=str(app), manifest=str(found.path), recipe=manifest.recipe.name,
        platform=manifest.platform, versions=versions,
        require_driver=manifest.require_driver, verify=checked.to_dict(),
        dlls=_bundled_dlls(found.root, entries, checked, placed, manifest.recipe.name,
                           target),
        driver=_driver(manifest.platform, versions))
    expected = {target.name_key(PurePosixPath(e.path).name) for e in entries}
    # The DLLs loaded by name at run time but left out: a copy of one on the search
    # path is what that load would get.
    left_out = sorted({d.name for dll in report.dlls for d in dll.facts.dependencies
                       if d.how == "runtime" and d.status != "bundled"})
    placed += _reached(target, environ, left_out) if left_out else []
    findings = (_verify_findings(checked) + _load_findings(report, placed, expected)
                + _bundle_driver_findings(report) + _shadow_findings(report)
                + _glibc_findings(report, glibc)
                + environment_findings(target, found.root, manifest)
                + framework_findings(target, found.root, manifest)
                + preload_findings(target, manifest.load_order))
    return replace(report, findings=tuple(findings))


def _reached(target: Platform, environ: Mapping[str, str], names: list[str]
             ) -> list[PlacedCopy]:
    """The copies of `names` a bare-name load of the bundle's platform reaches on this
    machine (picked or shadowed), read as files: the same search for every platform."""
    return [p for p in reached_copies(target, environ, names)[1]
            if p.role in ("picked", "shadowed")]


def _glibc_findings(report: BundleReport, glibc: str) -> list[Finding]:
    """A Linux bundle's min_glibc (its libraries' newest GLIBC_x.y) against the machine's,
    by the bootstrap's own rule: an older glibc stops the app at start-up."""
    needed = report.versions.get("min_glibc", "")
    if not needed:
        return []
    if not glibc and not _here(report.platform):
        return [Finding(NOTE, "glibc", f"the bundle needs glibc >= {needed}; not checked: "
                        "this machine is not the bundle's platform")]
    glibc = glibc or (os.confstr("CS_GNU_LIBC_VERSION") or "").split(" ")[-1]
    problem = glibc_problem(needed, glibc)
    if problem:
        return [Finding(PROBLEM, "glibc", f"{problem} (the app stops at start-up)",
                        f"run the app on a Linux with glibc >= {needed}, or pack a cuDNN "
                        "release whose wheels are built for an older glibc")]
    return [Finding(OK, "glibc", f"glibc {glibc} runs the bundle's libraries (they need "
                    f">= {needed})")]


def _driver(platform: str, versions: dict[str, str]) -> dict[str, str]:
    """A bundle on a machine of its platform: the driver its platform probes (nvcuda.dll,
    libcuda.so.1) judged by the bootstrap's driver rule (the driver tables' figures in
    the manifest); {} elsewhere, where the bundle's driver is not this machine's."""
    if not _here(platform):
        return {}
    probe = platform_for(platform).probe_driver()
    # The rule reads a Windows file version (nvcuda.dll's); a Linux release is named by
    # libcuda's file and compared by cuDriverGetVersion alone.
    found = judge_driver(versions, probe.path, probe.cuda, probe.file_version, probe.error)
    return {**found, "driver_version": found["driver_version"] or probe.release}


def _here(platform: str) -> bool:
    """Whether this machine is of the bundle's platform (its libraries can load here)."""
    here = this_machine()
    return here is not None and here.name == platform


def _key(report: BundleReport, name: str) -> str:
    """A library name as the bundle's platform compares names."""
    return bundle_platform(report.platform).name_key(name)


def bundle_platform(name: str) -> Platform:
    """The platform a bundle's manifest names. One this bundler does not know (an edited
    manifest, or a newer bundler's) is read as the first platform inspect tries a file
    against (all_platforms' order), so doctor still reports on the bundle's files."""
    return platform_for(name) if name in known_platforms() else all_platforms()[0]


def _plain_versions(versions: Versions) -> dict[str, str]:
    """The versions as the bootstrap's driver check reads them from the manifest."""
    return {key: value for key, value in asdict(versions).items() if value}


def _bundled_dlls(root: Path, entries: tuple[FileEntry, ...], checked: VerifyReport,
                  placed: list[PlacedCopy], recipe_name: str,
                  target: Platform) -> tuple[BundledLibrary, ...]:
    """Facts of each bundled DLL still present (verify reports the missing ones)."""
    recipes = _recipes_for(recipe_name)
    # A link is not read (verify reports it): what it reaches is not the bundle's.
    present = [(e, root / e.path) for e in entries
               if not link_on_the_way(root, e.path) and (root / e.path).is_file()]
    beside = {target.name_key(path.name) for _, path in present}
    dlls = []
    for entry, path in present:
        known = "" if entry.path in checked.changed else entry.sha256
        facts = dll_facts(path, beside, recipes, sha256=known, platform=target)
        same_name = tuple(p for p in placed if target.same_name(p.copy.name, facts.name)
                          and not same_file(p.copy.path, path))
        dlls.append(BundledLibrary(facts, same_name))
    return tuple(dlls)


def _recipes_for(name: str) -> tuple[Recipe, ...]:
    """The bundle's own recipe when it is a shipped one; else every shipped recipe."""
    shipped = tuple(shipped_recipes())
    own = tuple(r for r in shipped if r.name == name)
    return own or shipped


def _verify_findings(report: VerifyReport) -> list[Finding]:
    findings = [Finding(PROBLEM, "bundle", f"{what}: {', '.join(items)}",
                        ADDED_HINT if items is report.unexpected else repair_hint(items))
                for what, items in (("missing from the bundle", report.missing),
                                    ("changed since pack", report.changed),
                                    ("not in the manifest", report.unexpected),
                                    ("not as the lock pins it", report.not_as_locked),
                                    ("signature not valid", report.signatures))
                if items]
    if not findings:
        findings.append(Finding(OK, "bundle", f"{report.checked} files match "
                                f"{report.manifest}"))
    if report.lock and not report.lock_pins:   # allowed: --lock-predates-record
        findings.append(Finding(NOTE, "lock", f"{report.lock} pins the runtime files only "
                                "(a lock that predates its bundle record): the manifest and "
                                "entry script are not checked against it",
                                "pack again to pin them, and commit the lock"))
    return findings


def _load_findings(report: BundleReport, placed: list[PlacedCopy],
                   expected: set[str]) -> list[Finding]:
    """Would each bundled DLL load here: its machine, and each import present."""
    target = bundle_platform(report.platform)
    platform_machine = target.machine
    system = system_folders()
    findings = []
    for dll in report.dlls:
        facts = dll.facts
        reasons = [(facts.error, REPACK)] if facts.error else []
        if facts.machine and facts.machine != platform_machine:
            reasons.append((f"it is a {facts.bits}-bit {facts.machine} "
                            f"{target.library_word}, not {platform_machine}", REPACK))
        reasons += [r for r in (_import_problem(d, report, system, expected)
                                for d in facts.dependencies) if r]
        findings += [Finding(PROBLEM, "bundle", f"{facts.name} would not load: {reason}",
                             hint) for reason, hint in reasons]
        findings += _runtime_load_findings(facts, placed)
        if not reasons:
            count = len(facts.dependencies)
            findings.append(Finding(OK, "bundle", f"{facts.name} would load ({facts.machine}; "
                                    f"{count} dependenc{'y' if count == 1 else 'ies'} present)"))
    return findings


def _import_problem(dep: Dependency, report: BundleReport, system: dict[str, str],
                    expected: set[str]) -> tuple[str, str] | None:
    """(reason, hint) when a static or delay-load import would not be found."""
    if dep.how == "runtime":
        return None    # judged by _runtime_load_findings: a missing one is optional
    if dep.status == "missing" and _key(report, dep.name) in expected:
        return f"it imports {dep.name}, which is missing from the bundle", REPACK
    if dep.status == "missing":
        return (f"it imports {dep.name}, which is neither bundled nor part of "
                f"{bundle_platform(report.platform).os_name} or the driver",
                f"the bundled file is not what the recipe expects: {REPACK}")
    if dep.status == "driver" and report.driver and not report.driver.get("nvcuda"):
        return (f"it imports {dep.name}, which comes with the NVIDIA driver (not installed)",
                "install the NVIDIA driver")
    if dep.status == "system" and system and not _system_dll_present(dep.name, system):
        return (f"it imports {dep.name}, which is not in {system['system32']} nor beside "
                f"{sys.executable}", "install the Microsoft Visual C++ Redistributable (x64)")
    return None


def _system_dll_present(name: str, system: dict[str, str]) -> bool:
    # `system` is this machine's loader's folders: its loader resolves an API set name.
    here = this_machine()
    if here is not None and here.facts().is_api_set(name):
        return True
    folders = (system["system32"], os.path.dirname(sys.executable))
    return any(os.path.isfile(os.path.join(folder, name)) for folder in folders)


def _runtime_load_findings(facts: InspectedLibrary, placed: list[PlacedCopy]) -> list[Finding]:
    """A DLL the recipe says is loaded by name at run time, left out of the bundle (its
    component was not selected): harmless unless a foreign copy is on the search path."""
    findings = []
    for dep in facts.dependencies:
        if dep.how != "runtime" or dep.status == "bundled":
            continue
        foreign = next((p.copy for p in placed if p.role == "picked"
                        and p.copy.name.lower() == dep.name.lower()), None)
        if foreign is not None:
            findings.append(Finding(
                PROBLEM, "bundle", f"{facts.name} loads {dep.name} by name at run time; "
                f"it is not bundled, so it would come from {where(foreign)}",
                "add its component to [runtime] components and pack again"))
        else:
            findings.append(Finding(NOTE, "bundle", f"{facts.name} can load {dep.name} at "
                                    "run time; it is not bundled (its component was not "
                                    "selected)"))
    return findings


def _bundle_driver_findings(report: BundleReport) -> list[Finding]:
    if not report.driver:
        return [Finding(NOTE, "driver", "the driver was not checked: this machine is not "
                        "the bundle's platform")]
    problem = report.driver.get("problem", "")
    if problem:
        effect = ("the app stops at start-up (require_driver = true)" if report.require_driver
                  else "the app warns at start-up and runs without the GPU")
        return [Finding(PROBLEM, "driver", f"{problem} ({effect})",
                        "install or update the NVIDIA driver")]
    if report.driver.get("note"):
        return [Finding(NOTE, "driver", report.driver["note"])]
    driver = report.driver
    version = f" {driver['driver_version']}" if driver.get("driver_version") else ""
    return [Finding(OK, "driver", f"the NVIDIA driver{version} supports CUDA "
                    f"{driver.get('driver_cuda')}; the runtime needs CUDA "
                    f"{driver.get('needs_cuda')} (driver >= "
                    f"{driver.get('min_driver_compat') or driver.get('min_driver')})")]


def _shadow_findings(report: BundleReport) -> list[Finding]:
    """A same-named copy a bare-name load picks: what a process that skipped the
    bootstrap (or a library loading the name before it ran) would get."""
    findings = []
    for dll in report.dlls:
        picked = next((p.copy for p in dll.on_search_path if p.role == "picked"), None)
        if picked is None:
            continue
        if _identical(picked, dll.facts):
            findings.append(Finding(NOTE, "bundle", f"{where(picked)} is identical to the "
                                    f"bundled {dll.facts.name}"))
            continue
        findings.append(Finding(
            PROBLEM, "bundle", f"a process that skips the bootstrap would load "
            f"{where(picked)}, not the bundled {dll.facts.name}",
            "keep the bootstrap lines first in the entry script (bundler's runtime hook "
            f"first in a PyInstaller app): its preload by absolute path keeps {picked.path} "
            "out"))
    return findings


def _identical(copy: LibraryCopy, facts: InspectedLibrary) -> bool:
    if copy.size != facts.size:
        return False
    return (copy.sha256 or sha256_file(Path(copy.path))) == facts.sha256


def render_bundle(report: BundleReport) -> list[str]:
    lines = [f"bundler doctor: {report.app} (recipe {report.recipe}; CUDA "
             f"{report.versions.get('cuda')}, cuDNN {report.versions.get('cudnn')}, "
             f"driver >= {report.versions.get('min_driver')})", ""]
    word = bundle_platform(report.platform).library_word
    lines += format_table((f"bundled {word}", "machine", "version",
                           "same name on the search path"),
                          ((d.facts.name, d.facts.machine, d.facts.file_version or "-",
                            "; ".join(f"{p.copy.path} ({p.role})" for p in d.on_search_path)
                            or "-") for d in report.dlls))
    return lines + ["", "findings:"] + render_findings(report.findings)
