"""What a GPU framework release says it needs, read from its wheel without installing it:
`bundler recipes --for` and `bundler init` from a requirements file use it.

A requirement (`onnxruntime-gpu==1.20.0`, `paddlepaddle-gpu`) names the target
platform's wheel, found, in this order, in a --find-links folder (a file whose name,
version and platform tag fit), in bundler's wheel cache (`<cache>/frameworks/<wheel
file name>/`, what an earlier look read of it), else downloaded with pip (`pip download
--no-deps --only-binary=:all: --platform TAG --python-version V`, the newest CPython that
has one first); never with `offline`. Of the wheel only its METADATA and the
framework's build-info file are read (each at most 1 MiB), laid out as pip installs them
and read by facts.read_frameworks: the same readers, rules and hostile-file checks as an
installed app, and the framework table's row for the release on top. A downloaded
wheel (hundreds of MB) is not kept: its two small files are, in the wheel cache, so the
next look reads them offline. Nothing in the wheel is imported or run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from bundler.errors import SourceError
from bundler.frameworks.facts import FrameworkFacts, build_info_member, read_frameworks
from bundler.pack.sources.fetch import cache_root
from bundler.pack.store.caches import FRAMEWORKS  # what was read of each framework wheel
from bundler.platforms.api import Platform
from bundler.platforms.driver_table import version_tuple
from bundler.support.wheel_names import normalize, wheel_name

_MAX_MEMBER = 1 << 20
_CACHED = "the wheel cache"
# CPython versions asked for, newest first: framework wheels are built per CPython (TF
# 2.4 has cp36-cp38, onnxruntime-gpu 1.31 cp311 on); the first pip has a wheel for wins.
PYTHONS = ("3.13", "3.12", "3.11", "3.10", "3.9", "3.8", "3.7")
_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(.*)$")
_PIN = re.compile(r"^===?\s*([A-Za-z0-9.!+_-]+)$")
_PEP600 = re.compile(r"([a-z]+)_(\d+)_(\d+)_(\w+)")


@dataclass(frozen=True)
class Requirement:
    name: str
    spec: str            # "==1.20.0", ">=2.5", "" (any)
    line: str            # as given

    @property
    def pinned(self) -> str:
        """The exact version an `==` pin names, else ""."""
        found = _PIN.match(self.spec.strip())
        return found.group(1) if found else ""


def parse_requirement(line: str) -> Requirement | None:
    """A requirement line's name and version spec (markers after ';' dropped); None for
    an option line (-r, --find-links), a path or URL."""
    text = line.split(" #")[0].split(";")[0].strip()
    if not text or text.startswith(("-", ".", "/")) or "://" in text or "@" in text:
        return None
    found = _REQUIREMENT.match(text)
    if not found or found.group(1).lower().endswith(".whl"):
        return None
    return Requirement(found.group(1), found.group(2).replace(" ", ""), line.strip())


@dataclass(frozen=True)
class Looked:
    """One framework requirement's wheel and what it says, or why there is none."""

    requirement: Requirement
    facts: FrameworkFacts | None
    wheel: str = ""       # the wheel's file name
    where: str = ""       # "find-links folder x", "the wheel cache", "fetched with pip"
    missing: str = ""     # why no wheel was read


def look_up(requirement: Requirement, platform: Platform, find_links: Sequence[Path],
            offline: bool, environ: Mapping[str, str] = os.environ) -> Looked:
    """The wheel of `requirement` for `platform` and the facts it holds."""
    wheel, where = _local(requirement, platform, find_links, environ)
    if wheel is not None and wheel.is_dir():   # the wheel cache keeps what was read of it
        return Looked(requirement, _read(wheel, wheel.name, platform), wheel.name, where)
    if wheel is None and not offline:
        kept = _download(requirement, platform, environ)
        if kept is not None:
            return Looked(requirement, _read(kept, kept.name, platform), kept.name,
                          "fetched with pip; its METADATA and build-info file kept in the "
                          "wheel cache")
    if wheel is None:
        ways = ("no --find-links folder or the wheel cache holds it; --offline fetches "
                "nothing") if offline else f"pip found no {platform.release_suffix} wheel of it"
        return Looked(requirement, None, missing=ways)
    return Looked(requirement, wheel_facts(wheel, platform), wheel.name, where)


def wheel_facts(wheel: Path, platform: Platform) -> FrameworkFacts | None:
    """The facts of the framework in `wheel` (its METADATA and build-info file, unpacked
    into a temporary folder, read as installed); None if bundler knows no such
    framework. SourceError for a file that is no readable wheel."""
    with tempfile.TemporaryDirectory(prefix="bundler-wheel-") as tmp:
        site = Path(tmp) / "site-packages"
        _unpack(wheel, site)
        return _read(site, wheel.name, platform)


def _unpack(wheel: Path, site: Path) -> None:
    """The wheel's METADATA and its framework's build-info file, laid out in `site` as
    pip installs them."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            metadata = next((n for n in names if re.fullmatch(
                r"[^/]+\.dist-info/METADATA", n)), None)
            if metadata is None:
                raise SourceError(f"{wheel}: no .dist-info/METADATA in it, so no wheel",
                                  "give the framework's wheel as pip downloads it")
            _extract(archive, metadata, site / metadata)
            member = build_info_member(_metadata_name(site / metadata))
            for name in names if member else ():
                if _installed_path(name) == member:
                    _extract(archive, name, site / member)
                    break
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SourceError(f"{wheel}: not a readable wheel ({exc})",
                          "delete it (a partial download?) and look again") from None


def _read(site: Path, wheel: str, platform: Platform) -> FrameworkFacts | None:
    found = read_frameworks(site, [site], platform.driver_table())
    if not found:
        return None
    facts = found[0]
    # the file is the wheel's: say so, as "x.whl: onnxruntime/capi/version_info.py"
    if facts.file and not facts.file.startswith("its "):
        return replace(facts, file=f"{wheel}: {facts.file}")
    return facts


def _extract(archive: zipfile.ZipFile, member: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with archive.open(member) as source:
        data = source.read(_MAX_MEMBER + 1)
    target.write_bytes(data[:_MAX_MEMBER + 1])   # an oversized file stays oversized


def _metadata_name(path: Path) -> str:
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.lower().startswith("name:"):
            return line.split(":", 1)[1].strip()
        if not line.strip():
            break
    return ""


def _installed_path(member: str) -> str:
    """Where pip installs a wheel member: `x.data/purelib/a/b` and `x.data/platlib/a/b`
    at the top of site-packages, as `a/b`."""
    parts = PurePosixPath(member).parts
    if len(parts) > 2 and parts[0].endswith(".data") and parts[1] in ("purelib", "platlib"):
        return "/".join(parts[2:])
    return member


def _fits(file_name: str, requirement: Requirement, platform: Platform) -> bool:
    name = wheel_name(file_name)
    if name is None or normalize(name.distribution) != normalize(requirement.name):
        return False
    if not any(re.fullmatch(platform.wheel_tags, t) for t in name.platforms):
        return False
    pinned = requirement.pinned
    return not pinned or name.version == pinned or \
        version_tuple(name.version) == version_tuple(pinned) and "+" not in pinned \
        and _tag(name.version) == _tag(pinned)


def _tag(version: str) -> str:
    return version.split("+", 1)[1] if "+" in version else version.rpartition(".post")[2] \
        if ".post" in version else ""


def _local(requirement: Requirement, platform: Platform, find_links: Iterable[Path],
           environ: Mapping[str, str]) -> tuple[Path | None, str]:
    """The newest fitting wheel in a find-links folder, else in the wheel cache (only
    for an exact pin or no version at all: a range is pip's to resolve)."""
    places = [(folder, f"find-links folder {folder}") for folder in find_links]
    if requirement.pinned or not requirement.spec:
        places.append((cache_root(environ) / FRAMEWORKS, _CACHED))
    for folder, where in places:
        try:   # a find-links folder holds wheels; the cache, a folder per wheel read
            found = [p for p in folder.iterdir() if (p.is_dir() if where == _CACHED
                                                     else p.is_file())
                     and _fits(p.name, requirement, platform)]
        except OSError:
            continue
        if found:
            return max(found, key=lambda p: version_tuple(
                wheel_name(p.name).version)), where   # type: ignore[union-attr]
    return None, ""


def pip_platforms(tag: str) -> list[str]:
    """The platform tags pip is to accept for a target's wheel tag: the tag itself, and
    for a PEP 600 tag (<name>_2_27_<arch>) every older glibc's and the legacy aliases
    PEP 600 gives them (<name>2014: 2_17, <name>2010: 2_12, <name>1: 2_5), which pip does
    not add itself (a wheel tagged only manylinux2014 is found for manylinux_2_27)."""
    found = _PEP600.fullmatch(tag)
    if not found:
        return [tag]
    name, major, minor, arch = found.group(1), int(found.group(2)), int(found.group(3)), \
        found.group(4)
    tags = [f"{name}_{major}_{n}_{arch}" for n in range(minor, 4, -1)]
    if major == 2:
        tags += [f"{name}{alias}_{arch}" for alias, since in (("2014", 17), ("2010", 12),
                                                            ("1", 5)) if minor >= since]
    return tags


def _download(requirement: Requirement, platform: Platform,
              environ: Mapping[str, str]) -> Path | None:
    """pip download of the requirement's wheel for the platform into the wheel cache;
    None when no CPython pip is asked for has one (SourceError when pip fails else)."""
    root = cache_root(environ) / FRAMEWORKS
    root.mkdir(parents=True, exist_ok=True)
    spec = f"{requirement.name}{requirement.spec}"
    options = [a for tag in pip_platforms(platform.wheel_tag) for a in ("--platform", tag)]
    for python in PYTHONS:
        folder = Path(tempfile.mkdtemp(prefix=".download-", dir=root))
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                 "--disable-pip-version-check", "--only-binary=:all:", *options,
                 "--implementation", "cp", "--python-version", python,
                 "--dest", str(folder), spec],
                capture_output=True, text=True, check=False)
            got = [p for p in folder.iterdir() if p.suffix == ".whl"]
            if done.returncode == 0 and len(got) == 1:
                # kept: the two small files read, not the wheel (hundreds of MB; pip
                # fetches it again if another version is asked for)
                kept = root / got[0].name
                _unpack(got[0], folder / "site")
                shutil.rmtree(kept, ignore_errors=True)
                os.replace(folder / "site", kept)
                return kept
            if "No matching distribution" not in done.stderr \
                    and "Could not find a version" not in done.stderr:
                raise SourceError(f"pip could not download {spec}: "
                                  f"{done.stderr.strip().splitlines()[-1:] or done.returncode}",
                                  "check your network and pip's index settings (pip config "
                                  "list), or download the wheel yourself and give its "
                                  "folder with --find-links")
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return None
