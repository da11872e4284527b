"""Knowledge of Windows itself (not of any runtime): which DLLs every machine has,
which come with the NVIDIA driver, what may ship in an app, and how CUDA names its
libraries and its toolkit variables. The facts are in windows.toml beside this file,
read into the shape every platform fills (bundler.platforms.library_facts.OSFacts)."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from bundler.platforms.library_facts import OSFacts, parse_os_facts
from bundler.support.toml_tables import tomllib

# cudart64_101 -> 101, cublas64_12 -> 12: the digits after the name are the CUDA release.
_LIBRARY_NAME = r"^(?:{prefixes})(?:64)?_(\d+)"


@lru_cache(maxsize=1)
def windows_facts() -> OSFacts:
    resource = resources.files("bundler.windows").joinpath("windows.toml")
    return parse_windows_facts(tomllib.loads(resource.read_text(encoding="utf-8")),
                               Path(str(resource)))


def parse_windows_facts(data: dict, path: Path) -> OSFacts:
    """windows.toml, read strictly (a key the code does not read fails)."""
    return parse_os_facts(data, path, case_insensitive=True, library_name=_LIBRARY_NAME)
