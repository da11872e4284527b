"""`bundler doctor` on this machine, one path for every platform: gather over this
machine's `Platform` (its search folders and the copies of each cuDNN/CUDA library its
bare-name load reaches, each read as a file; its driver; the installed frameworks),
judge with the same findings worded in its words, render with one renderer.

Where platforms differ, the Platform answers: Windows's search lists the CUDA_PATH
folders it never searches, Linux's reaches the ldconfig cache after LD_LIBRARY_PATH.
Another platform's library files found along its own search variable (a Windows app's
DLLs on a Linux PATH) are listed and judged as files (damaged, signature), never as
what this machine's loader would load. Gathering is in host.py, the frameworks'
findings in machine_frameworks.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace

from bundler.diagnose.doctor.findings import (
    NOTE,
    OK,
    PROBLEM,
    DriverReport,
    Finding,
    FrameworkReport,
    MachineReport,
    PlacedCopy,
    plural,
    render_findings,
    where,
)
from bundler.diagnose.doctor.host import (
    DriverFacts,
    LibraryCopy,
    SearchFolder,
    find_copies,
    probe_driver,
    process_bits,
    reached_copies,
)
from bundler.diagnose.doctor.machine_frameworks import (
    framework_findings,
    framework_rows,
    gather_frameworks,
    runs,
    update_hint,
)
from bundler.runtime.rules import cuda_text
from bundler.support.text_tables import format_table
from bundler.targets.registry import DriverTable, Platform, all_platforms

FILE_ONLY = "file only"
NOT_ASKED = DriverFacts(False, "", "", 0, "", "", "", ())


def examine_machine(here: Platform | None, environ: Mapping[str, str]) -> MachineReport:
    """This machine, through `here`, its platform (registry.this_machine); None where
    bundler packs for no platform of this OS (macOS): then every platform's files found
    along its search variable are judged as files, and nothing as a load."""
    others = [p for p in all_platforms() if p is not here]
    files = [PlacedCopy(c, FILE_ONLY) for p in others for c in find_copies(
        p, p.search_folders(environ, os.path.dirname(sys.executable)), p.driver_table().scan)]
    if here is None:
        report = judge_machine(None, None, [], files, NOT_ASKED, [], process_bits())
        return replace(report, findings=(_no_platform_here(),) + report.findings)
    compat = here.driver_table()
    frameworks = gather_frameworks(here, compat)
    patterns = compat.scan + tuple(name for f in frameworks if f.expects
                                   for name in f.expects.loads) + tuple(
        os.path.basename(path) for f in frameworks for path in f.libraries)
    folders, placed = reached_copies(here, environ, patterns)
    return judge_machine(here, compat, folders, placed + files, probe_driver(compat, here),
                         frameworks, process_bits())


def _no_platform_here() -> Finding:
    """Where bundler packs for no platform of this OS (macOS), doctor reads the library
    files it finds but cannot say what any platform's loader would load here."""
    return Finding(NOTE, "machine", "bundler packs for no platform of this operating "
                   "system: the library files listed are judged as files (machine, version, "
                   "damaged, signature), not as what a process would load, and there is "
                   "no NVIDIA driver of a platform to ask",
                   "run bundler doctor on the machine that runs the app")


def judge_machine(here: Platform | None, compat: DriverTable | None,
                  folders: list[SearchFolder], placed: list[PlacedCopy], driver: DriverFacts,
                  frameworks: list[FrameworkReport], bits: int) -> MachineReport:
    """The same findings for every platform, worded in `here`'s words; `compat`, its
    driver table (None with no platform here)."""
    report = DriverReport(driver, cuda_text(driver.cuda) if driver.cuda else "",
                          compat.cuda_for_driver(driver.version)
                          if compat is not None and driver.version else "")
    loaded = [p for p in placed if p.role != FILE_ONLY]
    findings = (_bits_findings(bits, here) + _copy_findings(loaded, bits, here)
                + _file_findings(placed, bits, here) + _signature_findings(placed)
                + _driver_findings(report, loaded, compat)
                + (framework_findings(here, frameworks, loaded, report, compat)
                   if here is not None and compat is not None else []))
    ordered = sorted(placed, key=lambda p: (p.role == FILE_ONLY, p.copy.name.lower(),
                                            p.role == "not searched", p.copy.folder.order))
    return MachineReport(platform=here.name if here is not None else "",
                         python=sys.executable, bits=bits, search_order=tuple(folders),
                         libraries=tuple(ordered), driver=report, frameworks=tuple(frameworks),
                         findings=tuple(findings))


def _word(here: Platform | None) -> str:
    return here.library_word if here is not None else "library"


def _bits_findings(bits: int, here: Platform | None) -> list[Finding]:
    if bits == 64:
        return []
    return [Finding(PROBLEM, "library", f"this Python is {bits}-bit; the CUDA and cuDNN "
                    f"{plural(_word(here))} are 64-bit only", "install the 64-bit (x86-64) Python")]


def _by_name(placed: list[PlacedCopy], here: Platform | None) -> dict[str, list[PlacedCopy]]:
    groups: dict[str, list[PlacedCopy]] = {}
    for item in placed:
        key = here.name_key(item.copy.name) if here is not None else item.copy.name
        groups.setdefault(key, []).append(item)
    return groups


def _copy_findings(placed: list[PlacedCopy], bits: int,
                   here: Platform | None) -> list[Finding]:
    """Each name a bare-name load reaches: the copy it picks, and those it shadows or
    that lie in folders it only names; different copies of one name are a problem."""
    findings = []
    variable = here.search_path_variable if here is not None else "PATH"
    for group in _by_name(placed, here).values():
        name = group[0].copy.name
        picked = next((p.copy for p in group if p.role == "picked"), None)
        parts = [f"a bare-name load picks {where(picked)}" if picked else
                 "a bare-name load finds none of them (not on the search path)"]
        for role, label in (("shadowed", "it shadows"), ("not searched", "not searched")):
            copies = [where(p.copy) for p in group if p.role == role]
            if copies:
                parts.append(f"{label}: {'; '.join(copies)}")
        different = {p.copy.sha256 or p.copy.path for p in group}
        if len(group) > 1 and len(different) > 1:
            findings.append(Finding(
                PROBLEM, "library", f"{name}: {len(group)} different copies; "
                f"{'; '.join(parts)}", f"a framework loading {name} by name gets the first "
                f"one on the search path: keep one copy (take the other folder off "
                f"{variable}), or pack the app with its own runtime (bundler pack)"))
        elif len(group) > 1:
            findings.append(Finding(NOTE, "library", f"{name}: {len(group)} identical "
                                    f"copies; {'; '.join(parts)}"))
        elif picked is not None:
            findings.append(Finding(OK, "library", f"{name}: {parts[0]}"))
        findings += [_wrong_machine(p.copy, bits, here) for p in group
                     if not p.copy.error and p.copy.machine and _bits(p.copy) != bits]
    return findings


def _file_findings(placed: list[PlacedCopy], bits: int, here: Platform | None) -> list[Finding]:
    """Judged as files, whatever loads them: a damaged one (a truncated download), and
    that another platform's files listed are files only."""
    findings = [Finding(PROBLEM, "library", f"{p.copy.path}: {p.copy.error}",
                        "the file is damaged (a truncated download or an antivirus): "
                        "reinstall it") for p in placed if p.copy.error]
    for platform in all_platforms():
        listed = [p for p in placed if p.role == FILE_ONLY and p.copy.platform == platform.name]
        if listed:
            word, os_name = platform.library_word, platform.os_name
            findings.append(Finding(
                NOTE, "library", f"the {plural(word)} listed are {os_name} files on this machine's "
                f"{platform.search_path_variable}: doctor judged the files (machine, version, "
                f"signature), not what a {os_name} process would load"))
    return findings


def _signature_findings(placed: list[PlacedCopy]) -> list[Finding]:
    """A copy of a library that NVIDIA signs, without a valid NVIDIA signature, is not
    NVIDIA's file (or was changed since): whatever loads it by name gets it."""
    return [Finding(PROBLEM, "signature", f"{p.copy.name} in {where(p.copy)}: must be "
                    f"signed by {p.copy.signature_required!r}, but is {p.copy.signature_text}",
                    f"replace it with the original from {p.copy.signature_required} "
                    "(reinstall the CUDA toolkit or cuDNN), or take its folder off the "
                    "search path")
            for p in placed if p.copy.signature_required and p.copy.signature != "ok"]


def _bits(copy: LibraryCopy) -> int:
    """The word size of the machine the copy's header names, as its platform counts it."""
    return next((p.bits[copy.machine] for p in all_platforms() if copy.machine in p.bits), 0)


def _wrong_machine(copy: LibraryCopy, bits: int, here: Platform | None) -> Finding:
    said = f" ({here.wrong_machine_error})" if here is not None else ""
    return Finding(PROBLEM, "library", f"{copy.path} is a {_bits(copy)}-bit ({copy.machine}) "
                   f"{_word(here)}; a {bits}-bit process cannot load it{said}",
                   "replace it with the 64-bit (x64) build, or take its folder off the "
                   "search path")


def _driver_findings(report: DriverReport, placed: list[PlacedCopy],
                     compat: DriverTable | None) -> list[Finding]:
    facts = report.facts
    if not facts.checked or compat is None:
        return [Finding(NOTE, "driver", "the driver was not checked: no platform of this "
                        "machine to ask" + (f" (nvidia-smi reports driver {facts.version})"
                                            if facts.version else ""))]
    if not facts.path:
        reason = facts.load_error.removeprefix(f"{facts.library} cannot be loaded: ")
        return [Finding(PROBLEM, "driver", f"no NVIDIA driver: {facts.library} cannot be "
                        f"loaded ({reason})", "install the NVIDIA driver; without "
                        "it GPU frameworks fail (CUDNN_STATUS_NOT_INITIALIZED) or run on the "
                        "CPU")]
    if not facts.cuda:
        return [Finding(PROBLEM, "driver", f"{facts.path} does not report a CUDA version",
                        "reinstall the NVIDIA driver")]
    version = f"driver {facts.version} ({facts.version_from})" if facts.version else \
        "driver version unknown"
    findings = [Finding(OK, "driver", f"NVIDIA driver at {facts.path}: supports CUDA "
                        f"{report.cuda} (cuDriverGetVersion {facts.cuda}); {version}")]
    for item in placed:
        needs = _cudart_cuda(item.copy.name)
        if item.role == "picked" and needs and not runs(needs, report, compat):
            findings.append(Finding(
                PROBLEM, "driver", f"{where(item.copy)} is a CUDA {needs} runtime; the "
                f"driver supports only CUDA {report.cuda}", update_hint(needs, compat)))
    return findings


def _cudart_cuda(name: str) -> str:
    """The CUDA a cudart's name pins: cudart64_101 -> 10.1, libcudart.so.12 -> 12.0."""
    # The facts of the platform whose library the name is (cudart64_101.dll: Windows's).
    platform = next((p for p in all_platforms() if p.is_library(name)), None)
    release = platform.facts().cuda_release_of(name) \
        if platform is not None and platform.library_stem(name) == "cudart" else None
    return f"{release[0]}.{release[1]}" if release else ""


def render_machine(report: MachineReport, here: Platform | None) -> list[str]:
    word = _word(here)
    lines = [f"bundler doctor: this machine ({report.python}, {report.bits}-bit, "
             f"{report.platform or 'no platform bundler packs for'})"]
    if here is not None:
        lines += ["", f"where a bare-name {word} load looks, in order ({here.search_order_text}):"]
        lines += format_table(("#", "folder", "reached as"), (
            (f.order or "-", f.path, f.label + ("" if f.searched else " (not searched)"))
            for f in report.search_order)) if report.search_order else [
            f"  no folder ({here.search_path_variable} is empty)"]
        lines += ["", f"cuDNN / CUDA {plural(word)} found:",
                  *_copy_table([p for p in report.libraries if p.role != FILE_ONLY])]
    for platform in all_platforms():
        files = [p for p in report.libraries
                 if p.role == FILE_ONLY and p.copy.platform == platform.name]
        if files:
            lines += ["", f"{platform.os_name} {plural(platform.library_word)} on this machine's "
                      f"{platform.search_path_variable} (files only):", *_copy_table(files)]
    lines += ["", "driver:", *_render_driver(report.driver)]
    if report.frameworks:
        lines += ["", f"frameworks (how each opens NVIDIA's {plural(word)}):",
                  *framework_rows(report.frameworks)]
    return lines + ["", "findings:"] + render_findings(report.findings)


def _copy_table(placed: list[PlacedCopy]) -> list[str]:
    if not placed:
        return ["  none"]
    return format_table(("name", "role", "version", "machine", "signature", "folder"), (
        (p.copy.name, p.role, p.copy.version or "-", p.copy.machine or "?",
         p.copy.signature or "-", f"{os.path.dirname(p.copy.path)} ({p.copy.folder.label})")
        for p in placed))


def _render_driver(report: DriverReport) -> list[str]:
    facts = report.facts
    rows = [(facts.library or "driver library",
             facts.path or (f"not found ({facts.load_error})" if facts.checked
                            else "not checked"))]
    if facts.cuda:
        rows.append(("supports CUDA", f"{report.cuda} (cuDriverGetVersion {facts.cuda})"))
    if facts.version:
        by_table = f"; by its version: CUDA {report.cuda_by_version}" \
            if report.cuda_by_version else ""
        rows.append(("driver version", f"{facts.version} ({facts.version_from}){by_table}"))
    rows.append(("nvidia-smi", facts.nvidia_smi or "not found"))
    rows += [("GPU", gpu) for gpu in facts.gpus]
    return format_table(("", ""), rows, show_headers=False)
