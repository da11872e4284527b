"""Fetch: get a recipe's pinned wheels from the package index with pip, into a cache.

A wheel source left out of [sources] is looked up in a cache outside the project
(`$BUNDLER_CACHE`, default bundler/wheels in the platform's cache folder), in a folder
named by the recipe's sha256 pin; if absent, pip downloads it. The download is checked
against the pin before it enters the cache (a mismatch is refused and left out), so the cache only
holds files some recipe names. pip is used rather than an HTTP client of our own so
the user's index settings (pip.conf, PIP_INDEX_URL, proxies) apply.
`fetch_pinned` is the same for any file pinned by sha256: the embedded-python builder
gets python.org's embeddable CPython through it (pack/builders/cpython_embed.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.recipe.model import WHEEL, SourceSpec
from bundler.support.hashing import sha256_file
from bundler.support.progress import activity, interactive
from bundler.support.user_dirs import user_cache_dir

CACHE_VARIABLE = "BUNDLER_CACHE"
# NVIDIA's runtime wheels are tagged py3-none-<platform>: any Python version selects the
# same file. A fixed one keeps pip's choice independent of the Python running bundler.
PYTHON_VERSION = "3.11"


def cache_root(environ: Mapping[str, str]) -> Path:
    """$BUNDLER_CACHE, else the platform's cache folder's bundler/wheels."""
    given = environ.get(CACHE_VARIABLE)
    return Path(os.path.expanduser(given)) if given else user_cache_dir(environ) / "wheels"


def can_fetch(spec: SourceSpec) -> bool:
    """Only a wheel the recipe pins by name, version and sha256 is fetched, for its
    platform tag (the recipe's platform's unless the recipe names another): pip picks
    the file by it."""
    return spec.source_kind is WHEEL and bool(spec.package and spec.version and spec.sha256
                                              and spec.platform_tag)


def cached(spec: SourceSpec, root: Path) -> Path | None:
    return cached_file(root, spec.sha256, "*.whl")


def cached_file(root: Path, sha256: str, pattern: str) -> Path | None:
    """The one file matching `pattern` in the cache folder of this sha256, if there."""
    found = sorted((root / sha256).glob(pattern))
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class Download:
    """One pinned file pip downloads: what to ask pip for and how to talk about it."""

    requirement: str             # "package==version"
    sha256: str                  # the pin the download must match
    pip_options: tuple[str, ...]  # which file pip may choose (binary only, platform ...)
    pattern: str                 # the downloaded file's name pattern ("*.whl")
    label: str                   # who needs it, in messages ("source 'cudnn'")
    pin_owner: str               # who pins it ("the recipe")
    yourself: str                # the hint's way round a failed download


def fetch(spec: SourceSpec, root: Path) -> Path:
    """Download the pinned wheel with pip into the cache; return its path there."""
    return fetch_pinned(Download(
        requirement=f"{spec.package}=={spec.version}", sha256=spec.sha256,
        pip_options=("--only-binary=:all:", "--platform", spec.platform_tag,
                     "--python-version", PYTHON_VERSION),
        pattern="*.whl", label=f"source '{spec.id}'", pin_owner="the recipe",
        yourself=f"download it yourself ({download_command([spec])}) and pass "
                 f"--source {spec.id}=PATH"), root)


def fetch_pinned(download: Download, root: Path) -> Path:
    """Download a pinned file with pip into the cache (a folder named by its sha256),
    checked against the pin before it enters; return its path there."""
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".download-", dir=root))
    try:
        _run_pip(download, folder)
        found = _the_file(download, folder)
        sha256 = sha256_file(found, f"checking {found.name}")
        if sha256 != download.sha256:
            raise SourceError(f"{found.name}: pip fetched a file whose sha256 {sha256} "
                              f"differs from {download.pin_owner}'s pin {download.sha256}; "
                              "it was not kept", "your package index serves another file "
                              "under this name: check it (pip config list), or "
                              + download.yourself)
        return _keep(folder, found.name, download, root)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _keep(folder: Path, name: str, download: Download, root: Path) -> Path:
    """Move a checked download into its cache folder (atomically: no half-made folder)."""
    already = cached_file(root, download.sha256, download.pattern)  # fetched meanwhile
    if already:
        return already
    target = root / download.sha256
    shutil.rmtree(target, ignore_errors=True)  # a stale, incomplete folder
    os.replace(folder, target)
    return target / name


def download_command(specs: Sequence[SourceSpec], dest: str = "wheels") -> str:
    """The pip command a user can run to get these wheels themselves."""
    # A wheel with no platform tag (a recipe's `platform_tag = ""`) is this machine's.
    tag = specs[0].platform_tag
    platform = f" --platform {tag}" if tag else ""
    wanted = " ".join(f"{s.package}=={s.version}" for s in specs)
    return (f"pip download --no-deps --only-binary=:all:{platform} "
            f"--python-version {PYTHON_VERSION} {wanted} -d {dest}")


def offline_error(specs: Sequence[SourceSpec], root: Path, stored: bool = False
                  ) -> SourceError:
    """`stored`: the runtime store's record promised the files, which it then did not
    prove (one damaged, or removed meanwhile)."""
    missing = ", ".join(f"{s.id} ({s.package}=={s.version})" for s in specs)
    given = " ".join(f"--source {s.id}=wheels/{s.file_name or '...'}" for s in specs)
    store = ("; the runtime store held its files, but no longer every one intact"
             if stored else "")
    return SourceError(f"--offline: source(s) {missing} are not in [sources] nor in the "
                       f"wheel cache {root}{store}, and --offline forbids fetching them",
                       f"download them: {download_command(specs)}; then pass {given} "
                       "(or add them to [sources]), or pack once without --offline")


def _run_pip(download: Download, dest: Path) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", *download.pip_options,
               "--disable-pip-version-check",
               "--no-cache-dir",  # this cache is the cache: no second copy in pip's
               "--dest", str(dest), download.requirement]
    print(f"bundler: fetching {download.requirement} with pip", file=sys.stderr)
    if interactive():  # let pip draw its progress bar; keep stdout for our own output
        output = ""
        returncode = subprocess.run(command, stdout=sys.stderr, check=False).returncode
    else:   # off a terminal: a line every few seconds while pip runs
        with activity(f"fetching {download.requirement}"):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        output, returncode = (result.stdout + result.stderr).strip(), result.returncode
    if returncode != 0:
        last = output.splitlines()[-1] if output else f"pip exited with {returncode}"
        raise SourceError(f"{download.label}: pip could not download "
                          f"{download.requirement}: {last}",
                          "check the network and your package index, or "
                          + download.yourself)


def _the_file(download: Download, folder: Path) -> Path:
    found = sorted(folder.glob(download.pattern))
    if len(found) != 1:
        raise SourceError(f"{download.label}: pip left {len(found)} files named "
                          f"{download.pattern} for {download.requirement} in {folder}",
                          download.yourself)
    return found[0]
