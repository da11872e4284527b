"""Facts about a PE file (DLL or EXE) that the pack checks and `inspect` need.

pefile is opened with fast_load and only the import, delay-import and resource
directories are parsed (plus exports, when asked): runtime DLLs reach 600 MB, and
the sections hold nothing these checks need. pefile maps the file rather than
reading it into memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pefile

from bundler.errors import CheckError

MACHINES = {0x8664: "AMD64", 0x14C: "I386", 0xAA64: "ARM64", 0x1C4: "ARMNT"}
PLATFORM_MACHINE = {"win-amd64": "AMD64"}
BITS = {"AMD64": 64, "ARM64": 64, "I386": 32, "ARMNT": 32}

_DIRECTORIES = [pefile.DIRECTORY_ENTRY[name] for name in (
    "IMAGE_DIRECTORY_ENTRY_IMPORT", "IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT",
    "IMAGE_DIRECTORY_ENTRY_RESOURCE")]
_EXPORT_DIRECTORY = pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_EXPORT"]


@dataclass(frozen=True)
class PEInfo:
    machine: str
    file_version: str
    product_version: str
    imports: tuple[str, ...]
    delay_imports: tuple[str, ...]
    exports: tuple[str, ...] = ()   # read only when asked: cuBLAS exports thousands

    @property
    def all_imports(self) -> tuple[str, ...]:
        return self.imports + self.delay_imports

    @property
    def bits(self) -> int:
        return BITS.get(self.machine, 0)


def is_pe(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == b"MZ"


def read_pe(path: Path, exports: bool = False) -> PEInfo:
    try:
        image = pefile.PE(str(path), fast_load=True)
    except (pefile.PEFormatError, OSError) as exc:
        raise CheckError(f"{path}: not a valid Windows DLL ({exc})",
                         "the file is damaged or not a DLL: get the original again") from None
    try:
        image.parse_data_directories(
            directories=_DIRECTORIES + ([_EXPORT_DIRECTORY] if exports else []))
        machine = image.FILE_HEADER.Machine
        return PEInfo(
            machine=MACHINES.get(machine, hex(machine)),
            file_version=_fixed_version(image, "File"),
            product_version=_fixed_version(image, "Product"),
            imports=_names(getattr(image, "DIRECTORY_ENTRY_IMPORT", [])),
            delay_imports=_names(getattr(image, "DIRECTORY_ENTRY_DELAY_IMPORT", [])),
            exports=_exported(image) if exports else (),
        )
    finally:
        image.close()


def exported_constant(path: Path, function: str) -> int | None:
    """The constant an exported function returns, read from its code without running it:
    cuDNN 7's `cudnnGetVersion` is `mov eax, imm32; ret` (B8 imm32 C3). None where the
    export is missing or its code is another shape (cuDNN 8 and 9's shim forwards the call
    to a sub-library)."""
    try:
        image = pefile.PE(str(path), fast_load=True)
    except (pefile.PEFormatError, OSError):
        return None
    try:
        image.parse_data_directories(directories=[_EXPORT_DIRECTORY])
        directory = getattr(image, "DIRECTORY_ENTRY_EXPORT", None)
        rva = next((s.address for s in (directory.symbols if directory else [])
                    if s.name == function.encode()), None)
        code = image.get_data(rva, 6) if rva is not None else b""
    finally:
        image.close()
    if code[:1] == b"\xb8" and code[5:6] == b"\xc3":
        return int.from_bytes(code[1:5], "little")
    return None


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
