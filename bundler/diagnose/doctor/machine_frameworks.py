"""Machine doctor's frameworks, one path for every platform: each GPU framework installed
in the Python running doctor that the platform's driver table has a row for (the CUDA
and cuDNN it is built for, the libraries it loads by name) or whose way of opening
NVIDIA's libraries the platform's facts say (`framework_opens`: "absolute", from its own
lib folder or site-packages/nvidia; "preload", through an API the app calls). Judged the
same everywhere: the driver against its CUDA, each library it loads by name against what
a bare-name load picks, and each library it opens by path against the copy a bare-name
load would give a library loading that name first (two copies in one process: the
platform's `app_copy_harm`)."""

from __future__ import annotations

import os

from bundler.diagnose.doctor.findings import (
    NOTE,
    OK,
    PROBLEM,
    DriverReport,
    Finding,
    FrameworkReport,
    PlacedCopy,
    plural,
    where,
)
from bundler.diagnose.doctor.host import (
    LibraryCopy,
    framework_libraries,
    installed_frameworks,
)
from bundler.runtime.rules import runs_on
from bundler.support.text_tables import format_table
from bundler.targets.registry import DriverTable, FrameworkEntry, Platform


def gather_frameworks(here: Platform, compat: DriverTable) -> list[FrameworkReport]:
    opens = dict(here.facts().framework_opens)
    return [FrameworkReport(f, compat.framework_entry(f.distribution, f.version),
                            framework_libraries(f, here, compat.scan),
                            opens.get(f.distribution.lower(), ""))
            for f in installed_frameworks(here, compat)]


def runs(cuda: str, driver: DriverReport, compat: DriverTable) -> bool:
    """Whether the driver runs a CUDA `cuda` runtime: the bootstrap's rule, with the
    figures of the platform's driver table in place of a recipe's."""
    return runs_on(driver.facts.version, driver.facts.cuda, cuda,
                   compat.oldest_driver_for(cuda), bool(compat.minor_compatible_from(cuda)))


def update_hint(cuda: str, compat: DriverTable) -> str:
    minimum = compat.oldest_driver_for(cuda)
    if minimum:
        return f"update the NVIDIA driver to >= {minimum}"
    return (f"update the NVIDIA driver to one that supports CUDA {cuda} (the driver table, "
            "compat.toml, has no row for it: see NVIDIA's CUDA Toolkit release notes)")


def framework_findings(here: Platform, frameworks: list[FrameworkReport],
                       placed: list[PlacedCopy], driver: DriverReport,
                       compat: DriverTable) -> list[Finding]:
    if not frameworks:
        names = ", ".join(dict.fromkeys((*compat.framework_distributions,
                                         *(n for n, _ in here.facts().framework_opens))))
        return [Finding(NOTE, "framework", f"no GPU framework installed in this Python "
                        f"({names})")]
    findings = []
    for framework in frameworks:
        title = f"{framework.installed.distribution} {framework.installed.version}"
        findings += _row_findings(here, title, framework.expects, placed, driver, compat)
        findings += _opens_findings(here, title, framework, placed)
    return findings


def _row_findings(here: Platform, title: str, expects: FrameworkEntry | None,
                  placed: list[PlacedCopy], driver: DriverReport,
                  compat: DriverTable) -> list[Finding]:
    if expects is None:
        return [Finding(NOTE, "framework", f"{title}: no row in the {here.os_name} driver "
                        "table (compat.toml's [[framework]]): the CUDA and cuDNN it is built "
                        "for are not checked")]
    findings = [Finding(OK, "framework", f"{title} ({expects.name}) expects CUDA "
                        f"{expects.cuda}, cuDNN {expects.cudnn}")]
    if driver.facts.cuda and not runs(expects.cuda, driver, compat):
        findings.append(Finding(PROBLEM, "framework", f"{title} is built for CUDA "
                                f"{expects.cuda}; the driver supports only CUDA {driver.cuda}",
                                update_hint(expects.cuda, compat)))
    if expects.bundles_runtime:
        return findings + [Finding(NOTE, "framework", f"{title} ships its own CUDA and "
                                   f"cuDNN {plural(here.library_word)}; it needs only the driver")]
    for name in expects.loads:
        picked = _picked(here, name, placed)
        if picked is None:
            findings.append(Finding(
                PROBLEM, "framework", f"{title} loads {name} by name; no folder on the "
                f"{here.library_word} search path has it", f"install CUDA {expects.cuda} and "
                f"cuDNN {expects.cudnn} and put their folders on {here.search_path_variable}, "
                "or pack the app with its own runtime (bundler pack)"))
        else:
            findings.append(Finding(OK, "framework", f"{title} loads {name}: {where(picked)}"))
    return findings


def _picked(here: Platform, name: str, placed: list[PlacedCopy]) -> LibraryCopy | None:
    """The copy of `name` a bare-name load picks, or None."""
    return next((p.copy for p in placed if p.role == "picked"
                 and here.same_name(p.copy.name, name)), None)


def _opens_findings(here: Platform, title: str, framework: FrameworkReport,
                    placed: list[PlacedCopy]) -> list[Finding]:
    own, distribution = framework.libraries, framework.installed.distribution
    variable = here.search_path_variable
    if not own:
        return [Finding(NOTE, "framework", f"{title}: no NVIDIA {here.library_word} in its "
                        "own lib folder nor in site-packages/nvidia (a CPU build, or one "
                        "that loads them by name)")] if framework.opens else []
    findings = []
    if framework.opens == "absolute":
        findings.append(Finding(OK, "framework", f"{title} opens by absolute path: "
                                f"{', '.join(own)}; {variable} does not choose these"))
    elif framework.opens == "preload":
        function = dict(here.facts().framework_preload).get(distribution.lower(), "preload")
        picked = [f"{c.name} -> {c.path} ({c.folder.label})" for c in
                  (_picked(here, os.path.basename(path), placed) for path in own) if c]
        findings.append(Finding(
            NOTE, "framework", f"{title}: {function}() loads {', '.join(own)} by path when "
            "the app calls it; otherwise its CUDA provider loads them by bare name: "
            f"{'; '.join(picked) or 'none is reachable by bare name'}"))
    else:
        findings.append(Finding(NOTE, "framework", f"{title}: {', '.join(own)} (how it "
                                f"opens them is not in the {here.os_name} facts' "
                                "framework_opens: not judged)"))
    for path in own:
        name = os.path.basename(path)
        other = _picked(here, name, placed)
        if other is None or os.path.normcase(other.path) == os.path.normcase(path):
            continue
        findings.append(Finding(
            PROBLEM, "framework", f"{title}: a bare-name load of {name} gets "
            f"{where(other)}, not its own {path}: a library that loads {name} by name "
            f"before {distribution} is imported maps that copy too "
            f"({here.app_copy_harm.format(name=name)})",
            f"import {distribution} first, or take that folder off {variable}; a bundle "
            "packed for this app is refused for the same reason"))
    return findings


def framework_rows(frameworks: tuple[FrameworkReport, ...]) -> list[str]:
    return format_table(("framework", "table row", "opens", "libraries"), (
        (f"{f.installed.distribution} {f.installed.version}",
         f"CUDA {f.expects.cuda}, cuDNN {f.expects.cudnn}" if f.expects else "-",
         f.opens or "-", ", ".join(os.path.basename(p) for p in f.libraries) or "-")
        for f in frameworks))
