"""What a builder hands the pipeline: the app root, the bootstrap, what it left out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bundler.manifest import BootstrapEntry


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
