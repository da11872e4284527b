"""The app's requirements as wheels for the bundle's platform and Python.

The set is resolved for the target, not for this machine: uv (target_resolve) evaluates
the requirements' environment markers as the bundle's CPython would, where pip would
evaluate them for the machine it runs on whatever `--platform` says, and ship the
wrong dependencies (pip is no longer asked to resolve). The wheel uv chose for each
project is taken by its URL and checked against the sha256 uv read from the index: a
--find-links folder's file is copied, an index's is fetched with this machine's pip
(`pip download --no-deps --require-hashes NAME @ URL`: pip decides nothing there,
no marker and no version, it is the one downloader here that already takes the
user's pip settings: proxies, certificates, credentials; uv has no download command).
The `--hash` pins of the requirement files are checked as pip checks them (uv
resolves without looking at them). The wheels are kept in bundler's wheel cache
(python/cp3X-win_amd64/) and recorded in the lock (name, version, file, sha256) with
what they were resolved for (`wheels_for`). Then bundler unpacks exactly those wheels
itself (wheel_install: the set is exact, nothing is left for an installer to decide).
A re-pack whose requirement files the lock records unchanged, resolved for the same
target, skips the resolve: it unpacks the lock's wheels from the cache, each checked by
its sha256 (fetching one that is missing by its exact pin and hash, or naming it under
--offline), starting no resolver and no pip; both ways make the same site-packages.
Nothing is compiled (this machine's Python would write its own bytecode).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from bundler.errors import SourceError
from bundler.pack.builders.cpython_embed import PLATFORM, Embeddable
from bundler.pack.builders.target_resolve import Resolved, ResolveTarget, Wheel, resolve
from bundler.pack.builders.wheel_install import install_wheels
from bundler.pack.requirement_files import hash_pins, source_options
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


def install_requirements(requirements: Path, embed: Embeddable, target: ResolveTarget,
                         site_packages: Path, environ: Mapping[str, str], offline: bool,
                         locked: tuple[LockedWheel, ...] | None = None
                         ) -> tuple[tuple[LockedWheel, ...], dict[str, str]]:
    """Install what `requirements` names, resolved for `target` as wheels, into
    `site_packages`, and return the wheel set. `locked`: the set the lock names for
    these very requirement files and this target; then exactly those wheels are
    installed from the wheel cache (checked by sha256), with no resolver and no index.
    Also returns the sha256 of each file installed, by its path below site_packages."""
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
        return locked, _install_files([cache / wheel.file for wheel in locked], site_packages)
    print(f"bundler: resolving {requirements.name} for {target.describe()} with uv",
          file=sys.stderr)
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".resolve-", dir=cache))
    try:
        resolved = _check_hash_pins(
            requirements, _resolve(requirements, target, scratch, cache, offline))
        wheels = _fetched(resolved, requirements, embed, cache, scratch)
        return wheels, _install_files([cache / wheel.file for wheel in wheels], site_packages)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _resolve(requirements: Path, target: ResolveTarget, scratch: Path, cache: Path,
             offline: bool) -> list[Resolved]:
    if offline:
        try:
            return resolve(requirements, target, scratch, offline_from=cache)
        except SourceError as failed:
            raise SourceError(failed.message.replace("could not resolve", "could not "
                                                     "resolve offline", 1),
                              f"pack once without --offline (the wheels are then kept "
                              f"in {cache})") from None
    try:
        return resolve(requirements, target, scratch)
    except SourceError as failed:
        covered = _cache_covers(requirements, target, cache, scratch)
        raise SourceError(failed.message, _download_hint(cache, covered)) from None


def _cache_covers(requirements: Path, target: ResolveTarget, cache: Path, scratch: Path
                  ) -> bool:
    """Whether the wheel cache alone satisfies the requirements (uv resolves from it,
    no index), asked only once a resolve failed, so the hint can say so."""
    (scratch / "offline").mkdir(exist_ok=True)
    try:
        resolve(requirements, target, scratch / "offline", offline_from=cache)
    except SourceError:
        return False
    return True


def _download_hint(cache: Path, covered: bool) -> str:
    """uv could not resolve: the network, the index, or a requirement with no wheel for
    the target. Where the wheel cache holds every wheel the requirements need
    (`covered`), --offline needs nothing more: said so."""
    kept = len(list(cache.glob("*.whl"))) if covered else 0
    offline = (f"; if the network is what failed, the wheel cache {cache} holds every "
               f"wheel they need ({kept} kept): pack --offline installs from it alone"
               if kept else "")
    return (f"every requirement needs a {WHEEL_TAG} (or pure Python) wheel for the spec's "
            f"app.python (a source distribution cannot be built for the target here); "
            f"check the names and versions, the network and your package index{offline}")


def _check_hash_pins(requirements: Path, resolved: list[Resolved]) -> list[Resolved]:
    """pip's hash-checking mode, which uv's resolve does not apply: once a requirement
    line has a --hash (or a file says --require-hashes), every project needs a wheel
    matching a pin of its own; only those wheels are kept."""
    pins = hash_pins(requirements)
    if pins is None:
        return resolved
    kept = []
    for project in resolved:
        files = ", ".join(wheel.file for wheel in project.wheels)
        if project.name not in pins:
            raise SourceError(f"{requirements}: hashes are given, but none for "
                              f"{project.name} ({files}), which the requirements need",
                              f"add {project.name}=={project.version} --hash=sha256:... "
                              "for a file you checked, or remove every --hash")
        wheels = tuple(w for w in project.wheels if w.sha256 in pins[project.name])
        if not wheels:
            raise SourceError(f"{requirements}: {files} (sha256 "
                              f"{', '.join(w.sha256 for w in project.wheels)}): no "
                              f"--hash given for {project.name} matches",
                              "check where the wheel comes from, and the pinned hash")
        kept.append(replace(project, wheels=wheels))
    return kept


def _fetched(resolved: list[Resolved], requirements: Path, embed: Embeddable,
             cache: Path, scratch: Path) -> tuple[LockedWheel, ...]:
    """Each resolved project's wheel in the wheel cache, checked by uv's sha256: where
    uv names one, a local file is copied, an index's fetched by its URL and hash; where
    it names several (tags differ), pip picks the target's best among those hashes."""
    chosen: list[LockedWheel] = []
    pins: list[str] = []
    remote: list[Wheel] = []
    several = [project for project in resolved if len(project.wheels) > 1]
    for project in resolved:
        if len(project.wheels) > 1:
            continue
        wheel = project.wheels[0]
        chosen.append(LockedWheel(project.name, project.version, wheel.file, wheel.sha256))
        if _holds(cache / wheel.file, wheel.sha256):
            continue
        if wheel.url.startswith("file:"):
            shutil.copyfile(_local(wheel), scratch / wheel.file)
            _keep_checked(scratch / wheel.file, wheel, cache, requirements)
        else:
            remote.append(wheel)
            pins.append(f"{project.name} @ {wheel.url} --hash=sha256:{wheel.sha256}\n")
    folders = {str(_local(w).parent) for project in several for w in project.wheels
               if w.url.startswith("file:")}
    pins += [f"--find-links {folder}\n" for folder in sorted(folders)]
    pins += [f"{project.name}=={project.version} "
             + " ".join(f"--hash=sha256:{w.sha256}" for w in project.wheels) + "\n"
             for project in several]
    if remote or several:
        dest = scratch / "download"
        _pip_fetch(pins, requirements, embed, dest,
                   ", ".join([w.file for w in remote] + [p.name for p in several]),
                   "check the network and your package index")
        for wheel in remote:
            _keep_checked(dest / wheel.file, wheel, cache, requirements)
        for project in several:
            got = next((w for w in project.wheels if (dest / w.file).is_file()), None)
            if got is None:
                raise SourceError(f"{requirements}: pip fetched none of the wheels uv "
                                  f"named for {project.name}=={project.version}",
                                  "check where the wheels come from and pack again")
            _keep_checked(dest / got.file, got, cache, requirements)
            chosen.append(LockedWheel(project.name, project.version, got.file, got.sha256))
    return tuple(sorted(chosen, key=lambda wheel: wheel.file))


def _local(wheel: Wheel) -> Path:
    return Path(url2pathname(urlsplit(wheel.url).path))


def _keep_checked(fetched: Path, wheel: Wheel, cache: Path, requirements: Path) -> None:
    """A fetched wheel into the cache, once it is the file the resolve named."""
    if not _holds(fetched, wheel.sha256):
        raise SourceError(f"{requirements}: {wheel.file} is not the file the resolve "
                          f"named (sha256 {wheel.sha256})",
                          "check where the wheel comes from and pack again")
    part = cache / (wheel.file + ".part")
    os.replace(fetched, part)
    os.replace(part, cache / wheel.file)


def _install_files(wheels: list[Path], site_packages: Path) -> dict[str, str]:
    """Exactly these wheels, unpacked by bundler (wheel_install), none other: what the
    set of a resolve or of the lock holds, so both make the same site-packages. The
    sha256 of each file still there, by its path below site_packages."""
    digests = install_wheels(wheels, site_packages)
    _drop_scripts(site_packages / "bin")
    return {relpath: digest for relpath, digest in digests.items()
            if (site_packages / relpath).is_file()}


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
    """Each missing locked wheel by its exact pin and hash (`name==version`, no
    dependencies: nothing resolved), from where the requirement files take wheels."""
    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
    try:
        names = ", ".join(wheel.file for wheel in missing)
        _pip_fetch([f"{wheel.name}=={wheel.version} --hash=sha256:{wheel.sha256}\n"
                    for wheel in missing], requirements, embed, scratch,
                   f"the locked wheel(s) {names} missing from the wheel cache",
                   "check the network and your package index, or pass --update-lock to "
                   "resolve the requirements again")
        for wheel in missing:
            fetched = scratch / wheel.file
            if not _holds(fetched, wheel.sha256):
                raise SourceError(f"{requirements}: the lock names {wheel.file}, but the "
                                  "index served another file for "
                                  f"{wheel.name}=={wheel.version}",
                                  "pass --update-lock to resolve the requirements again")
            os.replace(fetched, cache / wheel.file)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _pip_fetch(pins: list[str], requirements: Path, embed: Embeddable, dest: Path,
               what: str, hint: str) -> None:
    """`pip download --no-deps --require-hashes` of exact pins (a version or a URL, each
    with its sha256) for the target's tags, with the requirement files' source options:
    a download, never a resolve (no dependency, so no marker, is read)."""
    dest.mkdir(parents=True, exist_ok=True)
    listed = dest / "pins.txt"
    listed.write_text("".join(source_options(requirements)) + "".join(pins),
                      encoding="utf-8")
    try:
        _pip(["download", "--dest", str(dest), "--no-deps", "--require-hashes",
              *_target_options(embed), "-r", str(listed)], requirements,
             f"fetch {what} for", hint)
    finally:
        listed.unlink(missing_ok=True)


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


def _pip(args: list[str], requirements: Path, what: str, hint: str) -> None:
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
                      f"{WHEEL_TAG} wheels: {said}", hint)
