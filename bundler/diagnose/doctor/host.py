"""Facts about this machine that `bundler doctor` judges: where a bare-name DLL load
looks and what it finds there, the NVIDIA driver, and the installed frameworks.

Only gathering happens here; doctor.py decides what is a problem. The folders a
bare-name load searches, in order, are in windows.toml (dll_search_order).
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

from bundler.diagnose.inspection import judge_signature
from bundler.errors import CheckError
from bundler.recipe.library_imports import is_runtime_library
from bundler.recipe.load import Recipe, shipped_recipes
from bundler.support.hashing import sha256_file
from bundler.targets.registry import DriverTable, Platform, SearchFolder, this_machine

_NVIDIA_SMI_TIMEOUT = 20  # seconds; it can take a while to wake a GPU


@dataclass(frozen=True)
class LibraryCopy:
    name: str        # the file name as found on disk
    path: str
    folder: SearchFolder
    size: int
    machine: str
    version: str
    sha256: str      # computed only where two copies of a name need telling apart
    error: str = ""  # set when the file is not a readable DLL
    # Its Authenticode signature: status (bundler.windows.authenticode), in words, and
    # the signer a shipped recipe asks for this name ("" if none asks).
    signature: str = ""
    signature_text: str = ""
    signature_required: str = ""


@dataclass(frozen=True)
class DriverFacts:
    checked: bool            # False off Windows: there is no driver to ask
    nvcuda: str              # where nvcuda.dll was loaded from; "" if it was not
    load_error: str
    cuda: int                # cuDriverGetVersion, e.g. 10010; 0 if unknown
    version: str             # the driver's version, e.g. "418.96"; "" if unknown
    version_from: str        # where `version` was read
    nvidia_smi: str          # its path; "" if absent
    gpus: tuple[str, ...]


@dataclass(frozen=True)
class InstalledFramework:
    distribution: str
    version: str
    location: str


def process_bits() -> int:
    return struct.calcsize("P") * 8


def system_folders() -> dict[str, str]:
    """System32, System and the Windows folder as this machine's loader sees them (the
    platform's `system_folders`: kernel32 on Windows); empty where the OS has none."""
    here = this_machine()
    return dict(here.system_folders()) if here is not None else {}


def find_copies(platform: Platform, folders: Iterable[SearchFolder], patterns: Iterable[str]
                ) -> list[LibraryCopy]:
    """Every file in the folders matching a pattern (as `platform` compares names), in
    folder order, read as `platform`'s libraries. Copies of a name found more than once
    are hashed, to tell equal from different."""
    patterns = tuple(patterns)
    recipes = tuple(shipped_recipes())
    found = [_copy(platform, folder, entry, recipes) for folder in folders
             for entry in _listing(folder.path) if platform.matches(entry.name, patterns)]
    counts: dict[str, int] = {}
    for copy in found:
        counts[copy.name.lower()] = counts.get(copy.name.lower(), 0) + 1
    return [_hashed(c) if counts[c.name.lower()] > 1 else c for c in found]


def _listing(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted((e for e in entries if e.is_file()), key=lambda e: e.name.lower())
    except OSError:
        return []   # a PATH entry that does not exist is common and harmless


def _copy(platform: Platform, folder: SearchFolder, entry: os.DirEntry[str],
          recipes: tuple[Recipe, ...]) -> LibraryCopy:
    try:
        info = platform.read_library(Path(entry.path))
        machine, version, error = info.machine, info.file_version, ""
    except CheckError as exc:
        machine, version, error = "", "", exc.message
    copy = LibraryCopy(name=entry.name, path=entry.path, folder=folder,
                   size=entry.stat().st_size, machine=machine, version=version, sha256="",
                   error=error)
    if error:
        return copy
    required, found = judge_signature(Path(entry.path), entry.name, recipes, platform)
    if found is None:   # a platform without code signing
        return copy
    return replace(copy, signature=found.status, signature_text=found.describe(),
                   signature_required=required)


def _hashed(copy: LibraryCopy) -> LibraryCopy:
    return replace(copy, sha256=sha256_file(Path(copy.path)))


def probe_driver(compat: DriverTable, platform: Platform | None) -> DriverFacts:
    """Ask the driver `platform` probes (this machine's: nvcuda.dll on Windows; None:
    not asked) and nvidia-smi (when present) about the driver."""
    smi = _nvidia_smi(compat)
    smi_version, gpus = _ask_nvidia_smi(smi) if smi else ("", ())
    if platform is None:
        return DriverFacts(False, "", "", 0, smi_version, "nvidia-smi" if smi_version else "",
                           smi, gpus)
    probe = platform.probe_driver()
    version, version_from = smi_version, "nvidia-smi" if smi_version else ""
    if probe.path and not version:
        version, version_from = probe.release, probe.release_from
    return DriverFacts(True, probe.path, probe.error if not probe.path else "", probe.cuda,
                       version, version_from, smi, gpus)


def _nvidia_smi(compat: DriverTable) -> str:
    found = shutil.which("nvidia-smi")
    if found:
        return found
    return next((p for p in compat.nvidia_smi if os.path.isfile(p)), "")


def _ask_nvidia_smi(smi: str) -> tuple[str, tuple[str, ...]]:
    """The driver version and GPU names, from `nvidia-smi --query-gpu`."""
    try:
        done = subprocess.run([smi, "--query-gpu=driver_version,name",
                               "--format=csv,noheader"], capture_output=True, text=True,
                              timeout=_NVIDIA_SMI_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return "", ()
    rows = [line.split(",", 1) for line in done.stdout.splitlines() if "," in line]
    if done.returncode or not rows:
        return "", ()
    return rows[0][0].strip(), tuple(row[1].strip() for row in rows)


def installed_frameworks(compat: DriverTable,
                         path: list[str] | None = None) -> list[InstalledFramework]:
    """The framework distributions installed in this Python (or on `path`), read from
    their metadata: importing TensorFlow to ask its version takes seconds and may crash."""
    return installed_distributions(compat.framework_distributions, path)


def installed_distributions(names: Iterable[str],
                            path: list[str] | None = None) -> list[InstalledFramework]:
    """Those of the distributions `names` installed in this Python (or on `path`)."""
    found: dict[str, InstalledFramework] = {}
    search = path if path is not None else sys.path
    for name in names:
        for dist in metadata.distributions(name=name, path=search):
            key = dist.metadata["Name"].lower()
            found.setdefault(key, InstalledFramework(
                distribution=dist.metadata["Name"], version=dist.version,
                location=str(dist.locate_file(""))))
    return sorted(found.values(), key=lambda f: f.distribution.lower())


def own_runtime_dlls(framework: InstalledFramework, platform: Platform) -> tuple[str, ...]:
    """The CUDA/cuDNN libraries a framework ships in its own lib folder (torch/lib)."""
    lib = Path(framework.location) / framework.distribution.lower() / "lib"
    try:
        names = sorted(p.name for p in lib.iterdir() if platform.is_library(p.name))
    except OSError:
        return ()
    return tuple(n for n in names if is_runtime_library(n, platform))


def site_nvidia_libraries(framework: InstalledFramework, patterns: Iterable[str],
                          matches: Callable[[str, Iterable[str]], bool]) -> tuple[str, ...]:
    """The cuDNN/CUDA libraries NVIDIA's wheels installed beside a framework, by absolute
    path (site-packages/nvidia/*/lib: where torch and Paddle open them on Linux)."""
    patterns = tuple(patterns)
    found = sorted(Path(framework.location).glob("nvidia/*/lib/*"))
    return tuple(str(p) for p in found if p.is_file() and matches(p.name, patterns))
