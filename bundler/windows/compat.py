"""What doctor knows of NVIDIA's Windows drivers and GPU frameworks: compat.toml beside
this file, in the driver-table format of bundler/platforms/driver_table.py."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from bundler.platforms.driver_table import CompatFacts, FrameworkEntry, parse_compat, version_tuple
from bundler.support.toml_tables import tomllib

__all__ = ["CompatFacts", "FrameworkEntry", "compat_facts", "parse_compat", "version_tuple"]


@lru_cache(maxsize=1)
def compat_facts() -> CompatFacts:
    resource = resources.files("bundler.windows").joinpath("compat.toml")
    return parse_compat(tomllib.loads(resource.read_text(encoding="utf-8")),
                        Path(str(resource)))
