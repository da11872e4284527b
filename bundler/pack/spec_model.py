"""The app spec as pack reads it: the typed record `load_spec` (pack/spec.py) returns.

Its own module so that the builders, which read a Spec, never import the spec reader,
which asks the builders to check their keys: no import cycle between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class ScanSettings:
    """[scan]: the app scan (docs/spec-format.md)."""

    enabled: bool = True
    dlls: tuple[str, ...] = ()          # DLLs the app loads that no scan can see
    components: tuple[str, ...] = ()    # components to add on top of the selection
    allow_app_copies: bool = False      # pack even if the app ships its own cuDNN (torch)
    # or its environment holds nvidia-* wheels a framework loads by path
    environment: str = ""               # the site-packages of the app's outside Python


@dataclass(frozen=True)
class Spec:
    path: Path
    name: str
    builder: str
    app_path: Path | None
    entry: str
    script: Path | None
    pyinstaller_spec: Path | None
    recipe: str
    components: list[str]
    runtime_dir: str
    require_driver: bool
    sources: dict[str, str] = field(default_factory=dict)
    onefile: bool = False
    python: str = ""                    # embedded-python: the CPython version ("3.11")
    requirements: Path | None = None    # embedded-python: a pip requirements file
    zip: Path | None = None             # also write the bundle as this zip (pack --zip)
    scan: ScanSettings = field(default_factory=lambda: ScanSettings())
    # File-name globs of runtime files accepted without the signature the recipe asks.
    allow_unsigned: list[str] = field(default_factory=list)
    # The spec's tables as read (every key the user wrote): the lock records them, so a
    # later pack tells a spec change from a changed input (pack/lock.py).
    tables: dict[str, dict] = field(default_factory=dict, compare=False)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def default_out(self) -> Path:
        return self.folder / "dist" / self.name
