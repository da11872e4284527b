"""The public JSON of `bundler doctor --json`: a view built on purpose, with a version
(`"schema": 2`), the keys docs/diagnosing.md documents, the same keys for every platform
and the platform's own words (the driver's library is `driver_library`, "nvcuda.dll" or
"libcuda.so.1"), never a dump of doctor's internal dataclasses. (auditwheel's `show`
does the same.) A key is added freely; one renamed or removed raises SCHEMA. `dlls` is
kept beside `libraries`, the same value, as a deprecated alias until 1.0."""

from __future__ import annotations

from dataclasses import asdict

from bundler.diagnose.doctor.bundle_checks import BundleReport
from bundler.diagnose.doctor.findings import (
    DriverReport,
    Finding,
    FrameworkReport,
    MachineReport,
    PlacedCopy,
)
from bundler.targets.registry import Platform, SearchFolder

SCHEMA = 2

# The keys of a bundle report's driver (runtime/rules.py's judge_driver), named for every
# platform: judge_driver's "nvcuda" is the driver library's path.
_BUNDLE_DRIVER = ("driver_version", "driver_cuda", "needs_cuda", "min_driver",
                  "min_driver_compat", "problem", "note")


def machine_view(report: MachineReport, here: Platform | None) -> dict:
    libraries = [copy_view(p) for p in report.libraries]
    return {
        "schema": SCHEMA,
        "kind": "machine",
        "platform": report.platform,
        "python": report.python,
        "bits": report.bits,
        "search_path_variable": here.search_path_variable if here is not None else "",
        "search_order": [_folder(f) for f in report.search_order],
        "libraries": libraries,
        "dlls": libraries,   # deprecated alias of libraries until 1.0
        "driver": _machine_driver(report.driver),
        "frameworks": [_framework(f) for f in report.frameworks],
        "findings": [_finding(f) for f in report.findings],
        "ok": report.ok,
    }


def bundle_view(report: BundleReport, platform: Platform) -> dict:
    """`platform`: the one the bundle's manifest names (its driver library's name)."""
    libraries = [{"facts": asdict(d.facts),
                  "on_search_path": [copy_view(p) for p in d.on_search_path]}
                 for d in report.dlls]
    driver = report.driver
    return {
        "schema": SCHEMA,
        "kind": "bundle",
        "app": report.app,
        "manifest": report.manifest,
        "recipe": report.recipe,
        "platform": report.platform,
        "versions": dict(report.versions),
        "require_driver": report.require_driver,
        "verify": report.verify,
        "libraries": libraries,
        "dlls": libraries,   # deprecated alias of libraries until 1.0
        "driver": {"checked": bool(driver), "driver_library": platform.driver_library,
                   "path": driver.get("nvcuda", ""),
                   **{key: driver.get(key, "") for key in _BUNDLE_DRIVER}},
        "findings": [_finding(f) for f in report.findings],
        "ok": report.ok,
    }


def copy_view(placed: PlacedCopy) -> dict:
    copy = placed.copy
    signed = bool(copy.signature or copy.signature_required)
    return {
        "name": copy.name,
        "path": copy.path,
        "platform": copy.platform,
        "role": placed.role,
        "reached_as": copy.folder.label,
        "order": copy.folder.order,
        "machine": copy.machine,
        "version": copy.version,
        "size": copy.size,
        "sha256": copy.sha256,
        "error": copy.error,
        "signature": {"status": copy.signature, "text": copy.signature_text,
                      "required": copy.signature_required} if signed else None,
    }


def _folder(folder: SearchFolder) -> dict:
    return {"path": folder.path, "label": folder.label, "searched": folder.searched,
            "order": folder.order}


def _machine_driver(report: DriverReport) -> dict:
    facts = report.facts
    return {"checked": facts.checked, "driver_library": facts.library, "path": facts.path,
            "load_error": facts.load_error, "cuda_driver_version": facts.cuda,
            "cuda": report.cuda, "cuda_by_version": report.cuda_by_version,
            "version": facts.version, "version_from": facts.version_from,
            "nvidia_smi": facts.nvidia_smi, "gpus": list(facts.gpus)}


def _framework(framework: FrameworkReport) -> dict:
    row = framework.expects
    return {"distribution": framework.installed.distribution,
            "version": framework.installed.version,
            "location": framework.installed.location,
            "opens": framework.opens,
            "libraries": list(framework.libraries),
            "table_row": None if row is None else {
                "name": row.name, "cuda": row.cuda, "cudnn": row.cudnn,
                "loads": list(row.loads), "bundles_runtime": row.bundles_runtime}}


def _finding(finding: Finding) -> dict:
    return {"level": finding.level, "about": finding.about, "message": finding.message,
            "hint": finding.hint}
