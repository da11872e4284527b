"""Windows x64 as a `bundler.platforms.registry.Platform`: PE files, DLL names compared without
regard to case, Authenticode signatures, NVIDIA's Windows driver table."""

from __future__ import annotations

import re

from bundler.platforms.registry import Platform
from bundler.windows import authenticode
from bundler.windows.authentihash import AuthenticodeDigest
from bundler.windows.compat import compat_facts
from bundler.windows.facts import windows_facts
from bundler.windows.pe_file import BITS, PLATFORM_MACHINE, exported_constant, is_pe, read_pe
from bundler.windows.shipped_names import unholdable_path

# NVIDIA's DLL names: <stem>64_<major>.dll (cudnn_graph64_9.dll, cublasLt64_{cuda_major}.dll),
# <stem>64_<major><minor>[_0].dll (cudart64_110.dll, nvrtc64_120_0.dll), <stem>_<ABI>.dll
# (nvJitLink_120_0.dll).
_STEM = re.compile(r"(?i)(?P<stem>[a-z][a-z_-]*?)(64)?_(\d+|\{cuda_major\})[0-9_]*\.dll")


def library_stem(name: str) -> str:
    match = _STEM.fullmatch(name)
    return match.group("stem") if match else ""


WINDOWS = Platform(
    name="win-amd64", os_name="Windows", wheel_tag="win_amd64",
    machine=PLATFORM_MACHINE["win-amd64"], bits=BITS, library_names=r".*\.dll", library_word="DLL",
    binary_suffixes=(".dll", ".pyd", ".exe"),
    case_insensitive=True, windows_names=True,
    signature_scheme="Authenticode", read_library=read_pe, is_library_file=is_pe,
    returned_constant=exported_constant, facts=windows_facts, driver_table=compat_facts,
    # Looked up at each call, so a test can count the checks (with the two arguments
    # it always had when no digest was streamed).
    check_signature=lambda path, trust, digests=None: (
        authenticode.check_signature(path, trust, digests) if digests
        else authenticode.check_signature(path, trust)),
    signature_digest=AuthenticodeDigest,
    shipped_roots=lambda: tuple(authenticode.shipped_roots()),
    any_shipped_signer=authenticode.any_shipped_signer,
    release_suffix="win-x64", label="Windows x64", wheel_tags=r"win_amd64",
    library_stem=library_stem, library_file=lambda stem, version: f"{stem}64_{version}.dll",
    # The framework that loads its own second fails (LoadLibrary finds the first by name).
    app_copy_harm="torch: 'WinError 127 ... Error loading {name}'",
    unholdable_path=unholdable_path)
