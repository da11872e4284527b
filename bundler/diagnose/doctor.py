"""`bundler doctor [APPDIR]`: what this machine — or this bundle on it — will load, and why.

Machine: every cuDNN/cuDART/cuBLAS DLL reachable through the DLL search path and the
CUDA_PATH folders, which copy a bare-name load picks and which are shadowed; the
NVIDIA driver and the CUDA it supports; 32-bit DLLs; the installed frameworks
against compat.toml.

APPDIR: the bundle's files against its manifest (verify), whether each bundled DLL
would load here (machine, dependencies), whether the driver meets the runtime's
minimum (the bootstrap's own check), and which same-named DLLs a process that
skipped the bootstrap would pick up instead.

Gathering is in machine.py; this module judges and reports. Each judgement is a
Finding: "problem" (exit 1), "ok", or "note".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath

from bundler.diagnose.host import (
    DllCopy,
    DriverFacts,
    InstalledFramework,
    SearchFolder,
    find_copies,
    installed_frameworks,
    probe_driver,
    process_bits,
    search_folders,
    system_folders,
)
from bundler.diagnose.inspection import Dependency, DllFacts, dll_facts
from bundler.diagnose.verify import VerifyReport, find_manifest, verify
from bundler.manifest import FileEntry, Versions
from bundler.recipe import Recipe, shipped_recipes
from bundler.runtime.bootstrap import cuda_text, driver_check, runs_on, same_file
from bundler.support.hashing import sha256_file
from bundler.support.text_tables import format_table
from bundler.windows.compat import CompatFacts, FrameworkEntry, compat_facts
from bundler.windows.facts import windows_facts
from bundler.windows.pe_file import BITS, PLATFORM_MACHINE

PROBLEM, OK, NOTE = "problem", "ok", "note"
_REPACK = "re-run `bundler pack` (an antivirus may have quarantined a file)"


@dataclass(frozen=True)
class Finding:
    level: str     # PROBLEM, OK or NOTE
    about: str     # "dll", "driver", "framework", "bundle"
    message: str
    hint: str = ""


@dataclass(frozen=True)
class PlacedCopy:
    """A DLL copy and what a bare-name load makes of it."""

    copy: DllCopy
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


@dataclass(frozen=True)
class MachineReport:
    python: str
    bits: int
    search_order: tuple[SearchFolder, ...]
    dlls: tuple[PlacedCopy, ...]
    driver: DriverReport
    frameworks: tuple[FrameworkReport, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not any(f.level == PROBLEM for f in self.findings)


@dataclass(frozen=True)
class BundledDll:
    facts: DllFacts
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
    dlls: tuple[BundledDll, ...]
    driver: dict[str, str]
    findings: tuple[Finding, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not any(f.level == PROBLEM for f in self.findings)


# ---------------------------------------------------------------------------- machine

def examine_machine(environ: Mapping[str, str] | None = None,
                    compat: CompatFacts | None = None) -> MachineReport:
    compat = compat or compat_facts()
    environ = os.environ if environ is None else environ
    folders = search_folders(environ, application=os.path.dirname(sys.executable))
    frameworks = [FrameworkReport(f, compat.framework_entry(f.distribution, f.version))
                  for f in installed_frameworks(compat)]
    patterns = compat.scan + tuple(name for f in frameworks if f.expects
                                   for name in f.expects.loads)
    copies = find_copies(folders, patterns)
    return judge_machine(folders, copies, probe_driver(compat), frameworks, compat,
                         process_bits())


def judge_machine(folders: list[SearchFolder], copies: list[DllCopy], driver: DriverFacts,
                  frameworks: list[FrameworkReport], compat: CompatFacts,
                  bits: int) -> MachineReport:
    placed = place(copies)
    report = DriverReport(driver, cuda_text(driver.cuda) if driver.cuda else "",
                          compat.cuda_for_driver(driver.version) if driver.version else "")
    findings = (_bits_findings(bits) + _copy_findings(placed, bits)
                + _driver_findings(report, placed, compat)
                + _framework_findings(frameworks, placed, report, compat))
    return MachineReport(python=sys.executable, bits=bits, search_order=tuple(folders),
                         dlls=tuple(placed), driver=report, frameworks=tuple(frameworks),
                         findings=tuple(findings))


def place(copies: list[DllCopy]) -> list[PlacedCopy]:
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


def _where(copy: DllCopy) -> str:
    version = f", version {copy.version}" if copy.version else ""
    return f"{copy.path} ({copy.folder.label}{version})"


def _bits_findings(bits: int) -> list[Finding]:
    if bits == 64:
        return []
    return [Finding(PROBLEM, "dll", f"this Python is {bits}-bit; the CUDA and cuDNN DLLs "
                    "are 64-bit only", "install the 64-bit (x86-64) Python")]


def _copy_findings(placed: list[PlacedCopy], bits: int) -> list[Finding]:
    findings = []
    for name, group in _by_name(placed).items():
        different = {p.copy.sha256 or p.copy.path for p in group}
        picked = next((p.copy for p in group if p.role == "picked"), None)
        if len(group) > 1 and len(different) > 1:
            parts = [f"a bare-name load picks {_where(picked)}" if picked else
                     "a bare-name load finds none of them (not on the search path)"]
            for role, label in (("shadowed", "it shadows"),
                                ("not searched", "not searched, only in CUDA_PATH")):
                copies = [_where(p.copy) for p in group if p.role == role]
                if copies:
                    parts.append(f"{label}: {'; '.join(copies)}")
            findings.append(Finding(
                PROBLEM, "dll", f"{group[0].copy.name}: {len(group)} different copies; "
                f"{'; '.join(parts)}",
                f"a framework loading {name} by name gets the first one on the search "
                "path: keep one copy (take the other folder off PATH), or pack the app "
                "with its own runtime (bundler pack)"))
        elif len(group) > 1:
            findings.append(Finding(NOTE, "dll", f"{group[0].copy.name}: {len(group)} "
                                    "identical copies; a bare-name load picks "
                                    f"{_where(picked) if picked else 'none'}"))
        findings += [_unloadable(p.copy, bits) for p in group
                     if p.copy.error or (p.copy.machine and _bits(p.copy) != bits)]
    return findings


def _by_name(placed: list[PlacedCopy]) -> dict[str, list[PlacedCopy]]:
    groups: dict[str, list[PlacedCopy]] = {}
    for item in placed:
        groups.setdefault(item.copy.name.lower(), []).append(item)
    return groups


def _bits(copy: DllCopy) -> int:
    return BITS.get(copy.machine, 0)


def _unloadable(copy: DllCopy, bits: int) -> Finding:
    if copy.error:
        return Finding(PROBLEM, "dll", f"{copy.path}: {copy.error}",
                       "the file is damaged (a truncated download or an antivirus): "
                       "reinstall it")
    return Finding(PROBLEM, "dll", f"{copy.path} is a {_bits(copy)}-bit ({copy.machine}) "
                   f"DLL; a {bits}-bit process cannot load it (Windows error 193)",
                   "replace it with the 64-bit (x64) build, or take its folder off PATH")


def _driver_findings(report: DriverReport, placed: list[PlacedCopy],
                     compat: CompatFacts) -> list[Finding]:
    facts = report.facts
    if not facts.checked:
        return [Finding(NOTE, "driver", "the driver was not checked: this is not Windows"
                        + (f" (nvidia-smi reports driver {facts.version})"
                           if facts.version else ""))]
    if not facts.nvcuda:
        return [Finding(PROBLEM, "driver", "no NVIDIA driver: nvcuda.dll cannot be loaded "
                        f"({facts.load_error})", "install the NVIDIA driver; without it GPU "
                        "frameworks fail (CUDNN_STATUS_NOT_INITIALIZED) or run on the CPU")]
    if not facts.cuda:
        return [Finding(PROBLEM, "driver", f"{facts.nvcuda} does not report a CUDA version",
                        "reinstall the NVIDIA driver")]
    version = f"driver {facts.version} ({facts.version_from})" if facts.version else \
        "driver version unknown"
    findings = [Finding(OK, "driver", f"NVIDIA driver at {facts.nvcuda}: supports CUDA "
                        f"{report.cuda} (cuDriverGetVersion {facts.cuda}); {version}")]
    for item in placed:
        needs = _cudart_cuda(item.copy.name)
        if item.role == "picked" and needs and not _runs(needs, report, compat):
            findings.append(Finding(
                PROBLEM, "driver", f"{_where(item.copy)} is a CUDA {needs} runtime; the "
                f"driver supports only CUDA {report.cuda}", _update_hint(needs, compat)))
    return findings


def _runs(cuda: str, driver: DriverReport, compat: CompatFacts) -> bool:
    """Whether the driver runs a CUDA `cuda` runtime: the bootstrap's rule, with the
    figures of compat.toml in place of a recipe's."""
    return runs_on(driver.facts.version, driver.facts.cuda, cuda,
                   compat.oldest_driver_for(cuda), bool(compat.minor_compatible_from(cuda)))


def _update_hint(cuda: str, compat: CompatFacts) -> str:
    minimum = compat.oldest_driver_for(cuda)
    if minimum:
        return f"update the NVIDIA driver to >= {minimum}"
    return (f"update the NVIDIA driver to one that supports CUDA {cuda} (bundler/compat.toml "
            "has no row for it: see NVIDIA's CUDA Toolkit release notes)")


def _cudart_cuda(name: str) -> str:
    """The CUDA a cudart's name pins: cudart64_101 -> 10.1, cudart64_110 -> 11.0."""
    release = windows_facts().cuda_release_of(name) if name.lower().startswith("cudart") \
        else None
    return f"{release[0]}.{release[1]}" if release else ""


def _framework_findings(frameworks: list[FrameworkReport], placed: list[PlacedCopy],
                        driver: DriverReport, compat: CompatFacts) -> list[Finding]:
    if not frameworks:
        names = ", ".join(compat.framework_distributions)
        return [Finding(NOTE, "framework", f"no GPU framework installed in this Python "
                        f"({names})")]
    findings = []
    for framework in frameworks:
        installed, expects = framework.installed, framework.expects
        title = f"{installed.distribution} {installed.version}"
        if expects is None:
            findings.append(Finding(NOTE, "framework", f"{title}: not in the compatibility "
                                    "table (bundler/compat.toml); not checked"))
            continue
        findings.append(Finding(OK, "framework", f"{title} ({expects.name}) expects CUDA "
                                f"{expects.cuda}, cuDNN {expects.cudnn}"))
        findings += _framework_driver(title, expects, driver, compat)
        findings += _framework_loads(title, expects, placed)
    return findings


def _framework_driver(title: str, expects: FrameworkEntry, driver: DriverReport,
                      compat: CompatFacts) -> list[Finding]:
    if not driver.facts.cuda or _runs(expects.cuda, driver, compat):
        return []
    return [Finding(PROBLEM, "framework", f"{title} is built for CUDA {expects.cuda}; the "
                    f"driver supports only CUDA {driver.cuda}",
                    _update_hint(expects.cuda, compat))]


def _framework_loads(title: str, expects: FrameworkEntry,
                     placed: list[PlacedCopy]) -> list[Finding]:
    if expects.bundles_runtime:
        return [Finding(NOTE, "framework", f"{title} ships its own CUDA and cuDNN DLLs; "
                        "it needs only the driver")]
    findings = []
    for name in expects.loads:
        picked = next((p.copy for p in placed
                       if p.role == "picked" and p.copy.name.lower() == name.lower()), None)
        if picked is None:
            findings.append(Finding(
                PROBLEM, "framework", f"{title} loads {name} by name; no folder on the DLL "
                "search path has it", f"install CUDA {expects.cuda} and cuDNN "
                f"{expects.cudnn} and put their bin folders on PATH, or pack the app with "
                "its own runtime (bundler pack)"))
        else:
            findings.append(Finding(OK, "framework", f"{title} loads {name}: "
                                    f"{_where(picked)}"))
    return findings


# ----------------------------------------------------------------------------- bundle

def examine_bundle(app: Path, environ: Mapping[str, str] | None = None) -> BundleReport:
    found = find_manifest(app.resolve())
    checked = verify(app, found)
    manifest = found.manifest
    environ = os.environ if environ is None else environ
    entries = manifest.dll_entries
    folders = search_folders(environ, application=os.path.dirname(sys.executable))
    placed = place(find_copies([f for f in folders if f.searched],
                               sorted({PurePosixPath(e.path).name for e in entries})))
    versions = _plain_versions(manifest.versions)
    report = BundleReport(
        app=str(app), manifest=str(found.path), recipe=manifest.recipe.name,
        platform=manifest.platform, versions=versions,
        require_driver=manifest.require_driver, verify=checked.to_dict(),
        dlls=_bundled_dlls(found.root, entries, checked, placed, manifest.recipe.name),
        driver=driver_check(versions) if os.name == "nt" else {})
    expected = {PurePosixPath(e.path).name.lower() for e in entries}
    findings = (_verify_findings(checked) + _load_findings(report, placed, expected)
                + _bundle_driver_findings(report) + _shadow_findings(report))
    return replace(report, findings=tuple(findings))


def _plain_versions(versions: Versions) -> dict[str, str]:
    """The versions as the bootstrap's driver check reads them from the manifest."""
    return {key: value for key, value in asdict(versions).items() if value}


def _bundled_dlls(root: Path, entries: tuple[FileEntry, ...], checked: VerifyReport,
                  placed: list[PlacedCopy], recipe_name: str) -> tuple[BundledDll, ...]:
    """Facts of each bundled DLL still present (verify reports the missing ones)."""
    recipes = _recipes_for(recipe_name)
    present = [(e, root / e.path) for e in entries if (root / e.path).is_file()]
    beside = {path.name.lower() for _, path in present}
    dlls = []
    for entry, path in present:
        known = "" if entry.path in checked.changed else entry.sha256
        facts = dll_facts(path, beside, recipes, sha256=known)
        same_name = tuple(p for p in placed if p.copy.name.lower() == facts.name.lower()
                          and not same_file(p.copy.path, path))
        dlls.append(BundledDll(facts, same_name))
    return tuple(dlls)


def _recipes_for(name: str) -> tuple[Recipe, ...]:
    """The bundle's own recipe when it is a shipped one; else every shipped recipe."""
    shipped = tuple(shipped_recipes())
    own = tuple(r for r in shipped if r.name == name)
    return own or shipped


def _verify_findings(report: VerifyReport) -> list[Finding]:
    findings = [Finding(PROBLEM, "bundle", f"{what}: {', '.join(items)}", _REPACK)
                for what, items in (("missing from the bundle", report.missing),
                                    ("changed since pack", report.changed),
                                    ("not in the manifest", report.unexpected)) if items]
    if not findings:
        findings.append(Finding(OK, "bundle", f"{report.checked} files match "
                                f"{report.manifest}"))
    return findings


def _load_findings(report: BundleReport, placed: list[PlacedCopy],
                   expected: set[str]) -> list[Finding]:
    """Would each bundled DLL load here: its machine, and each import present."""
    platform_machine = PLATFORM_MACHINE.get(report.platform, "AMD64")
    system = system_folders()
    findings = []
    for dll in report.dlls:
        facts = dll.facts
        reasons = [(facts.error, _REPACK)] if facts.error else []
        if facts.machine and facts.machine != platform_machine:
            reasons.append((f"it is a {facts.bits}-bit {facts.machine} DLL, not "
                            f"{platform_machine}", _REPACK))
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
    if dep.status == "missing" and dep.name.lower() in expected:
        return f"it imports {dep.name}, which is missing from the bundle", _REPACK
    if dep.status == "missing":
        return (f"it imports {dep.name}, which is neither bundled nor part of Windows or "
                "the driver", f"the bundled file is not what the recipe expects: {_REPACK}")
    if dep.status == "driver" and report.driver and not report.driver.get("nvcuda"):
        return (f"it imports {dep.name}, which comes with the NVIDIA driver (not installed)",
                "install the NVIDIA driver")
    if dep.status == "system" and system and not _system_dll_present(dep.name, system):
        return (f"it imports {dep.name}, which is not in {system['system32']} nor beside "
                f"{sys.executable}", "install the Microsoft Visual C++ Redistributable (x64)")
    return None


def _system_dll_present(name: str, system: dict[str, str]) -> bool:
    if windows_facts().is_api_set(name):
        return True
    folders = (system["system32"], os.path.dirname(sys.executable))
    return any(os.path.isfile(os.path.join(folder, name)) for folder in folders)


def _runtime_load_findings(facts: DllFacts, placed: list[PlacedCopy]) -> list[Finding]:
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
                f"it is not bundled, so it would come from {_where(foreign)}",
                "add its component to [runtime] components and pack again"))
        else:
            findings.append(Finding(NOTE, "bundle", f"{facts.name} can load {dep.name} at "
                                    "run time; it is not bundled (its component was not "
                                    "selected)"))
    return findings


def _bundle_driver_findings(report: BundleReport) -> list[Finding]:
    if not report.driver:
        return [Finding(NOTE, "driver", "the driver was not checked: this is not Windows")]
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
    findings = []
    for dll in report.dlls:
        picked = next((p.copy for p in dll.on_search_path if p.role == "picked"), None)
        if picked is None:
            continue
        if _identical(picked, dll.facts):
            findings.append(Finding(NOTE, "bundle", f"{_where(picked)} is identical to the "
                                    f"bundled {dll.facts.name}"))
            continue
        folder = picked.folder.path
        findings.append(Finding(
            PROBLEM, "bundle", f"a process that skips the bootstrap would load "
            f"{_where(picked)}, not the bundled {dll.facts.name}",
            f"keep the bootstrap import first in the entry script; taking {folder} off PATH "
            "removes the risk"))
    return findings


def _identical(copy: DllCopy, facts: DllFacts) -> bool:
    if copy.size != facts.size:
        return False
    return (copy.sha256 or sha256_file(Path(copy.path))) == facts.sha256


# ----------------------------------------------------------------------------- output

_MARKS = {PROBLEM: "PROBLEM", OK: "ok", NOTE: "note"}


def render_findings(findings: tuple[Finding, ...]) -> list[str]:
    lines = []
    for finding in findings:
        lines.append(f"  {_MARKS[finding.level]:7}  {finding.message}")
        if finding.hint and finding.level == PROBLEM:
            lines.append(f"           hint: {finding.hint}")
    problems = sum(f.level == PROBLEM for f in findings)
    lines += ["", f"{problems} problem(s) found." if problems else "healthy: no problems found."]
    return lines


def render_machine(report: MachineReport) -> list[str]:
    lines = [f"bundler doctor: this machine ({report.python}, {report.bits}-bit)", "",
             "where a bare-name DLL load looks, in order (see bundler/windows.toml):"]
    lines += format_table(("#", "folder", "reached as"), (
        (f.order or "-", f.path, f.label + ("" if f.searched else " (not searched)"))
        for f in report.search_order))
    lines += ["", "cuDNN / CUDA DLLs found:"]
    if report.dlls:
        lines += format_table(("name", "role", "version", "machine", "folder"), (
            (p.copy.name, p.role, p.copy.version or "-", p.copy.machine or "?",
             f"{os.path.dirname(p.copy.path)} ({p.copy.folder.label})")
            for p in report.dlls))
    else:
        lines.append("  none")
    lines += ["", "driver:", *_render_driver(report.driver), "", "findings:"]
    return lines + render_findings(report.findings)


def _render_driver(report: DriverReport) -> list[str]:
    facts = report.facts
    rows = [("nvcuda.dll", facts.nvcuda or (f"not found ({facts.load_error})"
                                           if facts.checked else "not checked"))]
    if facts.cuda:
        rows.append(("supports CUDA", f"{report.cuda} (cuDriverGetVersion {facts.cuda})"))
    if facts.version:
        by_table = f"; by its version: CUDA {report.cuda_by_version}" \
            if report.cuda_by_version else ""
        rows.append(("driver version", f"{facts.version} ({facts.version_from}){by_table}"))
    rows.append(("nvidia-smi", facts.nvidia_smi or "not found"))
    rows += [("GPU", gpu) for gpu in facts.gpus]
    return format_table(("", ""), rows, show_headers=False)


def render_bundle(report: BundleReport) -> list[str]:
    lines = [f"bundler doctor: {report.app} (recipe {report.recipe}; CUDA "
             f"{report.versions.get('cuda')}, cuDNN {report.versions.get('cudnn')}, "
             f"driver >= {report.versions.get('min_driver')})", ""]
    lines += format_table(("bundled DLL", "machine", "version", "same name on the search path"),
                          ((d.facts.name, d.facts.machine, d.facts.file_version or "-",
                            "; ".join(f"{p.copy.path} ({p.role})" for p in d.on_search_path)
                            or "-") for d in report.dlls))
    return lines + ["", "findings:"] + render_findings(report.findings)
