"""`bundler doctor` on this machine: which cuDNN/CUDA copies a bare-name load picks,
the driver and the CUDA it supports, 32-bit or damaged DLLs, and the installed
frameworks against the compatibility table. Gathering is in host.py."""

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
    place,
    render_findings,
    where,
)
from bundler.diagnose.doctor.host import (
    DriverFacts,
    LibraryCopy,
    SearchFolder,
    find_copies,
    installed_frameworks,
    own_runtime_dlls,
    probe_driver,
    process_bits,
)
from bundler.diagnose.doctor.linux_machine import examine_linux, render_linux
from bundler.runtime.rules import cuda_text, runs_on
from bundler.support.text_tables import format_table
from bundler.targets.registry import (
    DriverTable,
    FrameworkEntry,
    Platform,
    all_platforms,
    this_machine,
)


def examine_machine(environ: Mapping[str, str] | None = None,
                    compat: DriverTable | None = None) -> MachineReport:
    environ = os.environ if environ is None else environ
    here = this_machine()
    judged = _files_platform(here)
    compat = compat or judged.driver_table()
    # The library files of `judged` on its search path (PATH), each judged as a file;
    # the driver is asked only where they are this machine's own loader's story.
    folders = judged.search_folders(environ, os.path.dirname(sys.executable))
    frameworks = [FrameworkReport(f, compat.framework_entry(f.distribution, f.version),
                                  own_runtime_dlls(f, judged))
                  for f in installed_frameworks(compat)]
    patterns = compat.scan + tuple(name for f in frameworks if f.expects
                                   for name in f.expects.loads) + tuple(
        name for f in frameworks for name in f.own_dlls)
    copies = find_copies(judged, folders, patterns)
    driver = probe_driver(compat, here if here is judged else None)
    report = judge_machine(folders, copies, driver, frameworks, compat, process_bits())
    if here is judged:
        return replace(report, platform=judged.name)
    if here is not None:
        # This machine's own platform (Linux): its search, driver and frameworks; the
        # rows of `judged` stay only where its files lie on PATH (then said to be files).
        return examine_linux(here, environ, report)
    return replace(report, findings=(_not_this_platform(judged),) + report.findings)


def _files_platform(here: Platform | None) -> Platform:
    """The platform whose library files machine doctor lists along the search path and
    judges: one whose loader answers from folders alone (so the folders' files are the
    story): this machine's own where it is such, else the first such (a Windows app's
    DLLs on the PATH of Linux or macOS, judged as files)."""
    if here is not None and here.searches_folders_only:
        return here
    return next(p for p in all_platforms() if p.searches_folders_only)


def _not_this_platform(judged: Platform) -> Finding:
    """Where bundler packs for no platform of this OS (macOS), doctor reads the library
    files it finds but cannot say what `judged`'s loader would load: the folders are
    this machine's PATH, and there is no driver of that platform to ask."""
    os_name, word = judged.os_name, judged.library_word
    return Finding(NOTE, "machine", f"this is not {os_name}: the folders above are this "
                   f"machine's {judged.search_path_variable}, not a {os_name} {word} search "
                   f"path. doctor can judge the {word} files found (machine, version, "
                   f"damaged) and the frameworks' metadata, not which copy a {os_name} "
                   "process would load, nor the NVIDIA driver",
                   f"run bundler doctor on the {os_name} machine that runs the app")


def judge_machine(folders: list[SearchFolder], copies: list[LibraryCopy], driver: DriverFacts,
                  frameworks: list[FrameworkReport], compat: DriverTable,
                  bits: int) -> MachineReport:
    placed = place(copies)
    report = DriverReport(driver, cuda_text(driver.cuda) if driver.cuda else "",
                          compat.cuda_for_driver(driver.version) if driver.version else "")
    findings = (_bits_findings(bits) + _copy_findings(placed, bits)
                + _signature_findings(placed)
                + _driver_findings(report, placed, compat)
                + _framework_findings(frameworks, placed, report, compat))
    return MachineReport(python=sys.executable, bits=bits, search_order=tuple(folders),
                         dlls=tuple(placed), driver=report, frameworks=tuple(frameworks),
                         findings=tuple(findings))


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
            parts = [f"a bare-name load picks {where(picked)}" if picked else
                     "a bare-name load finds none of them (not on the search path)"]
            for role, label in (("shadowed", "it shadows"),
                                ("not searched", "not searched, only in CUDA_PATH")):
                copies = [where(p.copy) for p in group if p.role == role]
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
                                    f"{where(picked) if picked else 'none'}"))
        findings += [_unloadable(p.copy, bits) for p in group
                     if p.copy.error or (p.copy.machine and _bits(p.copy) != bits)]
    return findings


def _signature_findings(placed: list[PlacedCopy]) -> list[Finding]:
    """A copy of a DLL that NVIDIA signs, without a valid NVIDIA signature, is not
    NVIDIA's file (or was changed since): whatever loads it by name gets it."""
    return [Finding(PROBLEM, "signature", f"{p.copy.name} in {where(p.copy)}: must be "
                    f"signed by {p.copy.signature_required!r}, but is {p.copy.signature_text}",
                    f"replace it with the original from {p.copy.signature_required} "
                    "(reinstall the CUDA toolkit or cuDNN), or take its folder off PATH")
            for p in placed if p.copy.signature_required and p.copy.signature != "ok"]


def _by_name(placed: list[PlacedCopy]) -> dict[str, list[PlacedCopy]]:
    groups: dict[str, list[PlacedCopy]] = {}
    for item in placed:
        groups.setdefault(item.copy.name.lower(), []).append(item)
    return groups


def _bits(copy: LibraryCopy) -> int:
    """The word size of the machine the copy's header names, as its platform counts it."""
    return next((p.bits[copy.machine] for p in all_platforms() if copy.machine in p.bits), 0)


def _unloadable(copy: LibraryCopy, bits: int) -> Finding:
    if copy.error:
        return Finding(PROBLEM, "dll", f"{copy.path}: {copy.error}",
                       "the file is damaged (a truncated download or an antivirus): "
                       "reinstall it")
    return Finding(PROBLEM, "dll", f"{copy.path} is a {_bits(copy)}-bit ({copy.machine}) "
                   f"DLL; a {bits}-bit process cannot load it (Windows error 193)",
                   "replace it with the 64-bit (x64) build, or take its folder off PATH")


def _driver_findings(report: DriverReport, placed: list[PlacedCopy],
                     compat: DriverTable) -> list[Finding]:
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
                PROBLEM, "driver", f"{where(item.copy)} is a CUDA {needs} runtime; the "
                f"driver supports only CUDA {report.cuda}", _update_hint(needs, compat)))
    return findings


def _runs(cuda: str, driver: DriverReport, compat: DriverTable) -> bool:
    """Whether the driver runs a CUDA `cuda` runtime: the bootstrap's rule, with the
    figures of compat.toml in place of a recipe's."""
    return runs_on(driver.facts.version, driver.facts.cuda, cuda,
                   compat.oldest_driver_for(cuda), bool(compat.minor_compatible_from(cuda)))


def _update_hint(cuda: str, compat: DriverTable) -> str:
    minimum = compat.oldest_driver_for(cuda)
    if minimum:
        return f"update the NVIDIA driver to >= {minimum}"
    return (f"update the NVIDIA driver to one that supports CUDA {cuda} (bundler/windows/"
            "compat.toml has no row for it: see NVIDIA's CUDA Toolkit release notes)")


def _cudart_cuda(name: str) -> str:
    """The CUDA a cudart's name pins: cudart64_101 -> 10.1, cudart64_110 -> 11.0."""
    # The facts of the platform whose library the name is (cudart64_101.dll: Windows's).
    platform = next((p for p in all_platforms() if p.is_library(name)), None)
    release = platform.facts().cuda_release_of(name) \
        if platform is not None and name.lower().startswith("cudart") else None
    return f"{release[0]}.{release[1]}" if release else ""


def _framework_findings(frameworks: list[FrameworkReport], placed: list[PlacedCopy],
                        driver: DriverReport, compat: DriverTable) -> list[Finding]:
    if not frameworks:
        names = ", ".join(compat.framework_distributions)
        return [Finding(NOTE, "framework", f"no GPU framework installed in this Python "
                        f"({names})")]
    findings = []
    for framework in frameworks:
        installed, expects = framework.installed, framework.expects
        title = f"{installed.distribution} {installed.version}"
        findings += _own_copy_conflicts(title, framework, placed)
        if expects is None:
            findings.append(Finding(NOTE, "framework", f"{title}: not in the compatibility "
                                    "table (bundler/windows/compat.toml); not checked"))
            continue
        findings.append(Finding(OK, "framework", f"{title} ({expects.name}) expects CUDA "
                                f"{expects.cuda}, cuDNN {expects.cudnn}"))
        findings += _framework_driver(title, expects, driver, compat)
        findings += _framework_loads(title, expects, placed)
    return findings


def _framework_driver(title: str, expects: FrameworkEntry, driver: DriverReport,
                      compat: DriverTable) -> list[Finding]:
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
                                    f"{where(picked)}"))
    return findings


def _own_copy_conflicts(title: str, framework: FrameworkReport,
                        placed: list[PlacedCopy]) -> list[Finding]:
    """A framework that preloads its own copy (torch, from torch/lib, by full path) breaks
    when another DLL of that name is loaded first: by a bundle's bootstrap, or by another
    framework's bare-name load, which picks the copy on the search path."""
    findings = []
    for name in framework.own_dlls:
        other = next((p.copy for p in placed if p.role == "picked"
                      and p.copy.name.lower() == name.lower()), None)
        if other is not None:
            findings.append(Finding(
                PROBLEM, "framework", f"{title} ships its own {name}; another {name} is "
                f"first on the DLL search path ({where(other)}): if another framework "
                f"loads it by name before {framework.installed.distribution} is imported, "
                f"{framework.installed.distribution} fails to load its own (WinError 127)",
                f"import {framework.installed.distribution} first, or remove that folder "
                "from PATH; a bundle packed for this app is refused for the same reason"))
    return findings


def render_machine(report: MachineReport) -> list[str]:
    # This machine's own platform, where its files are not what doctor judged (Linux),
    # is told as examine_linux made it; else the search order and the files it reaches.
    if report.platform and report.platform != _files_platform(this_machine()).name:
        return render_linux(report, _dll_table(report) if report.dlls else [])
    lines = [f"bundler doctor: this machine ({report.python}, {report.bits}-bit)", "",
             "where a bare-name DLL load looks, in order (see bundler/windows/windows.toml):"]
    lines += format_table(("#", "folder", "reached as"), (
        (f.order or "-", f.path, f.label + ("" if f.searched else " (not searched)"))
        for f in report.search_order))
    lines += ["", "cuDNN / CUDA DLLs found:", *_dll_table(report)]
    lines += ["", "driver:", *_render_driver(report.driver), "", "findings:"]
    return lines + render_findings(report.findings)


def _dll_table(report: MachineReport) -> list[str]:
    lines = []
    if report.dlls:
        lines += format_table(("name", "role", "version", "machine", "signature", "folder"), (
            (p.copy.name, p.role, p.copy.version or "-", p.copy.machine or "?",
             p.copy.signature or "-",
             f"{os.path.dirname(p.copy.path)} ({p.copy.folder.label})")
            for p in report.dlls))
    else:
        lines.append("  none")
    return lines


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


