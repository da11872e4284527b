"""Windows x64 as a `bundler.platforms.api.Platform`: PE files, DLL names compared without
regard to case, Authenticode signatures, NVIDIA's Windows driver table, the DLL search
order and nvcuda.dll."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from bundler.platforms.api import (
    DriverProbe,
    FoundLibrary,
    NameRules,
    SearchFolder,
    SignatureCheck,
    SignatureDigest,
    Trust,
)
from bundler.platforms.driver_table import CompatFacts
from bundler.platforms.library_facts import LibraryFacts, OSFacts
from bundler.platforms.process_trace import Trace
from bundler.windows import authenticode, library_search
from bundler.windows.authentihash import AuthenticodeDigest
from bundler.windows.compat import compat_facts
from bundler.windows.driver import probe_nvcuda
from bundler.windows.facts import windows_facts
from bundler.windows.pe_file import BITS, PLATFORM_MACHINE, exported_constant, is_pe, read_pe
from bundler.windows.shipped_names import unholdable_path

# NVIDIA's DLL names: <stem>64_<major>.dll (cudnn_graph64_9.dll, cublasLt64_{cuda_major}.dll),
# <stem>64_<major><minor>[_0].dll (cudart64_110.dll, nvrtc64_120_0.dll), <stem>_<ABI>.dll
# (nvJitLink_120_0.dll).
_STEM = re.compile(r"(?i)(?P<stem>[a-z][a-z_-]*?)(64)?_(\d+|\{cuda_major\})[0-9_]*\.dll")


class WindowsPlatform(NameRules):
    name = "win-amd64"
    os_name = "Windows"
    wheel_tag = "win_amd64"
    machine = PLATFORM_MACHINE["win-amd64"]
    bits: Mapping[str, int] = BITS
    library_names = r".*\.dll"
    library_word = "DLL"
    binary_suffixes: tuple[str, ...] = (".dll", ".pyd", ".exe")
    case_insensitive = True
    searches_folders_only = True   # the DLL search order: folders only
    windows_names = True
    signature_scheme = "Authenticode"
    release_suffix = "win-x64"
    label = "Windows x64"
    wheel_tags = r"win_amd64"
    python_platform = "x86_64-pc-windows-msvc"
    # The framework that loads its own second fails (LoadLibrary finds the first by name).
    app_copy_harm = "torch: 'WinError 127 ... Error loading {name}'"
    search_path_variable = "PATH"
    search_order_text = ("the program's folder, System32, System, the Windows folder, the "
                         "current folder, then PATH: bundler/windows/windows.toml's "
                         "dll_search_order; CUDA_PATH folders are listed, not searched")
    driver_library = "nvcuda.dll"
    wrong_machine_error = "Windows error 193"

    def read_library(self, path: Path, exports: bool = False) -> LibraryFacts:
        return read_pe(path, exports=exports)

    def is_library_file(self, path: Path) -> bool:
        return is_pe(path)

    def returned_constant(self, path: Path, function: str) -> int | None:
        return exported_constant(path, function)

    def facts(self) -> OSFacts:
        return windows_facts()

    def driver_table(self) -> CompatFacts:
        return compat_facts()

    def check_signature(self, path: Path, trust: Trust,
                        digests: Mapping[str, bytes] | None = None) -> SignatureCheck:
        # Looked up at each call, so a test can count the checks (with the two arguments
        # it always had when no digest was streamed).
        if digests:
            return authenticode.check_signature(path, trust, digests)
        return authenticode.check_signature(path, trust)

    def signature_digest(self, size: int) -> SignatureDigest:
        return AuthenticodeDigest(size)

    def shipped_roots(self) -> tuple[str, ...]:
        return tuple(authenticode.shipped_roots())

    def any_shipped_signer(self) -> Trust:
        return authenticode.any_shipped_signer()

    def library_stem(self, name: str) -> str:
        match = _STEM.fullmatch(name)
        return match.group("stem") if match else ""

    def library_file(self, stem: str, version: str) -> str:
        return f"{stem}64_{version}.dll"

    def probe_driver(self) -> DriverProbe:
        return probe_nvcuda()

    def trace_command(self, command: Sequence[str], environ: Mapping[str, str], cwd: str,
                      timeout: float, python: str = "") -> Trace:
        from bundler.windows.traced_run import trace_windows_command
        return trace_windows_command(command, environ, cwd, timeout, python)

    def system_folders(self) -> Mapping[str, str]:
        return library_search.system_folders()

    def search_folders(self, environ: Mapping[str, str], application: str
                       ) -> list[SearchFolder]:
        return library_search.search_folders(environ, application)

    def bare_name_search(self, patterns: tuple[str, ...], search_path: str
                         ) -> list[FoundLibrary]:
        return library_search.bare_name_search(patterns, search_path)

    def unholdable_path(self, relpaths: Iterable[str]) -> tuple[str, str] | None:
        return unholdable_path(relpaths)


WINDOWS = WindowsPlatform()
