"""A driver table: NVIDIA's minimum driver per CUDA release, minor-version
compatibility, and the framework rows (which CUDA/cuDNN libraries a framework release
loads). Each platform ships its own table in this format (bundler/windows/compat.toml,
bundler/linux/compat.toml), read strictly here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import BundlerError
from bundler.support.toml_tables import Table
from bundler.support.wheel_names import normalize

_NUMBERS = re.compile(r"\d+")
_BUILD_POST = re.compile(r"\.(post\d{3,})$")


def version_tuple(text: str) -> tuple[int, ...]:
    """The leading dotted numbers of a version: "2.1.0.post101" -> (2, 1, 0)."""
    numbers = []
    for part in text.split("+", 1)[0].split("."):
        if not part.isdigit():
            leading = _NUMBERS.match(part)
            if leading:
                numbers.append(int(leading.group()))
            break
        numbers.append(int(part))
    return tuple(numbers)


@dataclass(frozen=True)
class FrameworkEntry:
    """One row of the framework table: a version range and what it expects."""

    name: str
    distributions: tuple[str, ...]
    min: str
    below: str
    cuda: str
    cudnn: str
    local: str = ""
    loads: tuple[str, ...] = ()
    bundles_runtime: bool = False

    def matches(self, distribution: str, version: str) -> bool:
        """Its distribution, min <= version < below, and the build's tag: a row with
        `local` matches only that tag, a row without it only an untagged version (a
        build tagged post101 is not the PyPI default build a plain row describes)."""
        if normalize(distribution) not in {normalize(d) for d in self.distributions}:
            return False
        if build_tag(version) != self.local:
            return False
        return version_tuple(self.min) <= version_tuple(version) < version_tuple(self.below)


def build_tag(version: str) -> str:
    """A build's tag: the local part ("2.5.1+cu124": "cu124"), else a post segment of
    three or more digits, which PaddlePaddle uses for its CUDA builds ("2.2.2.post101":
    "post101", CUDA 10.1); "" for a plain version ("1.14.1.post1" is a post-release)."""
    if "+" in version:
        return version.split("+", 1)[1]
    found = _BUILD_POST.search(version)
    return found.group(1) if found else ""


@dataclass(frozen=True)
class CompatFacts:
    scan: tuple[str, ...]
    nvidia_smi: tuple[str, ...]
    driver_minimum: tuple[tuple[str, str], ...]   # (CUDA, driver), oldest CUDA first
    frameworks: tuple[FrameworkEntry, ...]
    minor_compatible: tuple[tuple[str, str], ...] = ()   # (CUDA major, oldest driver)

    def min_driver_for(self, cuda: str) -> str:
        """The driver of a CUDA release ("12.9", or an update "12.9.1"): the oldest with
        all its features. An update the table lacks gets its release's (GA) row."""
        wanted = version_tuple(cuda)
        for key in (wanted, wanted[:2]):
            found = next((d for c, d in self.driver_minimum if version_tuple(c) == key), "")
            if found:
                return found
        return ""

    def minor_compatible_from(self, cuda: str) -> str:
        """The oldest driver of CUDA `cuda`'s major that runs it under minor-version
        compatibility, or "" (before CUDA 11, or a major the table lacks)."""
        return dict(self.minor_compatible).get(cuda.partition(".")[0], "")

    def oldest_driver_for(self, cuda: str) -> str:
        """The oldest driver that runs a CUDA `cuda` runtime at all; "" if unknown."""
        return self.minor_compatible_from(cuda) or self.min_driver_for(cuda)

    def cuda_for_driver(self, driver: str) -> str:
        """The newest CUDA a driver version runs, or "" if older than every row."""
        have = version_tuple(driver)
        supported = [c for c, d in self.driver_minimum if version_tuple(d) <= have]
        return supported[-1] if supported else ""

    def framework_entry(self, distribution: str, version: str) -> FrameworkEntry | None:
        return next((f for f in self.frameworks if f.matches(distribution, version)), None)

    @property
    def framework_distributions(self) -> tuple[str, ...]:
        names = dict.fromkeys(d for f in self.frameworks for d in f.distributions)
        return tuple(names)


def parse_compat(data: dict, path: Path) -> CompatFacts:
    top = Table(data, path, "", BundlerError, "docs/architecture.md")
    scan = tuple(top.take_str_list("scan"))
    driver = top.table("driver")
    nvidia_smi = tuple(driver.take_str_list("nvidia_smi", []))
    minimum = driver.table("minimum")
    rows = sorted(((cuda, minimum.take(cuda, str)) for cuda in minimum.names()),
                  key=lambda row: version_tuple(row[0]))
    minimum.done()
    compatible = driver.table("minor_version_compatibility", required=False)
    minor = tuple((major, compatible.take(major, str)) for major in compatible.names())
    compatible.done()
    driver.done()
    frameworks = tuple(_framework(Table(entry, path, "framework", BundlerError))
                       for entry in top.take("framework", list, []))
    top.done()
    return CompatFacts(scan=scan, nvidia_smi=nvidia_smi, driver_minimum=tuple(rows),
                       frameworks=frameworks, minor_compatible=minor)


def _framework(table: Table) -> FrameworkEntry:
    entry = FrameworkEntry(
        name=table.take("name", str), distributions=tuple(table.take_str_list("distributions")),
        min=table.take("min", str), below=table.take("below", str),
        cuda=table.take("cuda", str), cudnn=table.take("cudnn", str),
        local=table.take("local", str, ""), loads=tuple(table.take_str_list("loads", [])),
        bundles_runtime=table.take("bundles_runtime", bool, False))
    table.done()
    return entry
