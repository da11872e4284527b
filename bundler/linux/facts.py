"""Knowledge of glibc Linux itself (not of any runtime): the libraries every system has,
those NVIDIA's driver installs, and how CUDA names its libraries (linux.toml), and the
Linux driver table (compat.toml)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from bundler.platforms.driver_table import CompatFacts, parse_compat
from bundler.platforms.library_facts import OSFacts, parse_os_facts
from bundler.support.toml_tables import tomllib

# libcudart.so.13 -> 13: the SONAME's first number is the CUDA major.
_LIBRARY_NAME = r"^(?:{prefixes})\.so\.(\d+)"


@lru_cache(maxsize=1)
def linux_facts() -> OSFacts:
    resource = resources.files("bundler.linux").joinpath("linux.toml")
    return parse_os_facts(tomllib.loads(resource.read_text(encoding="utf-8")),
                          Path(str(resource)), case_insensitive=False,
                          library_name=_LIBRARY_NAME)


@lru_cache(maxsize=1)
def linux_driver_table() -> CompatFacts:
    resource = resources.files("bundler.linux").joinpath("compat.toml")
    return parse_compat(tomllib.loads(resource.read_text(encoding="utf-8")),
                        Path(str(resource)))
