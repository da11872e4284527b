"""The shapes every platform fills: what a binary reader tells of one shared library,
and what an OS provides itself (system and driver libraries, how CUDA names its
libraries). bundler/windows/ fills them from PE files and windows.toml, bundler/linux/
from ELF files and linux.toml; the shared layers read only these shapes."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import BundlerError
from bundler.support.toml_tables import Table


@dataclass(frozen=True)
class LibraryFacts:
    """One shared library, as its own tables say: a DLL's, or an ELF .so's."""

    machine: str
    file_version: str           # the version resource (Windows); "" where there is none
    product_version: str
    imports: tuple[str, ...]    # static imports: a DLL's import table, an ELF's NEEDED
    delay_imports: tuple[str, ...]
    exports: tuple[str, ...] = ()   # read only when asked: cuBLAS exports thousands
    soname: str = ""            # ELF: the name the loader knows it by
    runpath: tuple[str, ...] = ()   # ELF: RUNPATH (or RPATH) entries, as written
    glibc: str = ""             # ELF: the newest GLIBC_x.y symbol version it needs ("2.27")
    bits: int = 0               # its machine's word size (the reader's table); 0: unknown

    @property
    def all_imports(self) -> tuple[str, ...]:
        return self.imports + self.delay_imports


@dataclass(frozen=True)
class OSFacts:
    """What an OS provides and how CUDA names its libraries there."""

    system: tuple[str, ...]
    vc_runtime: tuple[str, ...]
    cuda_library: re.Pattern[str]
    driver: tuple[str, ...]
    redistributable: tuple[str, ...]
    cuda_path_variable: re.Pattern[str]
    api_sets: tuple[str, ...] = ()
    dll_search_order: tuple[str, ...] = ()
    # Math-library names, whose digits do not pin a CUDA: the CUDA majors that ship each.
    library_majors: tuple[tuple[str, tuple[int, ...]], ...] = ()
    case_insensitive: bool = True   # Windows names; exact on Linux
    # (distribution, how it opens NVIDIA's libraries): "absolute" (by absolute path from
    # site-packages/nvidia/*/lib) or "preload" (an API the app calls); doctor's rows.
    framework_opens: tuple[tuple[str, str], ...] = ()
    # (distribution, the module an app imports to use it): "jax" for jax-cuda13-pjrt.
    framework_imports: tuple[tuple[str, str], ...] = ()
    # (distribution, the function that makes a "preload" framework load them)
    framework_preload: tuple[tuple[str, str], ...] = ()

    def key(self, name: str) -> str:
        return name.lower() if self.case_insensitive else name

    def matches(self, name: str, patterns: Iterable[str]) -> bool:
        key = self.key(name)
        return any(fnmatch.fnmatchcase(key, self.key(p)) for p in patterns)

    def is_driver(self, name: str) -> bool:
        """A library the NVIDIA driver installs: imported freely, never bundled."""
        return self.matches(name, self.driver)

    def is_redistributable(self, name: str) -> bool:
        return self.matches(name, self.redistributable)

    def is_cuda_path_variable(self, variable: str) -> bool:
        """CUDA_PATH or CUDA_PATH_V<major>_<minor>, as toolkit installers set them."""
        return bool(self.cuda_path_variable.match(variable))

    def is_system(self, name: str) -> bool:
        return (self.matches(name, self.system) or self.matches(name, self.vc_runtime)
                or self.is_api_set(name))

    def is_api_set(self, name: str) -> bool:
        """An API set name (Windows): resolved by the loader, never a file on disk."""
        return self.matches(name, self.api_sets)

    def is_cuda_library(self, name: str) -> bool:
        return bool(self.cuda_majors_of(name))

    def cuda_majors_of(self, name: str) -> tuple[int, ...]:
        """The CUDA majors that ship a library of this name (one for cudart64_110,
        several for curand64_10); () if it is not a CUDA library."""
        listed = dict(self.library_majors).get(self.key(name))
        if listed is not None:
            return listed
        release = self.cuda_release_of(name)
        return (release[0],) if release else ()

    def cuda_release_of(self, name: str) -> tuple[int, int] | None:
        """(major, minor) of the CUDA a library name pins (cudart, cuBLAS, NVRTC,
        nvJitLink), the minor 0 where the name gives only the major; None for any other
        name, math libraries included (their digits are their own version)."""
        found = self.cuda_library.match(self.key(name))
        if not found:
            return None
        digits = found.group(1)
        # cudart64_101 -> 10.1; cudart64_110 -> 11.0; cublas64_11 -> 11; cudart64_12 -> 12
        return (int(digits[:2]), int(digits[2:])) if len(digits) >= 3 else (int(digits), 0)


def parse_os_facts(data: dict, path: Path, *, case_insensitive: bool, library_name: str
                   ) -> OSFacts:
    """An OS's facts file (windows.toml, linux.toml), read strictly: a key the code does
    not read fails (and a test), so the file and the code cannot drift apart.
    `library_name`: how a CUDA library's name carries its release, around the
    `cuda_release_prefixes` ("{prefixes}"): `^(?:{prefixes})(?:64)?_(\\d+)` on Windows."""
    def key(name: str) -> str:
        return name.lower() if case_insensitive else name

    top = Table(data, path, "", BundlerError, str(path.name))
    names = {field: tuple(key(p) for p in top.take_str_list(field, []))
             for field in ("system", "vc_runtime", "driver", "api_sets")}
    # Longest first, so "nvrtc-builtins" is tried before "nvrtc".
    prefixes = "|".join(re.escape(key(p)) for p in sorted(
        top.take_str_list("cuda_release_prefixes"), key=len, reverse=True))
    majors = top.table("cuda_library_majors")
    library_majors = tuple((key(name), tuple(majors.take(name, list)))
                           for name in majors.names())
    majors.done()
    opens = top.table("framework_opens", required=False)
    framework_opens = tuple((name, opens.take(name, str)) for name in opens.names())
    opens.done()
    imports = top.table("framework_imports", required=False)
    framework_imports = tuple((name, imports.take(name, str)) for name in imports.names())
    imports.done()
    calls = top.table("framework_preload", required=False)
    framework_preload = tuple((name, calls.take(name, str)) for name in calls.names())
    calls.done()
    facts = OSFacts(
        system=names["system"], vc_runtime=names["vc_runtime"],
        cuda_library=re.compile(library_name.format(prefixes=prefixes)),
        driver=names["driver"],
        redistributable=tuple(top.take_str_list("redistributable")),
        cuda_path_variable=re.compile(top.take("cuda_path_variable", str),
                                      re.IGNORECASE if case_insensitive else 0),
        api_sets=names["api_sets"],
        dll_search_order=tuple(top.take_str_list("dll_search_order")),
        library_majors=library_majors, case_insensitive=case_insensitive,
        framework_opens=framework_opens, framework_imports=framework_imports,
        framework_preload=framework_preload)
    top.done()
    return facts
