"""`bundler doctor APPDIR` of a Linux bundle on Linux: how each bundled library would
load. The bootstrap (runtime/loader_linux.py, `_activate_linux`) opens every file of the
manifest's load_order by absolute path with RTLD_GLOBAL, dependencies first, before the
app's imports; glibc then answers a later dlopen by SONAME (cuDNN's of its
sub-libraries) with the copy already mapped. Without that preload, a bare-name load
searches LD_LIBRARY_PATH, then the library's RUNPATH, then the ldconfig cache: what
it would get instead is named here (the platform's bare_name_search)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from bundler.diagnose.doctor.findings import NOTE, OK, Finding
from bundler.runtime.rules import same_file
from bundler.targets.registry import Platform


def linux_load_findings(platform: Platform, root: Path, load_order: tuple[str, ...],
                        environ: Mapping[str, str]) -> list[Finding]:
    names = [PurePosixPath(p).name for p in load_order]
    if not names:
        return []
    findings = [Finding(OK, "bundle", f"the bootstrap loads the {len(names)} bundled "
                        "libraries by absolute path with RTLD_GLOBAL, dependencies first "
                        f"({', '.join(names)}), before the app's imports: a later dlopen by "
                        "SONAME (cuDNN's of its sub-libraries) gets these whatever "
                        "LD_LIBRARY_PATH holds; the bootstrap never reads or writes it")]
    found = platform.bare_name_search(tuple(names),
                                      environ.get(platform.search_path_variable, ""))
    bundled = {PurePosixPath(p).name: root / p for p in load_order}
    for copy in found:
        own = bundled[copy.name]
        if copy.role != "picked" or same_file(copy.path, str(own)):
            continue
        findings.append(Finding(
            NOTE, "bundle", f"without the bootstrap, a bare-name load of {copy.name} would "
            f"get {copy.path} ({copy.reached_as}), not the bundled {own}: the bootstrap's "
            "preload by absolute path is what keeps it out",
            "keep the bootstrap lines first in the entry script (bundler's runtime hook "
            "first in a PyInstaller app)"))
    return findings
