"""Knowledge of Windows itself (not of any runtime): which DLLs every machine has,
which come with the NVIDIA driver, what may ship in an app, and how CUDA names its
libraries and its toolkit variables. The facts are in windows.toml beside this file."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from bundler.errors import BundlerError
from bundler.support.toml_tables import Table, tomllib


@dataclass(frozen=True)
class WindowsFacts:
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

    def is_driver(self, dll: str) -> bool:
        """A DLL the NVIDIA driver installs: imported freely, never bundled."""
        return name_matches(dll, self.driver)

    def is_redistributable(self, name: str) -> bool:
        return name_matches(name, self.redistributable)

    def is_cuda_path_variable(self, variable: str) -> bool:
        """CUDA_PATH or CUDA_PATH_V<major>_<minor>, as toolkit installers set them."""
        return bool(self.cuda_path_variable.match(variable))

    def is_system(self, dll: str) -> bool:
        return (name_matches(dll, self.system) or name_matches(dll, self.vc_runtime)
                or self.is_api_set(dll))

    def is_api_set(self, dll: str) -> bool:
        """An API set name: resolved by the loader, never a file on disk."""
        return name_matches(dll, self.api_sets)

    def is_cuda_library(self, dll: str) -> bool:
        return bool(self.cuda_majors_of(dll))

    def cuda_majors_of(self, dll: str) -> tuple[int, ...]:
        """The CUDA majors that ship a DLL of this name (one for cudart64_110, several for
        curand64_10); () if it is not a CUDA library."""
        lowered = dll.lower()
        listed = dict(self.library_majors).get(lowered)
        if listed is not None:
            return listed
        release = self.cuda_release_of(lowered)
        return (release[0],) if release else ()

    def cuda_release_of(self, dll: str) -> tuple[int, int] | None:
        """(major, minor) of the CUDA a library name pins (cudart, cuBLAS, NVRTC,
        nvJitLink), the minor 0 where the name gives only the major; None for any other
        name, math libraries included (their digits are their own version)."""
        found = self.cuda_library.match(dll.lower())
        if not found:
            return None
        digits = found.group(1)
        # cudart64_101 -> 10.1; cudart64_110 -> 11.0; cublas64_11 -> 11; cudart64_12 -> 12
        return (int(digits[:2]), int(digits[2:])) if len(digits) >= 3 else (int(digits), 0)


def name_matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether a file name matches any glob pattern, ignoring case as Windows does."""
    lowered = name.lower()
    return any(fnmatch.fnmatchcase(lowered, p.lower()) for p in patterns)


@lru_cache(maxsize=1)
def windows_facts() -> WindowsFacts:
    resource = resources.files("bundler.windows").joinpath("windows.toml")
    return parse_windows_facts(tomllib.loads(resource.read_text(encoding="utf-8")),
                               Path(str(resource)))


def parse_windows_facts(data: dict, path: Path) -> WindowsFacts:
    """windows.toml, read strictly: a key the code does not read fails (and a test),
    so the file and the code cannot drift apart."""
    top = Table(data, path, "", BundlerError, "bundler/windows/windows.toml")
    lowered = {key: tuple(p.lower() for p in top.take_str_list(key))
               for key in ("system", "vc_runtime", "driver", "api_sets")}
    # Longest first, so "nvrtc-builtins" is tried before "nvrtc".
    prefixes = "|".join(re.escape(p) for p in sorted(top.take_str_list("cuda_release_prefixes"),
                                                     key=len, reverse=True))
    majors = top.table("cuda_library_majors")
    library_majors = tuple((name.lower(), tuple(majors.take(name, list)))
                           for name in majors.names())
    majors.done()
    facts = WindowsFacts(
        system=lowered["system"], vc_runtime=lowered["vc_runtime"],
        cuda_library=re.compile(rf"^(?:{prefixes})(?:64)?_(\d+)"),
        driver=lowered["driver"],
        redistributable=tuple(top.take_str_list("redistributable")),
        cuda_path_variable=re.compile(top.take("cuda_path_variable", str), re.IGNORECASE),
        api_sets=lowered["api_sets"],
        dll_search_order=tuple(top.take_str_list("dll_search_order")),
        library_majors=library_majors)
    top.done()
    return facts
