"""Machine doctor's Linux findings: which copy of each cuDNN/CUDA library a bare-name
load would get (the platform's bare_name_search, bundler/linux/library_search.py:
LD_LIBRARY_PATH, then the ldconfig cache) and which copies it shadows, and the driver's
libcuda.so.1 (the platform's probe_driver: cuDriverGetVersion through ctypes)."""

from __future__ import annotations

from collections.abc import Mapping

from bundler.diagnose.doctor.findings import NOTE, OK, Finding
from bundler.platforms import FoundLibrary, Platform


def linux_machine_findings(platform: Platform, environ: Mapping[str, str]) -> list[Finding]:
    search = platform.bare_name_search
    found = search(platform.driver_table().scan, environ.get("LD_LIBRARY_PATH", "")
                   ) if search else []
    findings = [_library_finding(name, [f for f in found if f.name == name])
                for name in sorted({f.name for f in found})]
    if not found:
        findings.append(Finding(NOTE, "library", "no cuDNN/CUDA library is reachable by bare "
                                "name (LD_LIBRARY_PATH, ldconfig cache)"))
    return findings + [_driver_finding(platform)]


def _library_finding(name: str, copies: list[FoundLibrary]) -> Finding:
    picked, shadowed = copies[0], copies[1:]
    text = f"{name}: a bare-name load gets {picked.path} ({picked.reached_as})"
    if not shadowed:
        return Finding(OK, "library", text)
    others = "; ".join(f"{c.path} ({c.reached_as})" for c in shadowed)
    return Finding(NOTE, "library", f"{text}, shadowing {others}",
                   "a bundle's bootstrap loads its own copy by absolute path, so these "
                   "do not reach a packed app")


def _driver_finding(platform: Platform) -> Finding:
    if platform.probe_driver is None:
        return Finding(NOTE, "driver", "this platform has no driver probe")
    path, version, release, error = platform.probe_driver()
    if error or not version:
        return Finding(NOTE, "driver", f"no NVIDIA driver: {error or 'no version'}",
                       "install the NVIDIA driver to run a GPU app here")
    cuda = f"{version // 1000}.{version % 1000 // 10}"
    named = f", release {release}" if release else ""
    return Finding(OK, "driver", f"NVIDIA driver {path}{named}: supports CUDA {cuda}")
