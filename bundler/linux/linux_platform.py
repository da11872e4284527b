"""Linux x86-64 (glibc) as a `bundler.platforms.api.Platform`: ELF shared libraries, names
compared exactly, NVIDIA's Linux driver table, ld.so's bare-name search and libcuda.so.1.
There is no code signing on Linux: a runtime is trusted by the sha256 pins of NVIDIA's
wheels (and their RECORD) or, for a folder, by the lock's pins from its first pack."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from bundler.linux.driver import probe_libcuda
from bundler.linux.elf_file import BITS, is_elf, read_elf
from bundler.linux.facts import linux_driver_table, linux_facts
from bundler.linux.library_search import bare_name_search, read_ldconfig
from bundler.platforms.api import (
    UNSIGNED,
    DriverProbe,
    FoundLibrary,
    NameRules,
    NoDigest,
    SearchFolder,
    SignatureCheck,
    SignatureDigest,
    Trust,
)
from bundler.platforms.driver_table import CompatFacts
from bundler.platforms.library_facts import LibraryFacts, OSFacts
from bundler.platforms.process_trace import Trace

# A library's SONAME-style file: lib<stem>.so.<version> (libcudnn_graph.so.9,
# libnvrtc-builtins.so.13.0); NVIDIA's wheels hold only these, no links.
_STEM = re.compile(r"lib(?P<stem>[A-Za-z][A-Za-z0-9_-]*)\.so(\.\d+)+")


class LinuxPlatform(NameRules):
    name = "linux-x86_64"
    os_name = "Linux"
    wheel_tag = "manylinux_2_27_x86_64"
    machine = "X86_64"
    bits: Mapping[str, int] = BITS
    library_names = r".*\.so(\.[0-9]+)*"
    library_word = "library"
    binary_suffixes: tuple[str, ...] = (".so",)
    case_insensitive = False
    searches_folders_only = False   # ld.so also answers from its cache
    windows_names = False
    signature_scheme = ""
    release_suffix = "linux-x64"
    label = "Linux x86-64"
    # manylinux1/2010/2014 and PEP 600's manylinux_2_NN: NVIDIA has used each.
    wheel_tags = r"manylinux(1|2010|2014|_2_\d+)_x86_64"
    # uv knows no manylinux_2_27 target: 2_28 is the nearest that takes 2_27 wheels
    python_platform = "x86_64-manylinux_2_28"
    app_copy_harm = ("torch opens site-packages/nvidia/*/lib by absolute path, so both "
                     "{name} are mapped and which one a symbol binds to depends on the "
                     "load order")
    search_path_variable = "LD_LIBRARY_PATH"
    search_order_text = "LD_LIBRARY_PATH in order, then the ldconfig cache (ld.so(8))"
    driver_library = "libcuda.so.1"
    wrong_machine_error = "wrong ELF class"

    def read_library(self, path: Path, exports: bool = False) -> LibraryFacts:
        return read_elf(path, exports=exports)

    def is_library_file(self, path: Path) -> bool:
        return is_elf(path)

    def returned_constant(self, path: Path, function: str) -> int | None:
        return None   # the ELF reader does not disassemble exports

    def facts(self) -> OSFacts:
        return linux_facts()

    def driver_table(self) -> CompatFacts:
        return linux_driver_table()

    def check_signature(self, path: Path, trust: Trust,
                        digests: Mapping[str, bytes] | None = None) -> SignatureCheck:
        return SignatureCheck(status=UNSIGNED, detail="Linux libraries carry no signature")

    def signature_digest(self, size: int) -> SignatureDigest:
        return NoDigest(size)

    def shipped_roots(self) -> tuple[str, ...]:
        return ()

    def any_shipped_signer(self) -> Trust:
        return Trust(signer="", roots=(), timestamp_roots=())

    def library_stem(self, name: str) -> str:
        match = _STEM.fullmatch(name)
        return match.group("stem") if match else ""

    def library_file(self, stem: str, version: str) -> str:
        return f"lib{stem}.so.{version}"

    def trace_command(self, command: Sequence[str], environ: Mapping[str, str], cwd: str,
                      timeout: float, python: str = "") -> Trace:
        from bundler.linux.process_trace import trace_command  # ctypes, on demand
        return trace_command(command, environ, cwd, timeout)

    def probe_driver(self) -> DriverProbe:
        path, version, release, error = probe_libcuda()
        return DriverProbe(path, version, release, "its file name" if release else "", "",
                           error)

    def system_folders(self) -> Mapping[str, str]:
        return {}   # glibc's own libraries come by the ldconfig cache, not from a folder

    def search_folders(self, environ: Mapping[str, str], application: str
                       ) -> list[SearchFolder]:
        # An empty LD_LIBRARY_PATH entry is the current folder, as glibc reads it.
        value = environ.get(self.search_path_variable, "")
        return [SearchFolder(folder or ".", f"LD_LIBRARY_PATH[{i}]", True, i)
                for i, folder in enumerate(value.split(":") if value else [], 1)]

    def bare_name_search(self, patterns: tuple[str, ...], search_path: str
                         ) -> list[FoundLibrary]:
        return bare_name_search(patterns, search_path, read_ldconfig())

    def unholdable_path(self, relpaths: Iterable[str]) -> tuple[str, str] | None:
        return None   # a Linux file system holds any name a wheel or a folder can give


LINUX = LinuxPlatform()
