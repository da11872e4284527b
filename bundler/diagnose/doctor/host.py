"""Facts about this machine that `bundler doctor` judges, asked of a `Platform` (this
machine's, or a bundle's): where its bare-name load looks and which copy of a library it
reaches there (`search_folders`, `bare_name_search`), each copy read as a file (machine,
version, damage, signature), the NVIDIA driver (`probe_driver`, nvidia-smi), and the
installed frameworks with the libraries they open by path.

Only gathering happens here; machine_checks.py and bundle_checks.py judge.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path

from bundler.diagnose.inspection import judge_signature
from bundler.errors import CheckError
from bundler.recipe.library_imports import is_runtime_library
from bundler.recipe.load import Recipe, shipped_recipes
from bundler.support.hashing import sha256_file
from bundler.targets.registry import (
    DriverTable,
    FoundLibrary,
    Platform,
    SearchFolder,
    this_machine,
)

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
    error: str = ""  # set when the file is not a readable library of its platform
    # Its signature where its platform signs (Authenticode): status, in words, and the
    # signer a shipped recipe asks for this name ("" if none asks).
    signature: str = ""
    signature_text: str = ""
    signature_required: str = ""
    platform: str = ""   # the platform whose library file it is read as ("win-amd64")


@dataclass(frozen=True)
class PlacedCopy:
    """A library copy and what a bare-name load makes of it."""

    copy: LibraryCopy
    # "picked", "shadowed" (an earlier copy of the name wins), "not searched" (a folder
    # only named, such as CUDA_PATH's), "file only" (another platform's file, judged as
    # a file: no load of this machine reaches it)
    role: str


@dataclass(frozen=True)
class DriverFacts:
    checked: bool            # False where no platform of this machine has a driver to ask
    path: str                # the driver library's file, as loaded; "" if it was not
    load_error: str
    cuda: int                # cuDriverGetVersion, e.g. 10010; 0 if unknown
    version: str             # the driver's version, e.g. "418.96"; "" if unknown
    version_from: str        # where `version` was read
    nvidia_smi: str          # its path; "" if absent
    gpus: tuple[str, ...]
    library: str = ""        # the driver library's name (Platform.driver_library)


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
    found = [read_copy(platform, folder, entry.path, recipes) for folder in folders
             for entry in _listing(folder.path) if platform.matches(entry.name, patterns)]
    return hash_repeated(platform, found)


def reached_copies(platform: Platform, environ: Mapping[str, str], patterns: Iterable[str]
                   ) -> tuple[list[SearchFolder], list[PlacedCopy]]:
    """The folders a bare-name load of `platform` searches on this machine, and every
    copy of a library matching `patterns` it reaches (the platform's `bare_name_search`:
    which one it picks, which ones that shadows), then those in folders it only names
    (Windows's CUDA_PATH), each read as a file."""
    patterns = tuple(patterns)
    folders = platform.search_folders(environ, os.path.dirname(sys.executable))
    recipes = tuple(shipped_recipes())
    found = platform.bare_name_search(patterns,
                                      environ.get(platform.search_path_variable, ""))
    placed = [(read_copy(platform, _folder_of(f, folders, index), f.path, recipes), f.role)
              for index, f in enumerate(found, 1)]
    aside = [f for f in folders if not f.searched]
    placed += [(c, "not searched") for c in find_copies(platform, aside, patterns)]
    hashed = hash_repeated(platform, [c for c, _ in placed])
    return folders, [PlacedCopy(c, role) for c, (_, role) in zip(hashed, placed, strict=True)]


def _folder_of(found: FoundLibrary, folders: list[SearchFolder], index: int) -> SearchFolder:
    """The search folder a found copy lies in, as listed; one the listing lacks (the
    ldconfig cache's) is its own folder, labelled as the search reached it."""
    label = found.reached_as
    listed = next((f for f in folders if f.label == label and f.searched), None)
    return listed or SearchFolder(os.path.dirname(found.path), label, True, len(folders) + index)


def hash_repeated(platform: Platform, copies: list[LibraryCopy]) -> list[LibraryCopy]:
    """Copies of a name found more than once, hashed to tell equal from different."""
    counts: dict[str, int] = {}
    for copy in copies:
        counts[platform.name_key(copy.name)] = counts.get(platform.name_key(copy.name), 0) + 1
    return [_hashed(c) if counts[platform.name_key(c.name)] > 1 and not c.sha256 else c
            for c in copies]


def _listing(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted((e for e in entries if e.is_file()), key=lambda e: e.name.lower())
    except OSError:
        return []   # a PATH entry that does not exist is common and harmless


def read_copy(platform: Platform, folder: SearchFolder, path: str,
              recipes: tuple[Recipe, ...]) -> LibraryCopy:
    """One file read as `platform`'s library: machine, version, damage, signature."""
    name = os.path.basename(path)
    try:
        info = platform.read_library(Path(path))
        machine, version, error = info.machine, info.file_version, ""
    except CheckError as exc:
        machine, version, error = "", "", exc.message
    try:
        size = os.stat(path).st_size
    except OSError as exc:
        size, error = 0, error or f"{path}: {exc.strerror}"
    copy = LibraryCopy(name=name, path=path, folder=folder, size=size, machine=machine,
                       version=version, sha256="", error=error, platform=platform.name)
    if error:
        return copy
    required, found = judge_signature(Path(path), name, recipes, platform)
    if found is None:   # a platform without code signing
        return copy
    return replace(copy, signature=found.status, signature_text=found.describe(),
                   signature_required=required)


def _hashed(copy: LibraryCopy) -> LibraryCopy:
    try:
        return replace(copy, sha256=sha256_file(Path(copy.path)))
    except OSError:
        return copy


def probe_driver(compat: DriverTable, platform: Platform | None) -> DriverFacts:
    """Ask the driver `platform` probes (this machine's: nvcuda.dll on Windows,
    libcuda.so.1 on Linux; None: not asked) and nvidia-smi (when present)."""
    smi = _nvidia_smi(compat)
    smi_version, gpus = _ask_nvidia_smi(smi) if smi else ("", ())
    if platform is None:
        return DriverFacts(False, "", "", 0, smi_version, "nvidia-smi" if smi_version else "",
                           smi, gpus)
    probe = platform.probe_driver()
    version, version_from = smi_version, "nvidia-smi" if smi_version else ""
    if probe.path and probe.release:
        # The loaded driver's own release (libcuda's file name, nvcuda.dll's file
        # version) is the one the CUDA runtime gets; nvidia-smi's where it has none.
        version, version_from = probe.release, probe.release_from
    return DriverFacts(True, probe.path, probe.error if not probe.path else "", probe.cuda,
                       version, version_from, smi, gpus, platform.driver_library)


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


def installed_frameworks(platform: Platform, compat: DriverTable,
                         path: list[str] | None = None) -> list[InstalledFramework]:
    """The GPU frameworks installed in this Python (or on `path`) that the platform's
    driver table has rows for or its facts say how they open NVIDIA's libraries
    (`framework_opens`), read from their metadata: importing TensorFlow to ask its
    version takes seconds and may crash."""
    names = (*compat.framework_distributions,
             *(name for name, _ in platform.facts().framework_opens))
    return installed_distributions(dict.fromkeys(names), path)


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


def framework_libraries(framework: InstalledFramework, platform: Platform,
                        patterns: Iterable[str]) -> tuple[str, ...]:
    """The CUDA/cuDNN libraries a framework opens by path, by absolute path: those it
    ships in its own lib folder (torch/lib) and those NVIDIA's wheels installed beside it
    (site-packages/nvidia/*/lib on Linux, nvidia/*/bin on Windows: read as the
    platform's library names, whichever folder holds them)."""
    patterns = tuple(patterns)
    site = Path(framework.location)
    own = [p for p in _files(site / framework.distribution.lower() / "lib")
           if platform.is_library(p.name) and is_runtime_library(p.name, platform)]
    wheels = [p for folder in ("lib", "bin") for p in sorted(site.glob(f"nvidia/*/{folder}/*"))
              if p.is_file() and platform.matches(p.name, patterns)]
    return tuple(dict.fromkeys(str(p) for p in own + wheels))


def _files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_file())
    except OSError:
        return []
