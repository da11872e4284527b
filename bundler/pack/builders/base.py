"""What a builder hands the pipeline: the app root, the bootstrap, what it left out."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bundler.formats.manifest import BootstrapEntry
from bundler.pack.builders.pip_wheels import LockedWheel
from bundler.pack.one_copy import LeftOutWheel


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
