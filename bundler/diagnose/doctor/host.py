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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

from bundler.diagnose.inspection import judge_signature
from bundler.errors import CheckError
from bundler.platforms.library_imports import is_runtime_library
from bundler.platforms.registry import DriverTable, this_machine, windows
from bundler.recipe.load import Recipe, shipped_recipes
from bundler.runtime.loader_windows import probe_driver as load_nvcuda
from bundler.runtime.rules import driver_from_file_version
from bundler.support.hashing import sha256_file

_NVIDIA_SMI_TIMEOUT = 20  # seconds; it can take a while to wake a GPU


@dataclass(frozen=True)
class SearchFolder:
    path: str
    label: str       # how it is reached: "System32", "PATH[2]", "CUDA_PATH_V10_1" ...
    searched: bool   # True if a bare-name load searches it; False for CUDA_PATH folders
    order: int       # position in the search order (1-based); 0 when not searched


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
    """System32, System and the Windows folder as the loader sees them (not from
    %SystemRoot%); empty off Windows."""
    if this_machine() is not windows():
        return {}
    import ctypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    folders = {}
    for key, function in (("system32", kernel32.GetSystemDirectoryW),
                          ("windows", kernel32.GetWindowsDirectoryW)):
        buffer = ctypes.create_unicode_buffer(32768)
        function(buffer, len(buffer))
        folders[key] = buffer.value
    folders["system16"] = os.path.join(folders["windows"], "System")
    return folders


def search_folders(environ: Mapping[str, str], application: str,
                   system: Mapping[str, str] | None = None,
                   current: str | None = None) -> list[SearchFolder]:
    """The bare-name search order (windows.toml), then the CUDA_PATH bin folders.

    `system` maps "system32"/"system16"/"windows" to folders (queried on Windows).
    A folder reached twice is listed once, under its first label plus the others.
    """
    if system is None:
        system = system_folders()
    named = {"application": ("application folder", application),
             "current": ("current folder", current if current is not None else os.getcwd()),
             "system32": ("System32", system.get("system32", "")),
             "system16": ("System", system.get("system16", "")),
             "windows": ("Windows folder", system.get("windows", ""))}
    ordered: list[tuple[str, str, bool]] = []
    for step in windows().facts().dll_search_order:
        if step == "path":
            ordered += [(f"PATH[{i}]", entry, True) for i, entry in enumerate(
                _path_entries(environ.get("PATH", "")), start=1)]
        elif named[step][1]:
            ordered.append((*named[step], True))
    ordered += [(variable, os.path.join(environ[variable], "bin"), False)
                for variable in sorted(environ, key=_cuda_path_order)
                if windows().facts().is_cuda_path_variable(variable) and environ[variable]]
    return _merge(ordered)


def _path_entries(value: str) -> list[str]:
    # Windows accepts quoted entries ("C:\\Program Files\\x") and empty ones.
    return [entry.strip().strip('"') for entry in value.split(os.pathsep) if entry.strip()]


def _cuda_path_order(variable: str) -> tuple[int, str]:
    return (0 if variable.upper() == "CUDA_PATH" else 1, variable.upper())


def _merge(ordered: list[tuple[str, str, bool]]) -> list[SearchFolder]:
    seen: dict[str, int] = {}
    merged: list[SearchFolder] = []
    for label, path, searched in ordered:
        key = os.path.normcase(os.path.abspath(path))
        if key in seen:
            first = merged[seen[key]]
            merged[seen[key]] = SearchFolder(first.path, f"{first.label}, {label}",
                                             first.searched, first.order)
            continue
        seen[key] = len(merged)
        order = sum(f.searched for f in merged) + 1 if searched else 0
        merged.append(SearchFolder(path, label, searched, order))
    return merged


def find_copies(folders: Iterable[SearchFolder], patterns: Iterable[str]) -> list[LibraryCopy]:
    """Every file in the folders matching a pattern (case-insensitive), in folder order.
    Copies of a name found more than once are hashed, to tell equal from different."""
    patterns = tuple(patterns)
    recipes = tuple(shipped_recipes())
    found = [_copy(folder, entry, recipes) for folder in folders
             for entry in _listing(folder.path) if windows().matches(entry.name, patterns)]
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


def _copy(folder: SearchFolder, entry: os.DirEntry[str], recipes: tuple[Recipe, ...]
          ) -> LibraryCopy:
    try:
        info = windows().read_library(Path(entry.path))
        machine, version, error = info.machine, info.file_version, ""
    except CheckError as exc:
        machine, version, error = "", "", exc.message
    copy = LibraryCopy(name=entry.name, path=entry.path, folder=folder,
                   size=entry.stat().st_size, machine=machine, version=version, sha256="",
                   error=error)
    if error:
        return copy
    required, found = judge_signature(Path(entry.path), entry.name, recipes)
    if found is None:   # doctor examines a Windows machine: DLLs always have a scheme
        return copy
    return replace(copy, signature=found.status, signature_text=found.describe(),
                   signature_required=required)


def _hashed(copy: LibraryCopy) -> LibraryCopy:
    return replace(copy, sha256=sha256_file(Path(copy.path)))


def probe_driver(compat: DriverTable, windows_driver: bool) -> DriverFacts:
    """Ask nvcuda.dll (`windows_driver`: this machine is Windows) and nvidia-smi (when
    present) about the driver."""
    smi = _nvidia_smi(compat)
    smi_version, gpus = _ask_nvidia_smi(smi) if smi else ("", ())
    if not windows_driver:
        return DriverFacts(False, "", "", 0, smi_version, "nvidia-smi" if smi_version else "",
                           smi, gpus)
    nvcuda, cuda, file_version, error = load_nvcuda()
    version, version_from = smi_version, "nvidia-smi" if smi_version else ""
    if nvcuda and not version:
        version = driver_from_file_version(file_version)
        version_from = f"nvcuda.dll file version {file_version}" if version else ""
    return DriverFacts(True, nvcuda, error if not nvcuda else "", cuda,
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


def own_runtime_dlls(framework: InstalledFramework) -> tuple[str, ...]:
    """The CUDA/cuDNN DLLs a framework ships in its own lib folder (torch/lib)."""
    lib = Path(framework.location) / framework.distribution.lower() / "lib"
    try:
        names = sorted(p.name for p in lib.iterdir() if windows().is_library(p.name))
    except OSError:
        return ()
    return tuple(n for n in names if is_runtime_library(n))


def site_nvidia_libraries(framework: InstalledFramework, patterns: Iterable[str],
                          matches: Callable[[str, Iterable[str]], bool]) -> tuple[str, ...]:
    """The cuDNN/CUDA libraries NVIDIA's wheels installed beside a framework, by absolute
    path (site-packages/nvidia/*/lib: where torch and Paddle open them on Linux)."""
    patterns = tuple(patterns)
    found = sorted(Path(framework.location).glob("nvidia/*/lib/*"))
    return tuple(str(p) for p in found if p.is_file() and matches(p.name, patterns))
