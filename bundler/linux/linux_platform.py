"""Linux x86-64 (glibc) as a `bundler.platforms.registry.Platform`: ELF shared libraries, names
compared exactly, NVIDIA's Linux driver table. There is no code signing on Linux: a
runtime is trusted by the sha256 pins of NVIDIA's wheels (and their RECORD) or, for a
folder, by the lock's pins from its first pack."""

from __future__ import annotations

import re
from pathlib import Path

from bundler.linux.driver import probe_libcuda
from bundler.linux.elf_file import BITS, is_elf, read_elf
from bundler.linux.facts import linux_driver_table, linux_facts
from bundler.linux.library_search import bare_name_search, read_ldconfig
from bundler.platforms.registry import UNSIGNED, Platform, SignatureCheck, Trust


def _no_signatures(path: Path, trust: Trust) -> SignatureCheck:
    return SignatureCheck(status=UNSIGNED, detail="Linux libraries carry no signature")


# A library's SONAME-style file: lib<stem>.so.<version> (libcudnn_graph.so.9,
# libnvrtc-builtins.so.13.0); NVIDIA's wheels hold only these, no links.
_STEM = re.compile(r"lib(?P<stem>[A-Za-z][A-Za-z0-9_-]*)\.so(\.\d+)+")


def library_stem(name: str) -> str:
    match = _STEM.fullmatch(name)
    return match.group("stem") if match else ""


LINUX = Platform(
    name="linux-x86_64", os_name="Linux", wheel_tag="manylinux_2_27_x86_64",
    machine="X86_64", bits=BITS, library_names=r".*\.so(\.[0-9]+)*", library_word="library",
    binary_suffixes=(".so",), case_insensitive=False, windows_names=False, signature_scheme="",
    read_library=read_elf, is_library_file=is_elf,
    returned_constant=lambda path, function: None, facts=linux_facts,
    driver_table=linux_driver_table, check_signature=_no_signatures,
    shipped_roots=lambda: (),
    any_shipped_signer=lambda: Trust(signer="", roots=(), timestamp_roots=()),
    release_suffix="linux-x64", label="Linux x86-64",
    # manylinux1/2010/2014 and PEP 600's manylinux_2_NN: NVIDIA has used each.
    wheel_tags=r"manylinux(1|2010|2014|_2_\d+)_x86_64",
    library_stem=library_stem, library_file=lambda stem, version: f"lib{stem}.so.{version}",
    probe_driver=probe_libcuda,
    bare_name_search=lambda patterns, path: bare_name_search(patterns, path, read_ldconfig()),
    app_copy_harm="torch opens site-packages/nvidia/*/lib by absolute path, so both "
    "{name} are mapped and which one a symbol binds to depends on the load order")
