"""The app's requirements as Windows wheels, resolved with this machine's pip.

pip resolves the spec's requirements file for the bundle's Python, not the one running
bundler: `--platform win_amd64 --implementation cp --python-version 3.X` with
`--only-binary=:all:` (a source distribution would have to be built for Windows, which
pip cannot do here). pip resolves once: `pip download` into a fresh folder (the index
and pip's own options apply, also those the requirements file holds: --index-url,
--find-links, --hash ...; under --offline only the wheel cache's folder), whose wheels
are kept in bundler's wheel cache (python/cp3X-win_amd64/) and recorded in the lock
(name, version, file, sha256). Then bundler unpacks exactly those wheels itself
(wheel_install: the set is exact, nothing is left for pip to decide). A re-pack whose
requirement files the lock records unchanged skips the resolve: it unpacks the lock's
wheels from the cache, each checked by its sha256 (fetching one that is missing by its
exact pin and hash, or naming it under --offline), starting no pip process; both ways
make the same site-packages. Nothing is compiled (this machine's Python would write
its own bytecode).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.builders.cpython_embed import PLATFORM, Embeddable
from bundler.pack.builders.wheel_install import install_wheels
from bundler.pack.sources.fetch import cache_root
from bundler.support.hashing import sha256_file
from bundler.targets.registry import platform_for

WHEEL_TAG = platform_for(PLATFORM).wheel_tag   # the embeddable CPython's platform's

def wheel_cache(embed: Embeddable, environ: Mapping[str, str]) -> Path:
    """Where the requirements' wheels are kept for --offline packs."""
    return cache_root(environ) / "python" / f"cp{embed.tag}-{WHEEL_TAG}"


def _target_options(embed: Embeddable) -> list[str]:
    return ["--only-binary=:all:", "--platform", WHEEL_TAG, "--implementation", "cp",
            "--python-version", embed.python, "--disable-pip-version-check"]


@dataclass(frozen=True)
class LockedWheel:
    """One wheel of the resolved set, as the lock records it."""

    name: str      # the project, normalized (PEP 503)
    version: str
    file: str      # the wheel's file name, as in the wheel cache
    sha256: str

    @classmethod
    def of_file(cls, wheel: Path) -> LockedWheel:
        project, version = wheel.name.split("-")[:2]
        return cls(re.sub(r"[-_.]+", "-", project).lower(), version, wheel.name,
                   sha256_file(wheel, f"hashing {wheel.name}"))


def install_requirements(requirements: Path, embed: Embeddable, site_packages: Path,
                         environ: Mapping[str, str], offline: bool,
                         locked: tuple[LockedWheel, ...] | None = None
                         ) -> tuple[LockedWheel, ...]:
    """Install what `requirements` names, as win_amd64 wheels, into `site_packages`, and
    return the wheel set. `locked`: the set the lock names for these very requirement
    files; then exactly those wheels are installed from the wheel cache (checked by
    sha256), with no resolver and no index."""
    if not requirements.is_file():
        raise SourceError(f"{requirements}: app.requirements names no such file",
                          "set app.requirements to a pip requirements file, relative to "
                          "the spec, or remove it")
    cache = wheel_cache(embed, environ)
    if locked is not None:
        print(f"bundler: installing the {len(locked)} wheel(s) the lock names for "
              f"{requirements.name} from the wheel cache (requirements unchanged: "
              "nothing resolved)", file=sys.stderr)
        cached_wheels(locked, cache, requirements, embed, offline)
        _install_files([cache / wheel.file for wheel in locked], site_packages)
        return locked
    print(f"bundler: installing {requirements.name} for Windows x64, CPython "
          f"{embed.python}, with pip", file=sys.stderr)
    cache.mkdir(parents=True, exist_ok=True)
    download = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
    try:
        if offline:   # pip resolves from the cache's wheels only
            _pip(["download", "--dest", str(download), "--no-index", "--find-links",
                  str(cache), *_target_options(embed), "-r", str(requirements)],
                 requirements, "install",
                 f"pack once without --offline (the wheels are then kept in {cache})")
        else:
            try:
                _pip(["download", "--dest", str(download), *_target_options(embed),
                      "-r", str(requirements)], requirements, "download")
            except SourceError as failed:
                covered = _cache_covers(requirements, embed, cache, download)
                raise SourceError(failed.message, _download_hint(cache, covered)) from None
            _keep(download, cache)
        wheels = tuple(LockedWheel.of_file(wheel) for wheel in sorted(download.glob("*.whl")))
        _install_files([download / wheel.file for wheel in wheels], site_packages)
        return wheels
    finally:
        shutil.rmtree(download, ignore_errors=True)


def _cache_covers(requirements: Path, embed: Embeddable, cache: Path, scratch: Path
                  ) -> bool:
    """Whether the wheel cache alone satisfies the requirements (pip resolves from it,
    no index), asked only once a download failed, so the hint can say so."""
    try:
        _pip(["download", "--dest", str(scratch / "offline"), "--no-index", "--find-links",
              str(cache), *_target_options(embed), "-r", str(requirements)], requirements,
             "resolve")
    except SourceError:
        return False
    return True


def _download_hint(cache: Path, covered: bool) -> str:
    """pip could not download: the network, the index, or a requirement with no Windows
    wheel. Where the wheel cache holds every wheel the requirements need (`covered`),
    --offline needs nothing more: said so."""
    kept = len(list(cache.glob("*.whl"))) if covered else 0
    offline = (f"; if the network is what failed, the wheel cache {cache} holds every "
               f"wheel they need ({kept} kept): pack --offline installs from it alone"
               if kept else "")
    return (f"every requirement needs a {WHEEL_TAG} (or pure Python) wheel for the spec's "
            f"app.python; check the names and versions, the network and your package "
            f"index{offline}")


def _install_files(wheels: list[Path], site_packages: Path) -> None:
    """Exactly these wheels, unpacked by bundler (wheel_install), none other: what the
    set of a resolve or of the lock holds, so both make the same site-packages."""
    install_wheels(wheels, site_packages)
    _drop_scripts(site_packages / "bin")


def cached_wheels(locked: tuple[LockedWheel, ...], cache: Path, requirements: Path,
                  embed: Embeddable, offline: bool) -> None:
    """The locked wheels' files are in the wheel cache, each checked by its sha256. Online,
    those missing (or damaged) are fetched by their exact pins and hashes (no
    resolve); offline they are refused by name."""
    missing = [wheel for wheel in locked if not _holds(cache / wheel.file, wheel.sha256)]
    if missing and offline:
        names = ", ".join(wheel.file for wheel in missing)
        raise SourceError(f"{requirements}: --offline, but the wheel cache {cache} lacks "
                          f"{len(missing)} wheel(s) the lock names: {names}",
                          "pack once without --offline (bundler fetches exactly these by "
                          "the lock's sha256), or pass --update-lock to resolve the "
                          "requirements again from what the cache holds")
    if missing:
        _fetch_pinned(missing, cache, requirements, embed)


def _holds(kept: Path, sha256: str) -> bool:
    return kept.is_file() and sha256_file(kept, f"hashing {kept.name}") == sha256


def _fetch_pinned(missing: list[LockedWheel], cache: Path, requirements: Path,
                  embed: Embeddable) -> None:
    """`pip download --no-deps --require-hashes` of `name==version` for each missing
    wheel, with the index options of the user's requirements file, into the cache."""
    cache.mkdir(parents=True, exist_ok=True)
    download = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
    try:
        pins = download / "pins.txt"
        pins.write_text("".join(_index_options(requirements)) + "".join(
            f"{wheel.name}=={wheel.version} --hash=sha256:{wheel.sha256}\n"
            for wheel in missing), encoding="utf-8")
        names = ", ".join(wheel.file for wheel in missing)
        _pip(["download", "--dest", str(download), "--no-deps", "--require-hashes",
              *_target_options(embed), "-r", str(pins)], requirements,
             f"fetch the locked wheel(s) {names} missing from the wheel cache for",
             "check the network and your package index, or pass --update-lock to "
             "resolve the requirements again")
        for wheel in missing:
            fetched = download / wheel.file
            if not _holds(fetched, wheel.sha256):
                raise SourceError(f"{requirements}: the lock names {wheel.file}, but the "
                                  "index served another file for "
                                  f"{wheel.name}=={wheel.version}",
                                  "pass --update-lock to resolve the requirements again")
            os.replace(fetched, cache / wheel.file)
    finally:
        shutil.rmtree(download, ignore_errors=True)


def _index_options(requirements: Path) -> list[str]:
    """The lines of the requirements file that say where wheels come from (the index,
    extra indexes, --find-links, relative to its folder), for fetching exact pins."""
    options = ("-i", "--index-url", "--extra-index-url", "--no-index", "-f",
               "--find-links", "--trusted-host")
    lines = requirements.read_text(encoding="utf-8", errors="replace").splitlines()
    kept = []
    for line in lines:
        words = line.split()
        if words and words[0].split("=")[0] in options:
            if words[0] in ("-f", "--find-links") and len(words) > 1 and "://" not in words[1]:
                words[1] = str(requirements.parent / words[1])
            kept.append(" ".join(words) + "\n")
    return kept


def _keep(download: Path, cache: Path) -> None:
    """Each downloaded wheel into the cache, for --offline (a file by that name is the
    same wheel: names carry version and build tags)."""
    for wheel in download.glob("*.whl"):
        kept = cache / wheel.name
        if not kept.exists():
            shutil.copyfile(wheel, kept.with_name(kept.name + ".part"))
            os.replace(kept.with_name(kept.name + ".part"), kept)


def _drop_scripts(folder: Path) -> None:
    """pip --target writes console scripts for this machine (#! lines) into bin/:
    useless on Windows; a package's own bin/ (not scripts) stays."""
    if not folder.is_dir():
        return
    for script in folder.iterdir():
        if script.is_file() and script.read_bytes()[:2] == b"#!":
            script.unlink()
    if not any(folder.iterdir()):
        folder.rmdir()


def _pip(args: list[str], requirements: Path, what: str, hint: str = "") -> None:
    """Run this Python's pip in the requirements file's folder (where a user runs
    `pip install -r`), in bundler's own environment (the user's pip settings, proxies);
    a failure names pip's own error lines."""
    result = subprocess.run([sys.executable, "-m", "pip", *args], cwd=requirements.parent,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            check=False)
    if result.returncode == 0:
        return
    lines = (result.stdout + result.stderr).strip().splitlines()
    errors = [line for line in lines if line.startswith("ERROR:")] or lines[-1:]
    said = " ".join(errors) or f"pip exited with {result.returncode}"
    raise SourceError(f"{requirements}: pip could not {what} the app's requirements as "
                      f"{WHEEL_TAG} wheels: {said}",
                      hint or f"every requirement needs a {WHEEL_TAG} (or pure Python) wheel "
                      "for the spec's app.python; check the names and versions, the "
                      "network and your package index")
