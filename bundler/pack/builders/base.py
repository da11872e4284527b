"""What a builder is (its `Builder` record) and what it hands the pipeline: the app root,
the bootstrap, what it left out."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.formats.manifest import BootstrapEntry
from bundler.pack.builders.installed_again import Keeping
from bundler.pack.builders.pip_wheels import LockedWheel
from bundler.pack.one_copy import LeftOutWheel

if TYPE_CHECKING:
    from bundler.pack.spec_model import Spec
    from bundler.recipe.model import Recipe


@dataclass(frozen=True)
class Skipped:
    """A file or folder of the app folder that the bundle does not carry, and why."""

    path: str   # relative to the app folder, with '/'
    why: str


@dataclass(frozen=True)
class BuiltApp:
    root: Path                    # the folder the runtime goes below
    bootstrap: BootstrapEntry     # the bootstrap's manifest entry
    skipped: tuple[Skipped, ...] = ()
    # What the builder added beside the app (paths relative to `root`, files or
    # folders): listed in the manifest, so verify checks them (embedded-python)
    made: tuple[str, ...] = ()
    # nvidia-* wheels (or their libraries) left out: the bundle provides them instead
    left_out: tuple[LeftOutWheel, ...] = ()
    # embedded-python: the wheel set installed for app.requirements (for the lock)
    wheels: tuple[LockedWheel, ...] | None = None
    # sha256 of files the builder wrote or proved, by path relative to `root`: the
    # manifest takes them instead of reading the files again
    digests: Mapping[str, str] = field(default_factory=dict)
    # run once the bundle is in place, given its final `root` (embedded-python records
    # its site-packages for the next pack: builders/installed_again.py)
    in_place: Callable[[Path], None] = lambda root: None


@dataclass(frozen=True)
class BuildOptions:
    """What of the pack command a builder that fetches needs (embedded-python)."""

    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    offline: bool = False      # pack --offline: only what the caches hold
    # the lock's wheel set where the requirement files are as it records them:
    # installed as it is, nothing resolved (embedded-python)
    locked_wheels: tuple[LockedWheel, ...] | None = None
    # bundler's own files (the spec, its lock, inputs, store, cache): never copied
    own_data: Mapping[Path, str] = field(default_factory=dict)
    # where an embedded-python pack may take the previous bundle's site-packages again
    # and record its own (None: the store is off, or --copy)
    keeping: Keeping | None = None


@dataclass(frozen=True)
class Builder:
    """One way to make the app: everything bundler knows of it, in its own module.

    The spec reader (pack/spec.py) reads the keys every spec has, refuses a key that
    only another builder takes, and hands the spec to `check`; the pipeline calls
    `build`. A new builder is a module that exports one of these, listed in
    pack/builders/__init__.py."""

    name: str                     # the spec's app.builder
    keys: tuple[str, ...]         # the [app] keys it takes beyond name, builder, zip
    check: Callable[[Spec], None]  # refuses (SpecError) what its keys cannot build
    build: Callable[[Spec, Recipe, Path, Path, BuildOptions], BuiltApp]
    # The app ships as the spec's folder is (folder): it is scanned, and the sources it
    # needs opened, before the build, so a missing source stops the pack before any
    # copying. Any other app exists only once built.
    ships_app_as_is: bool = False
    # Everything its app is made from is a file bundler can name (the app folder, the
    # spec's requirement files): a re-pack with none of it changed is up to date
    # (pack/up_to_date.py). False where the build reads what bundler cannot list
    # (PyInstaller: the Python environment it runs in): such a pack always runs.
    inputs_known: bool = True
