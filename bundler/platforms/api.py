"""The platform seam's interface: what the shared layers (recipe, pack, diagnose) may ask
of an operating system, and the types every platform fills and every caller reads.

Like cuda-pathfinder's `_dynamic_libs` loader Protocol: one `Platform` Protocol, one class
per OS (bundler/windows/windows_platform.py, bundler/linux/linux_platform.py), each
implementing every member, so a caller never asks "is this Linux" by testing for a
missing member. This module imports nothing of bundler (the architecture test keeps it
so): the OS packages import it and their own modules, and the registry
(targets/registry.py) imports the OS packages, so there is no cycle.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:   # the shapes' modules import this one; only the checker reads these
    from bundler.platforms.driver_table import CompatFacts as DriverTable
    from bundler.platforms.library_facts import LibraryFacts, OSFacts
    from bundler.platforms.process_trace import Trace

# A signature check's verdicts (Authenticode's on Windows; a platform without code
# signing answers UNSIGNED), and what each means in the words messages use.
OK = "ok"
UNSIGNED = "unsigned"
CHANGED = "changed"                       # digest mismatch: changed after signing
UNEXPECTED_SIGNER = "unexpected-signer"
UNKNOWN_CHAIN = "unknown-chain"           # no chain to a pinned root at the signing time

MEANING = {
    OK: "signed",
    UNSIGNED: "not signed",
    CHANGED: "changed after signing (its bytes do not match its signature)",
    UNEXPECTED_SIGNER: "signed by someone else",
    UNKNOWN_CHAIN: "signature does not chain to a pinned root",
}


@dataclass(frozen=True)
class Trust:
    """Who must have signed, and the roots (SHA-256 of the DER certificate) the
    signer's and the timestamp's chains must reach. `signer` "" accepts any signer."""

    signer: str
    roots: tuple[str, ...]
    timestamp_roots: tuple[str, ...] = ()

    @property
    def all_roots(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.roots + self.timestamp_roots))


@dataclass(frozen=True)
class SignatureCheck:
    status: str
    signer: str = ""      # the leaf's common name, when the signature could be read
    signed_at: str = ""   # the verified timestamp, ISO 8601 UTC; "" without one
    root: str = ""        # SHA-256 of the root the signer's chain reached
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == OK

    def describe(self) -> str:
        if self.ok:
            when = f", timestamp {self.signed_at}" if self.signed_at else ", no timestamp"
            return f"signed by {self.signer!r}{when}"
        by = f" (signer {self.signer!r})" if self.signer and self.status != UNSIGNED else ""
        detail = f": {self.detail}" if self.detail else ""
        return f"{MEANING[self.status]}{by}{detail}"


@dataclass(frozen=True)
class FoundLibrary:
    """One copy of a library name a bare-name load could reach (doctor)."""

    name: str
    path: str
    reached_as: str   # "LD_LIBRARY_PATH[1]", "ldconfig cache", "System32", "PATH[2]"
    role: str         # "picked" (the load gets it) or "shadowed" (an earlier copy wins)


@dataclass(frozen=True)
class SearchFolder:
    """One folder a bare-name load looks in, as doctor lists it."""

    path: str
    label: str       # how it is reached: "System32", "PATH[2]", "CUDA_PATH_V10_1" ...
    searched: bool   # True if a bare-name load searches it; False for CUDA_PATH folders
    order: int       # position in the search order (1-based); 0 when not searched


@dataclass(frozen=True)
class DriverProbe:
    """This machine's NVIDIA driver, as the CUDA runtime finds it (loaded into the
    asking process: nvcuda.dll by bare name, libcuda.so.1 by SONAME)."""

    path: str           # the driver library's file; "" when it could not be loaded
    cuda: int           # its cuDriverGetVersion, e.g. 13000; 0 if unknown
    release: str        # the driver's release, e.g. "580.65.06" or "441.66"; "" if unknown
    release_from: str   # where the release was read: "its file name", "nvcuda.dll file version ..."
    file_version: str   # the library's Windows file version ("26.21.14.4166"); "" elsewhere
    error: str          # what went wrong; "" if nothing


class SignatureDigest(Protocol):
    """What a signature check compares, computed from a file's bytes as they stream."""

    def update(self, data: bytes) -> None: ...

    def digests(self) -> dict[str, bytes]: ...   # {} when the stream could not give one


class NoDigest:
    """The digest of a platform without code signing: it keeps nothing."""

    def __init__(self, size: int) -> None:
        del size

    def update(self, data: bytes) -> None:
        del data

    def digests(self) -> dict[str, bytes]:
        return {}


class Platform(Protocol):
    """One operating system and architecture, as bundler's shared layers see it. Every
    member is required: each OS class answers each question, in its own terms."""

    name: str                 # the recipe's `platform`: "win-amd64"
    os_name: str              # for messages: "Windows"
    wheel_tag: str            # PyPI's platform tag: "win_amd64"
    machine: str              # what the binary reader calls the architecture: "AMD64"
    bits: Mapping[str, int]   # each machine the reader names -> its word size
    library_names: str        # a regular expression a library's file name matches
    library_word: str         # what messages call one: "DLL"
    binary_suffixes: tuple[str, ...]   # an app's files whose imports the app scan reads
    case_insensitive: bool    # the file system and loader ignore letter case
    # A bare-name load is answered by folders alone, in an order doctor can list
    # (Windows: System32, the app, PATH); False where a cache answers too (ld.so's).
    searches_folders_only: bool
    windows_names: bool       # Windows's name rules (reserved names, case twins) apply
    signature_scheme: str     # "Authenticode"; "" where the wheel's pin is the trust
    # How releases and wheels name the platform: the release catalogue and the recipe
    # families share one body of data across platforms and ask these for the names.
    release_suffix: str       # a release name's tail: "win-x64" (cudnn-9.1.0.70-cuda12-win-x64)
    label: str                # what a recipe's description says: "Windows x64"
    wheel_tags: str           # a regular expression matching its wheels' platform tags
    # The target a resolver evaluates requirements' environment markers for (uv's
    # --python-platform): "x86_64-pc-windows-msvc" gives platform_system "Windows",
    # sys_platform "win32", os_name "nt", platform_machine "AMD64".
    python_platform: str
    # Why two copies of one library in one process fail here ({name}: the library's), for
    # pack's refusal of an app that ships its own copy of one the bundle preloads.
    app_copy_harm: str
    # The environment variable whose folders a bare-name load searches: "PATH".
    search_path_variable: str
    # How a bare-name load searches, in words, for doctor: "... then PATH (windows.toml)".
    search_order_text: str
    # The NVIDIA driver's library the CUDA runtime loads by name: "nvcuda.dll".
    driver_library: str
    # What the loader says of a library built for another word size: "Windows error 193".
    wrong_machine_error: str

    def read_library(self, path: Path, exports: bool = False) -> LibraryFacts:
        """Machine, versions, imports (and exports) of one library; CheckError if it is
        not one of this platform's."""

    def is_library_file(self, path: Path) -> bool:
        """Whether the file is this platform's library, by its header, not its name."""

    def returned_constant(self, path: Path, function: str) -> int | None:
        """The constant an export returns, where the reader can tell; else None."""

    def facts(self) -> OSFacts:
        """System, driver and CUDA libraries of this OS (its TOML)."""

    def driver_table(self) -> DriverTable:
        """Driver minimums per CUDA, framework rows, doctor's scan patterns."""

    def check_signature(self, path: Path, trust: Trust,
                        digests: Mapping[str, bytes] | None = None) -> SignatureCheck:
        """The file's signature against `trust`; `digests`, its signature digests by
        algorithm computed as it was written (`signature_digest`), spare a re-read."""

    def signature_digest(self, size: int) -> SignatureDigest:
        """A digest of a file's bytes fed in order, whose `digests()` check_signature
        takes; one that keeps nothing where the platform has no scheme."""

    def shipped_roots(self) -> tuple[str, ...]:
        """Every root a shipped recipe pins (none without code signing)."""

    def any_shipped_signer(self) -> Trust:
        """Any signer the shipped recipes name."""

    def library_stem(self, name: str) -> str:
        """cudnn_graph64_9.dll -> cudnn_graph ("" if the name is no CUDA library's)."""

    def library_file(self, stem: str, version: str) -> str:
        """(cudnn_graph, 9) -> the file's name on this platform."""

    def probe_driver(self) -> DriverProbe:
        """This machine's driver; doctor judges a bundle's figures against it with the
        bootstrap's rule."""

    def trace_command(self, command: Sequence[str], environ: Mapping[str, str], cwd: str,
                      timeout: float, python: str = "") -> Trace:
        """Run a program of this platform on this machine, recording every file each of
        its processes maps as code (`bundler verify --run`); at `timeout` every process
        is killed. `python`: a Python of this platform for a tracer that needs one (a
        Windows python.exe under Wine). Where this machine cannot trace it, nothing
        runs: `traced` False and `why_not` says why."""

    def system_folders(self) -> Mapping[str, str]:
        """The OS's own library folders as this process's loader names them, by role
        ("system32", "system16", "windows"); {} where the OS loads its system libraries
        by name from no folder doctor can check (ld.so's cache) or this process cannot
        ask (a Windows folder off Windows)."""

    def search_folders(self, environ: Mapping[str, str], application: str
                       ) -> list[SearchFolder]:
        """The folders a bare-name load searches, in order, then those only named
        (CUDA_PATH on Windows); `application`, the folder of the process's executable.
        (On Linux the ldconfig cache comes after these folders: `bare_name_search`.)"""

    def bare_name_search(self, patterns: tuple[str, ...], search_path: str
                         ) -> list[FoundLibrary]:
        """Every copy a bare-name load could reach of a name matching `patterns`, in the
        loader's order; `search_path`, the value of `search_path_variable`."""

    def unholdable_path(self, relpaths: Iterable[str]) -> tuple[str, str] | None:
        """Of every path a bundle ships (relative, '/'), the first this OS cannot hold
        and why, or None: pack asks it of the whole staged bundle before the swap."""

    def name_key(self, name: str) -> str:
        """The form two library names are compared in (the same file when equal)."""

    def same_name(self, first: str, second: str) -> bool: ...

    def matches(self, name: str, patterns: Iterable[str]) -> bool:
        """Whether a file name matches one of the glob patterns, as the platform compares
        names (without regard to case on Windows)."""

    def is_library(self, name: str) -> bool:
        """Whether a file name is a shared library's (by name: `is_library_file` reads)."""


class NameRules:
    """The name comparisons every platform makes from its own `case_insensitive` and
    `library_names`: one body of code, so two platforms cannot drift apart in them."""

    case_insensitive: bool
    library_names: str

    def name_key(self, name: str) -> str:
        return name.lower() if self.case_insensitive else name

    def same_name(self, first: str, second: str) -> bool:
        return self.name_key(first) == self.name_key(second)

    def matches(self, name: str, patterns: Iterable[str]) -> bool:
        key = self.name_key(name)
        return any(fnmatch.fnmatchcase(key, self.name_key(p)) for p in patterns)

    def is_library(self, name: str) -> bool:
        return re.fullmatch(self.library_names, name,
                            re.IGNORECASE if self.case_insensitive else 0) is not None
