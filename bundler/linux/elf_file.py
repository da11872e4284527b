"""Read what the dynamic loader reads of an ELF shared library: its machine, SONAME,
NEEDED entries (the static imports), RUNPATH, the glibc it needs (the newest GLIBC_x.y
symbol version of .gnu.version_r) and (when asked) its exported symbols. Only the
headers, the dynamic and version sections are read (pyelftools), never the code."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import CheckError
from bundler.platforms.library_facts import LibraryFacts

if TYPE_CHECKING:
    from elftools.elf.elffile import ELFFile

MACHINES = {"EM_X86_64": "X86_64", "EM_AARCH64": "AARCH64", "EM_386": "I386"}
BITS = {"X86_64": 64, "AARCH64": 64, "I386": 32}   # each machine's word size
_MAGIC = b"\x7fELF"
_STRING_TAGS = ("DT_NEEDED", "DT_SONAME", "DT_RUNPATH", "DT_RPATH")


def is_elf(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(4) == _MAGIC


def read_elf(path: Path, exports: bool = False) -> LibraryFacts:
    # Imported here: a Windows pack (or bundler on Windows) never needs the ELF reader.
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as handle:
            image = ELFFile(handle)
            machine = MACHINES.get(image["e_machine"], str(image["e_machine"]))
            needed, soname, runpath = _dynamic(image)
            glibc = _glibc_needed(image)
            exported = _exported(image) if exports else ()
    except (ELFError, OSError, ValueError) as exc:
        raise CheckError(f"{path}: not a valid Linux shared library ({exc})",
                         "the file is damaged or not a library: get the original again"
                         ) from None
    return LibraryFacts(machine=machine, file_version="", product_version="",
                        imports=needed, delay_imports=(), exports=exported,
                        soname=soname, runpath=runpath, glibc=glibc,
                        bits=BITS.get(machine, 0))


def _dynamic(image: ELFFile) -> tuple[tuple[str, ...], str, tuple[str, ...]]:
    from elftools.elf.dynamic import DynamicSection

    needed: list[str] = []
    soname, runpath = "", ()
    for section in image.iter_sections():
        if not isinstance(section, DynamicSection):
            continue
        for tag in section.iter_tags():
            kind = tag.entry.d_tag
            if kind not in _STRING_TAGS:
                continue
            # pyelftools names each string tag's value after the tag: tag.needed, ...
            value = getattr(tag, kind.removeprefix("DT_").lower())
            if kind == "DT_NEEDED":
                needed.append(value)
            elif kind == "DT_SONAME":
                soname = value
            else:
                runpath = tuple(p for p in value.split(":") if p)
    return tuple(needed), soname, runpath


def _glibc_needed(image: ELFFile) -> str:
    """The newest glibc symbol version the library needs ("2.27"), "" if none: the
    loader refuses it on an older glibc ("version `GLIBC_2.27' not found")."""
    from elftools.elf.gnuversions import GNUVerNeedSection

    found: list[tuple[int, ...]] = []
    for section in image.iter_sections():
        if isinstance(section, GNUVerNeedSection):
            # glibc's versions, whichever of its libraries (libc, libm, ld-linux) has them.
            found += [glibc_key(aux.name.removeprefix("GLIBC_"))
                      for _, auxiliary in section.iter_versions() for aux in auxiliary
                      if aux.name.startswith("GLIBC_") and aux.name[6:7].isdigit()]
    return ".".join(map(str, max(found))) if found else ""


def glibc_key(version: str) -> tuple[int, ...]:
    """ "2.27" -> (2, 27), comparable; "2.2.5" -> (2, 2, 5)."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _exported(image: ELFFile) -> tuple[str, ...]:
    """Defined global and weak functions and objects of the dynamic symbol table."""
    from elftools.elf.sections import SymbolTableSection

    table = image.get_section_by_name(".dynsym")
    if not isinstance(table, SymbolTableSection):
        return ()
    if image.elfclass == 64 and image.little_endian:   # read in bulk: a framework's
        return _exported_64(table.data(), image.get_section(table["sh_link"]).data())
    return tuple(sorted({s.name for s in table.iter_symbols() if s.name
                         and s["st_shndx"] != "SHN_UNDEF"
                         and s["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
                         and s["st_info"]["type"] in ("STT_FUNC", "STT_OBJECT")}))


def _exported_64(symbols: bytes, strings: bytes) -> tuple[str, ...]:
    """_exported of an x86-64/aarch64 .dynsym, unpacked in bulk (Elf64_Sym: st_name,
    st_info, st_other, st_shndx, st_value, st_size): libraries with tens of thousands of
    symbols take milliseconds, not seconds."""
    names = set()
    for name, info, _, shndx, _, _ in struct.iter_unpack("<IBBHQQ", symbols):
        # defined (not SHN_UNDEF); STB_GLOBAL or STB_WEAK; STT_OBJECT or STT_FUNC
        if name and shndx != 0 and (info >> 4) in (1, 2) and (info & 0xF) in (1, 2):
            names.add(strings[name:strings.index(b"\0", name)].decode(errors="replace"))
    return tuple(sorted(names))
