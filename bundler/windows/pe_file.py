"""Facts about a PE file (DLL or EXE) that the pack checks and `inspect` need.

pefile is opened with fast_load and only the import, delay-import and resource
directories are parsed (plus exports, when asked): runtime DLLs reach 600 MB, and
the sections hold nothing these checks need. pefile maps the file rather than
reading it into memory.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
from pathlib import Path

import pefile

from bundler.errors import CheckError
from bundler.platforms.library_facts import LibraryFacts

MACHINES = {0x8664: "AMD64", 0x14C: "I386", 0xAA64: "ARM64", 0x1C4: "ARMNT"}
PLATFORM_MACHINE = {"win-amd64": "AMD64"}
BITS = {"AMD64": 64, "ARM64": 64, "I386": 32, "ARMNT": 32}   # each machine's word size

_DIRECTORIES = [pefile.DIRECTORY_ENTRY[name] for name in (
    "IMAGE_DIRECTORY_ENTRY_IMPORT", "IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT",
    "IMAGE_DIRECTORY_ENTRY_RESOURCE")]
_EXPORT_DIRECTORY = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]


class PEInfo(LibraryFacts):
    """A DLL's facts, as its PE headers give them (bundler.platforms.library_facts)."""


def is_pe(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == b"MZ"


# The DOS header's size, and how far into the file its e_lfanew may point (the PE
# headers follow within the first pages in every linker's output).
_DOS_HEADER = 64
_HEADERS_READ = 64 * 1024
_SECTION_HEADER = 40


def pe_header_problem(path: Path) -> str:
    """Why `path` cannot be a whole PE file, read from its headers alone, or "": the
    'MZ' magic, e_lfanew pointing at 'PE\\0\\0' inside the file, the section table and
    every section's bytes (and the signature's, if any) within the file's size. Asked
    before pefile sees a file: a text file named .dll, a 0-byte or a truncated DLL is a
    clean refusal, never a pefile traceback, a long parse or facts read from half a file
    (pefile reads a DLL cut after its headers as one with no imports)."""
    size = os.stat(path).st_size
    if size < _DOS_HEADER:
        return f"it is {size} bytes, shorter than a DOS header"
    with open(path, "rb") as handle:
        head = handle.read(_HEADERS_READ)
    if head[:2] != b"MZ":
        return "it does not start with the 'MZ' magic"
    (pe_at,) = struct.unpack_from("<I", head, 0x3C)
    if pe_at + 24 > len(head) or head[pe_at:pe_at + 4] != b"PE\0\0":
        return "its DOS header points at no 'PE' header"
    sections, optional_size = struct.unpack_from("<H12xH", head, pe_at + 6)
    table = pe_at + 24 + optional_size
    if table + sections * _SECTION_HEADER > len(head):
        return "its section table lies past the end of its headers (truncated)"
    end = table + sections * _SECTION_HEADER
    for index in range(sections):
        raw_size, raw_at = struct.unpack_from("<II", head, table + index * _SECTION_HEADER + 16)
        end = max(end, raw_at + raw_size if raw_size else 0)
    end = max(end, _signature_end(head, pe_at + 24, optional_size))
    if end > size:
        return f"it is {size} bytes but its headers say {end} (truncated)"
    return ""


def _signature_end(head: bytes, optional_at: int, optional_size: int) -> int:
    """Where the Authenticode signature (the security directory, a file offset) ends."""
    magic = struct.unpack_from("<H", head, optional_at)[0] if optional_size >= 2 else 0
    at = optional_at + {0x10B: 96, 0x20B: 112}.get(magic, optional_size) + 4 * 8
    if at + 8 > optional_at + optional_size:
        return 0
    offset, length = struct.unpack_from("<II", head, at)
    return offset + length if offset and length else 0


def _open(path: Path) -> pefile.PE:
    """pefile's view of a file whose headers say it is a whole PE file."""
    try:
        problem = pe_header_problem(path)
    except OSError as exc:
        problem = exc.strerror or str(exc)
    if problem:
        raise CheckError(f"{path}: not a valid Windows DLL (not a PE file: {problem})",
                         "the file is damaged or not a DLL: get the original again")
    try:
        return pefile.PE(str(path), fast_load=True)
    except (pefile.PEFormatError, OSError) as exc:
        raise CheckError(f"{path}: not a valid Windows DLL ({exc})",
                         "the file is damaged or not a DLL: get the original again") from None


def _release(image: pefile.PE) -> None:
    """Unmap the file pefile mapped (on Windows a mapped file cannot be replaced), without
    `PE.close()`: that runs a full garbage collection every time (pefile 2024.8.26), which
    cost an app scan 2.8 s for numpy's 51 .pyd files. What the image held is freed by
    reference counting as it goes out of scope, cycles by the collector's own schedule."""
    data = getattr(image, "__data__", None)
    if isinstance(data, mmap.mmap):
        data.close()


def read_pe(path: Path, exports: bool = False) -> PEInfo:
    image = _open(path)
    try:
        # The imported DLLs' names, not each function they give (bundler asks for none):
        # pefile's parse of every thunk was most of an app scan's PE reading (681 PE
        # files: 3.4 s, 0.7 s without; the same names).
        image.parse_data_directories(
            directories=_DIRECTORIES + ([_EXPORT_DIRECTORY] if exports else []),
            import_dllnames_only=True)
        machine = image.FILE_HEADER.Machine
        return PEInfo(
            machine=MACHINES.get(machine, hex(machine)),
            bits=BITS.get(MACHINES.get(machine, ""), 0),
            file_version=_fixed_version(image, "File"),
            product_version=_fixed_version(image, "Product"),
            imports=_names(getattr(image, "DIRECTORY_ENTRY_IMPORT", [])),
            delay_imports=_names(getattr(image, "DIRECTORY_ENTRY_DELAY_IMPORT", [])),
            exports=_exported(image) if exports else (),
        )
    finally:
        _release(image)


def exported_constant(path: Path, function: str) -> int | None:
    """The constant an exported function returns, read from its code without running it.

    Read from NVIDIA's own files (cuDNN 7.5, 8.9.4, 8.9.7, 9.0, 9.1, 9.5, 9.10, 9.12):
    cudnnGetVersion is `mov eax, imm32; ret` (B8 imm32 C3) in cuDNN 7, and in the cuDNN 8
    and 9 sub-library that implements it (cudnn_ops_infer64_8, cudnn_graph64_9) an
    API-logged function that loads the constant just before its stack-cookie epilogue
    (B8 imm32 48 8B 8C 24 ...). Exactly one such load in the function's bytes (up to its
    CC padding) is the answer; None where the export is missing or its code has none or
    several (cudnn64_8/9's dispatch shim forwards the call and holds no constant)."""
    try:
        image = _open(path)
    except CheckError:
        return None
    try:
        rva = _export_rva(image, function.encode())
        code = image.get_data(rva, _LONGEST_FUNCTION) if rva is not None else b""
    except (pefile.PEFormatError, struct.error, IndexError):
        return None
    finally:
        _release(image)
    return returned_constant(code)


def _export_rva(image: pefile.PE, name: bytes) -> int | None:
    """The RVA of the export `name`, read from the export directory's own bytes alone.
    pefile's parse of the export directory reads at every exported function's address (a
    page each: 275 MB of cudnn_cnn_infer64_8.dll's 624 MB mapped for its 4446 exports);
    this reads the directory's tables and the names, found by binary search (the name
    table is sorted, as the loader's own lookup expects)."""
    entry = image.OPTIONAL_HEADER.DATA_DIRECTORY[_EXPORT_DIRECTORY]
    if not entry.VirtualAddress or entry.Size < 40:
        return None
    table = image.get_data(entry.VirtualAddress, 40)
    count, names_at, ordinals_at = struct.unpack_from("<I4xII", table, 24)
    functions_at = struct.unpack_from("<I", table, 28)[0]
    names = struct.unpack(f"<{count}I", image.get_data(names_at, 4 * count))
    low, high = 0, count
    while low < high:
        middle = (low + high) // 2
        found = image.get_string_at_rva(names[middle], 256)
        if found == name:
            ordinal = struct.unpack("<H", image.get_data(ordinals_at + 2 * middle, 2))[0]
            return int(struct.unpack("<I", image.get_data(functions_at + 4 * ordinal, 4))[0])
        low, high = (middle + 1, high) if found < name else (low, middle)
    return None


def returned_constant(code: bytes) -> int | None:
    """The one constant a function's machine code (up to its CC padding) loads into eax
    just before it returns, or None (see exported_constant)."""
    if code[:1] == b"\xb8" and code[5:6] == b"\xc3":   # the whole function: mov eax; ret
        return int.from_bytes(code[1:5], "little")
    found = _RETURNED_CONSTANT.findall(code.split(b"\xcc" * 4, 1)[0])
    return int.from_bytes(found[0], "little") if len(found) == 1 else None


_LONGEST_FUNCTION = 0x200
# mov eax, imm32 followed by the epilogue's `mov rcx, [rsp+...]` (the stack cookie). A
# `mov eax, imm32; ret` counts only as the whole function: after the function's end
# (compilers other than MSVC pad without CC) it would be the next function's.
_RETURNED_CONSTANT = re.compile(rb"\xb8(....)(?=\x48\x8b\x8c\x24)", re.DOTALL)


def _names(entries: list) -> tuple[str, ...]:
    return tuple(entry.dll.decode("ascii", "replace") for entry in entries)


def _exported(image: pefile.PE) -> tuple[str, ...]:
    """Exported names; an export by ordinal only is shown as #ORDINAL."""
    directory = getattr(image, "DIRECTORY_ENTRY_EXPORT", None)
    if directory is None:
        return ()
    return tuple(s.name.decode("ascii", "replace") if s.name else f"#{s.ordinal}"
                 for s in directory.symbols)


def _fixed_version(image: pefile.PE, kind: str) -> str:
    """The numeric version from VS_FIXEDFILEINFO (the string table is free text)."""
    infos = getattr(image, "VS_FIXEDFILEINFO", None)
    if not infos:
        return ""
    info = infos[0]
    high, low = getattr(info, f"{kind}VersionMS"), getattr(info, f"{kind}VersionLS")
    return f"{high >> 16}.{high & 0xFFFF}.{low >> 16}.{low & 0xFFFF}"
