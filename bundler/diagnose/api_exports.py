"""Which cuDNN/CUDA API functions a library defines, whatever its name: how `verify --run`
knows an interposer (a library preloaded under an innocent name that exports
cudnnGetVersion wins the framework's calls) or a renamed copy.

An ELF file's dynamic symbol table is read directly (a framework's library holds tens of
thousands of symbols: the full reader takes seconds); anything else is asked of the
bundle's platform (a DLL's export table)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from bundler.errors import BundlerError
from bundler.targets.registry import Platform

__all__ = ["API_NAMES", "api_exports"]

# cuDNN's and the CUDA libraries' C API: cudnnCreate, cublasSgemm, cudaMalloc, cuInit ...
API_NAMES = re.compile(r"(cudnn|cublas|cufft|curand|cusparse|cusolver|cuda|nvrtc|nvJitLink"
                       r")[A-Z_]|cu[A-Z][a-z]")
_SHOWN = 3


def api_exports(path: str, platform: Platform) -> tuple[str, ...]:
    """The cuDNN/CUDA API functions `path` defines (the first few, sorted); () for none or
    an unreadable file."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            names: tuple[str, ...]
            if head[:4] == b"\x7fELF" and head[4:6] == b"\x02\x01":   # 64-bit, little-endian
                names = tuple(_elf_defined(handle, head))
            else:
                names = platform.read_library(Path(path), exports=True).exports
    except (OSError, ValueError, struct.error, BundlerError):
        return ()
    return tuple(sorted(n for n in set(names) if API_NAMES.match(n)))[:_SHOWN]


def _elf_defined(handle: object, head: bytes) -> list[str]:
    """Names of .dynsym's defined global/weak symbols whose names look like an API."""
    read, seek = handle.read, handle.seek   # type: ignore[attr-defined]
    shoff, = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", head, 0x3A)
    seek(shoff)
    sections = [struct.unpack_from("<IIQQQQIIQQ", read(shentsize)) for _ in range(shnum)]
    found: list[str] = []
    for _, kind, _, _, offset, size, link, _, _, _ in sections:
        if kind != 11 or link >= len(sections):   # SHT_DYNSYM, and its string table
            continue
        seek(offset)
        symbols = read(size)
        strings_at, strings_size = sections[link][4], sections[link][5]
        seek(strings_at)
        strings = read(strings_size)
        for name, info, _, shndx, _, _ in struct.iter_unpack("<IBBHQQ", symbols):
            if shndx == 0 or (info >> 4) not in (1, 2) or strings[name:name + 2] not in (
                    b"cu", b"nv"):
                continue
            found.append(strings[name:strings.index(b"\0", name)].decode(errors="replace"))
    return found
