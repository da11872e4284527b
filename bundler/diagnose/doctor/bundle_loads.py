"""`bundler doctor APPDIR`: how the bootstrap loads a bundle's libraries, said the same way
for every platform. The bootstrap (runtime/loader_windows.py, runtime/loader_linux.py)
opens every file of the manifest's load_order by absolute path, dependencies first, before
the app's imports; the loader then answers a later load by name (cuDNN's of its
sub-libraries: LoadLibrary by DLL name, dlopen by SONAME) with the copy already loaded.
Without that preload a bare-name load searches the platform's way (PATH, or
LD_LIBRARY_PATH and the ldconfig cache): what it would get instead is bundle_checks.py's
`_shadow_findings`, from the platform's `bare_name_search`."""

from __future__ import annotations

from pathlib import PurePosixPath

from bundler.diagnose.doctor.findings import OK, Finding, plural
from bundler.targets.registry import Platform


def preload_findings(platform: Platform, load_order: tuple[str, ...]) -> list[Finding]:
    names = [PurePosixPath(p).name for p in load_order]
    if not names:
        return []
    variable = platform.search_path_variable
    return [Finding(OK, "bundle", f"the bootstrap loads the {len(names)} bundled "
                    f"{plural(platform.library_word)} by absolute path, dependencies first "
                    f"({', '.join(names)}), before the app's imports: a later load by name "
                    f"(cuDNN's of its sub-libraries) gets these whatever {variable} holds; "
                    f"the bootstrap never reads or writes {variable}")]
