"""The app's requirements as Windows wheels, installed with this machine's pip.

pip resolves the spec's requirements file for the bundle's Python, not the one running
bundler: `--platform win_amd64 --implementation cp --python-version 3.X` with
`--only-binary=:all:` (a source distribution would have to be built for Windows, which
pip cannot do here). Two steps, so `pack --offline` works after one online pack:
`pip download` into a fresh folder (the index and pip's own options apply, also those
the requirements file holds: --index-url, --find-links, --hash ...), whose wheels are
also kept in bundler's wheel cache (python/cp3X-win_amd64/); then `pip install --target
--no-index` from that folder only (from the cache's folder under --offline). Nothing is
compiled (`--no-compile`: this machine's Python would write its own bytecode).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.builders.cpython_embed import Embeddable
from bundler.pack.sources.fetch import cache_root
from bundler.platforms import windows

WHEEL_TAG = windows().wheel_tag   # the platform of python.org's embeddable x64 CPython

def wheel_cache(embed: Embeddable, environ: Mapping[str, str]) -> Path:
    """Where the requirements' wheels are kept for --offline packs."""
    return cache_root(environ) / "python" / f"cp{embed.tag}-{WHEEL_TAG}"


def _target_options(embed: Embeddable) -> list[str]:
    return ["--only-binary=:all:", "--platform", WHEEL_TAG, "--implementation", "cp",
            "--python-version", embed.python, "--disable-pip-version-check"]


def install_requirements(requirements: Path, embed: Embeddable, site_packages: Path,
                         environ: Mapping[str, str], offline: bool) -> None:
    """Install what `requirements` names, as win_amd64 wheels, into `site_packages`."""
    if not requirements.is_file():
        raise SourceError(f"{requirements}: app.requirements names no such file",
                          "set app.requirements to a pip requirements file, relative to "
                          "the spec, or remove it")
    cache = wheel_cache(embed, environ)
    print(f"bundler: installing {requirements.name} for Windows x64, CPython "
          f"{embed.python}, with pip", file=sys.stderr)
    if offline:
        _install(requirements, embed, cache, site_packages, offline)
        return
    cache.mkdir(parents=True, exist_ok=True)
    download = Path(tempfile.mkdtemp(prefix=".download-", dir=cache))
    try:
        _pip(["download", "--dest", str(download), *_target_options(embed),
              "-r", str(requirements)], requirements, "download")
        _keep(download, cache)
        _install(requirements, embed, download, site_packages, offline)
    finally:
        shutil.rmtree(download, ignore_errors=True)


def _install(requirements: Path, embed: Embeddable, wheels: Path, site_packages: Path,
             offline: bool) -> None:
    hint = (f"pack once without --offline (the wheels are then kept in {wheels})"
            if offline else "")
    _pip(["install", "--no-index", "--find-links", str(wheels), "--target",
          str(site_packages), "--no-compile", "--no-warn-script-location",
          *_target_options(embed), "-r", str(requirements)], requirements, "install",
         hint)
    _drop_scripts(site_packages / "bin")


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
