"""Machine doctor on Linux: which copy of each cuDNN/CUDA library a bare-name load would
get (the platform's bare_name_search, bundler/linux/library_search.py: LD_LIBRARY_PATH,
then the ldconfig cache) and which copies it shadows; the driver's libcuda.so.1 (the
platform's probe_driver: cuDriverGetVersion through ctypes); and how each installed GPU
framework opens NVIDIA's libraries (linux.toml's framework_opens: torch and Paddle by
absolute path from site-packages/nvidia/*/lib, onnxruntime through preload_dlls()).

Windows DLLs found on this machine's PATH are kept in the report, said to be files
only: what a Windows process would load is for doctor on Windows."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from bundler.diagnose.doctor.findings import (
    NOTE,
    OK,
    DriverReport,
    Finding,
    FrameworkReport,
    MachineReport,
    render_findings,
)
from bundler.diagnose.doctor.host import (
    DriverFacts,
    installed_distributions,
    site_nvidia_libraries,
)
from bundler.runtime.rules import cuda_text
from bundler.support.text_tables import format_table
from bundler.targets.registry import FoundLibrary, Platform


def examine_linux(platform: Platform, environ: Mapping[str, str],
                  windows_rows: MachineReport) -> MachineReport:
    """This Linux machine's report; `windows_rows`: the Windows DLL scan of PATH, kept
    only where it found DLLs."""
    scan = platform.driver_table().scan
    found = platform.bare_name_search(scan, environ.get(platform.search_path_variable, ""))
    frameworks = _frameworks(platform, scan)
    driver = _driver_facts(platform, windows_rows.driver.facts)
    findings = [_library_finding(name, [f for f in found if f.name == name])
                for name in sorted({f.name for f in found})]
    if not found:
        findings.append(Finding(NOTE, "library", "no cuDNN/CUDA library is reachable by bare "
                                "name (LD_LIBRARY_PATH, ldconfig cache)"))
    findings += [_driver_finding(driver)]
    findings += [f for fw in frameworks for f in _framework_findings(fw, found)]
    if windows_rows.dlls:
        findings.append(Finding(NOTE, "library", "the DLLs listed are Windows files on this "
                                "machine's PATH: doctor judged the files (machine, version, "
                                "signature), not what a Windows process would load"))
        findings += [f for f in windows_rows.findings if f.about in ("dll", "signature")]
    elif not frameworks:
        findings.append(Finding(NOTE, "framework", "no GPU framework installed in this "
                                f"Python ({', '.join(n for n, _ in _opens(platform))})"))
    return replace(windows_rows, platform=platform.name, libraries=tuple(found),
                   driver=DriverReport(driver, cuda_text(driver.cuda) if driver.cuda else "",
                                       ""),
                   frameworks=tuple(frameworks), findings=tuple(findings),
                   search_order=windows_rows.search_order if windows_rows.dlls else ())


def _opens(platform: Platform) -> tuple[tuple[str, str], ...]:
    return platform.facts().framework_opens


def _frameworks(platform: Platform, scan: tuple[str, ...]) -> list[FrameworkReport]:
    how = dict(_opens(platform))
    return [FrameworkReport(f, None, site_nvidia_libraries(f, scan, platform.matches),
                            opens=how.get(f.distribution.lower(), ""))
            for f in installed_distributions(how)]


def _driver_facts(platform: Platform, smi: DriverFacts) -> DriverFacts:
    """libcuda.so.1 as the CUDA runtime finds it, with nvidia-smi's answer beside it."""
    probe = platform.probe_driver()
    return replace(smi, checked=True, nvcuda=probe.path, load_error=probe.error,
                   cuda=probe.cuda, version=probe.release or smi.version,
                   version_from=probe.release_from if probe.release else smi.version_from)


def _library_finding(name: str, copies: list[FoundLibrary]) -> Finding:
    picked, shadowed = copies[0], copies[1:]
    text = f"{name}: a bare-name load gets {picked.path} ({picked.reached_as})"
    if not shadowed:
        return Finding(OK, "library", text)
    others = "; ".join(f"{c.path} ({c.reached_as})" for c in shadowed)
    return Finding(NOTE, "library", f"{text}, shadowing {others}",
                   "a bundle's bootstrap loads its own copy by absolute path, so these "
                   "do not reach a packed app")


def _driver_finding(driver: DriverFacts) -> Finding:
    if driver.load_error or not driver.cuda:
        return Finding(NOTE, "driver", f"no NVIDIA driver: {driver.load_error or 'no version'}",
                       "install the NVIDIA driver to run a GPU app here")
    named = f", release {driver.version}" if driver.version else ""
    return Finding(OK, "driver", f"NVIDIA driver {driver.nvcuda}{named}: supports CUDA "
                   f"{cuda_text(driver.cuda)}")


def _framework_findings(framework: FrameworkReport, found: list[FoundLibrary]
                        ) -> list[Finding]:
    title = f"{framework.installed.distribution} {framework.installed.version}"
    own = framework.own_dlls
    if not own:
        return [Finding(NOTE, "framework", f"{title}: no NVIDIA library in "
                        f"{os.path.join(framework.installed.location, 'nvidia')}/*/lib (a CPU "
                        "build, or one that ships its libraries inside its own folder)")]
    names = ", ".join(own)
    if framework.opens == "absolute":
        findings = [Finding(OK, "framework", f"{title} opens by absolute path: {names}; "
                            "LD_LIBRARY_PATH does not choose these")]
        findings += [Finding(NOTE, "framework", f"{title}: a bare-name load of {c.name} gets "
                             f"{c.path} ({c.reached_as}), not its {path}: a library that "
                             f"loads {c.name} by name before {framework.installed.distribution}"
                             " is imported maps that copy too")
                     for path in own for c in found if c.role == "picked"
                     and c.name == os.path.basename(path) and c.path != path]
        return findings
    if framework.opens == "preload":
        wanted = {os.path.basename(path) for path in own}
        picked = [f"{c.name} -> {c.path} ({c.reached_as})" for c in found
                  if c.role == "picked" and c.name in wanted]
        return [Finding(NOTE, "framework", f"{title}: preload_dlls() loads {names} by path "
                        "when the app calls it; otherwise its CUDA provider loads them by "
                        f"bare name: {'; '.join(picked) or 'none is reachable by bare name'}")]
    return [Finding(NOTE, "framework", f"{title}: {names} (how it opens them is not in "
                    "linux.toml's framework_opens: not judged)")]


def render_linux(report: MachineReport, dll_rows: list[str]) -> list[str]:
    lines = [f"bundler doctor: this machine ({report.python}, {report.bits}-bit, "
             f"{report.platform})", "",
             "cuDNN / CUDA libraries a bare-name load reaches (LD_LIBRARY_PATH in order, "
             "then the ldconfig cache; ld.so(8)):"]
    lines += format_table(("name", "role", "reached as", "path"), (
        (f.name, f.role, f.reached_as, f.path) for f in report.libraries)) \
        if report.libraries else ["  none"]
    facts = report.driver.facts
    rows = [("libcuda.so.1", facts.nvcuda or f"not found ({facts.load_error})")]
    if facts.cuda:
        rows.append(("supports CUDA", f"{report.driver.cuda} (cuDriverGetVersion {facts.cuda})"))
    if facts.version:
        rows.append(("driver version", f"{facts.version} ({facts.version_from})"))
    rows.append(("nvidia-smi", facts.nvidia_smi or "not found"))
    lines += ["", "driver:", *format_table(("", ""), rows, show_headers=False)]
    if report.frameworks:
        lines += ["", "frameworks (how each opens NVIDIA's libraries):"]
        lines += format_table(("framework", "opens", "libraries"), (
            (f"{f.installed.distribution} {f.installed.version}", f.opens or "-",
             ", ".join(os.path.basename(p) for p in f.own_dlls) or "-")
            for f in report.frameworks))
    if dll_rows:
        lines += ["", "Windows DLLs on this machine's PATH (files only):", *dll_rows]
    return lines + ["", "findings:"] + render_findings(report.findings)
