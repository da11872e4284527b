"""The CUDA/cuDNN libraries a binary loads by name at run time, read from its bytes.

Frameworks such as PaddlePaddle import no CUDA library: they call LoadLibrary (Windows) or
dlopen (Linux) with a name held as a string in the binary ("cudnn64_8.dll", or
L"cudnn64_8.dll" in UTF-16LE for LoadLibraryW; "libcudnn.so.8"). No import table shows
these, so the app scan reads each binary's bytes for them:

- only a binary that names a dynamic loader (the import name table holds "LoadLibraryExW",
  "dlopen" as ASCII) is read for names: a library that cannot load another by name has
  none to load;
- a name counts when the platform calls it a library and it is a runtime library (a CUDA
  or cuDNN library, or one a shipped recipe ships: `library_imports.is_runtime_library`):
  optional tools no runtime ships (cupti, nvToolsExt, TensorRT) are not demanded;
- a binary naming two versions of one library holds a list of fallbacks tried in turn,
  not two needs (Paddle's dynamic_loader.cc: "cublas64_118.dll;cublas64_11.dll",
  "curand64_118.dll;curand64_11.dll;curand64_10.dll"): the one of them a runtime
  bundler knows ships (a cuDNN family, a runtime set, a shipped recipe) is demanded;
  where none or several are (cudnn64_7.dll and cudnn64_8.dll), they are reported as
  `alternatives` and none is demanded (the framework's files and the table decide).

The bytes are read in pieces (bounded memory, a 1 GB binary included), each piece
overlapping the last by the longest name so none is cut. A file that is not a regular
file (a FIFO, a link to /dev/zero) or is larger than any library an OS loads
(`MAX_BINARY_BYTES`: a PE image's size is a 32-bit field) is refused by name before a
byte is read (`require_scannable`): a sparse 20 GB "huge.dll" is never read for minutes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bundler.errors import CheckError
from bundler.recipe.library_imports import is_runtime_library
from bundler.recipe.load import families_dir, shipped_recipes
from bundler.releases.families import families, runtime_sets, translated
from bundler.support.regular_files import NotARegularFile, TooLarge, describe_size, open_bounded
from bundler.targets.registry import Platform, platform_for

_PIECE = 8 << 20
MAX_BINARY_BYTES = 4 << 30   # no library loads past 4 GiB (PE's SizeOfImage is 32 bits)
_LONGEST = 256          # bytes: the longest name (UTF-16 doubles it) kept across pieces
_LOADERS = re.compile(rb"LoadLibrary(?:Ex)?[AW]\x00|dlopen\x00")
_LOADER_STARTS = (b"LoadLibrary", b"dlopen\x00")   # where a match of _LOADERS can start
# A library-like name of NVIDIA's: cudnn64_8.dll, cublasLt64_11.dll, libcudnn.so.8.
_NAME = r"(?:lib)?(?:cu|nv)[A-Za-z0-9_+-]{1,48}(?:\.[A-Za-z0-9]{1,8}){1,4}"
_ASCII = re.compile(rb"(?<![A-Za-z0-9_.+-])" + _NAME.encode())
_UTF16 = re.compile(rb"(?:[A-Za-z0-9_.+-]\x00){6,80}")
_TEXT = re.compile(_NAME)


@cache
def _ends(library_names: str, case_insensitive: bool) -> re.Pattern[bytes]:
    """Where a library name ends, in ASCII or UTF-16LE: the literal start of the
    platform's library-name suffix (".dll", ".so"). Found by the regex engine's fast
    literal search (about 0.6 s for a 340 MB DLL), then only the bytes around each hit
    are read for a name: a full scan for names runs at a few MB/s."""
    tail = library_names.removeprefix(".*")
    literal = re.sub(r"\\(.)", r"\1", re.split(r"[(\[*+?]", tail)[0])
    flags = re.IGNORECASE if case_insensitive else 0
    return re.compile(re.escape(literal.encode()) + b"|"
                      + re.escape(literal.encode("utf-16-le")), flags)


@dataclass(frozen=True)
class LoadedNames:
    """What one binary names: the runtime libraries it loads by name, and the ones left
    out because it names several versions of the same library."""

    names: tuple[str, ...] = ()
    alternatives: tuple[str, ...] = ()


def loaded_by_name(path: Path, platform: Platform) -> LoadedNames:
    """The runtime libraries `path` loads by name (none when it names no loader)."""
    return loaded_from(names_held(path, platform), platform)


def names_held(path: Path, platform: Platform) -> tuple[bool, tuple[str, ...]]:
    """What `path`'s bytes hold, before any rule of what counts: whether it names a
    dynamic loader, and every library-like name (one per name key), in order found."""
    found: dict[str, str] = {}
    loader = False
    ends = _ends(platform.library_names, platform.case_insensitive)
    with open_bounded(path, MAX_BINARY_BYTES) as stream:
        tail = b""
        while piece := stream.read(_PIECE):
            window = tail + piece
            loader = loader or _names_a_loader(window)
            for end in ends.finditer(window):
                around = window[max(0, end.start() - _LONGEST):end.end() + _LONGEST // 4]
                for name in _names_in(around):
                    found.setdefault(platform.name_key(name), name)
            tail = window[-_LONGEST:]
    return loader, tuple(found.values())


def loaded_from(held: tuple[bool, tuple[str, ...]], platform: Platform) -> LoadedNames:
    """The runtime libraries a binary holding `held` (names_held) loads by name."""
    loader, found = held
    if not loader:
        return LoadedNames()
    names = [n for n in found
             if platform.is_library(n) and is_runtime_library(n, platform)]
    return _split_alternatives(sorted(names, key=platform.name_key), platform)


def require_scannable(path: Path, shown: str) -> None:
    """CheckError naming `shown` unless `path` is a regular file of at most
    MAX_BINARY_BYTES, judged by its size without reading it or waiting on a pipe."""
    try:
        open_bounded(path, MAX_BINARY_BYTES).close()
    except (NotARegularFile, TooLarge) as exc:
        what = (f"larger than any library an OS loads ({describe_size(MAX_BINARY_BYTES)})"
                if isinstance(exc, TooLarge) else exc.strerror)
        raise CheckError(f"{shown}: {what}, so the app scan cannot read it",
                         "remove it from the app folder (a library is a regular file), or "
                         "set [scan] enabled = false in the spec") from None
    except OSError:
        return   # unreadable: the reader that opens it says so


def _names_a_loader(window: bytes) -> bool:
    """Whether `window` names a dynamic loader. bytes.find for the literal start, then
    the pattern at each hit: the pattern's own search ran at ~160 MB/s, most of an
    embedded-python re-pack's load-by-name reading (0.27 s for numpy's 43 MiB)."""
    for literal in _LOADER_STARTS:
        at = window.find(literal)
        while at != -1:
            if _LOADERS.match(window, at):
                return True
            at = window.find(literal, at + 1)
    return False


def _names_in(around: bytes) -> list[str]:
    names = [m.group().decode("ascii") for m in _ASCII.finditer(around)]
    for run in _UTF16.finditer(around):
        names += [m.group() for m in _TEXT.finditer(run.group().decode("utf-16-le"))]
    return names


def _split_alternatives(names: list[str], platform: Platform) -> LoadedNames:
    """Per library (its stem), the one name it loads; several names of one library are a
    fallback list ("cublas64_118.dll;cublas64_11.dll", Paddle's): the one name a runtime
    bundler knows ships is the one to demand, else none of them is."""
    by_stem: dict[str, list[str]] = {}
    for name in names:
        by_stem.setdefault(platform.library_stem(name).lower() or name, []).append(name)
    shipped = _shipped_names(platform.name)
    single: list[str] = []
    several: list[str] = []
    for group in by_stem.values():
        real = [n for n in group if platform.name_key(n) in shipped]
        chosen = group if len(group) == 1 else real if len(real) == 1 else []
        single += chosen
        several += [n for n in group if n not in chosen]
    return LoadedNames(tuple(single), tuple(several))


@cache
def _shipped_names(platform_name: str) -> frozenset[str]:
    """Every library name a runtime bundler knows ships for that platform: the cuDNN
    families' files, the runtime sets' and the shipped recipes'."""
    platform = platform_for(platform_name)
    folder = families_dir()
    names = {f.name for recipe in shipped_recipes() if recipe.platform == platform_name
             for f in recipe.files.values()}
    names |= {n for family in families(folder).values()
              for n in translated(family, platform).files}
    names |= {n for runtime in runtime_sets(folder).values()
              if runtime.platform == platform_name for n in runtime.tables.get("files", {})}
    return frozenset(platform.name_key(n) for n in names)
