"""The "folder" builder: ship an existing app folder, with the bootstrap injected."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import SpecError
from bundler.manifest import BootstrapEntry
from bundler.pack.emit import BOOTSTRAP_NAME, inject_entry, write_bootstrap

if TYPE_CHECKING:  # the spec module imports the builders table
    from bundler.pack.spec import Spec
    from bundler.recipe import Recipe

# Never copied from the user's app folder into the bundle.
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")


def build_folder_app(spec: Spec, recipe: Recipe, staging: Path, target: Path
                     ) -> tuple[Path, BootstrapEntry]:
    """Copy the app into `staging`; return the bootstrap's folder and its manifest entry.
    (The app is copied as it is, so the recipe is not needed.)"""
    app = spec.app_path
    assert app is not None  # load_spec requires it for this builder
    if not app.is_dir():
        raise SpecError(f"{spec.path}: app.path {app} is not a folder",
                        "set app.path to the folder to ship, relative to the spec")
    shutil.copytree(app, staging, dirs_exist_ok=True, ignore=_skip_output(target))
    if (staging / spec.runtime_dir).exists():
        raise SpecError(f"{spec.path}: the app folder already has '{spec.runtime_dir}', where "
                        "the runtime goes", 'set [runtime] dir = "another-name"')
    sha256 = write_bootstrap(staging / BOOTSTRAP_NAME, spec.runtime_dir)
    if spec.entry:
        inject_entry(staging / spec.entry, spec.entry.count("/"))
    return staging, BootstrapEntry(path=BOOTSTRAP_NAME, sha256=sha256)


def _skip_output(target: Path):
    """Skip the bundle itself and its staging folders when the app folder holds dist/."""
    target = target.resolve()

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(_SKIP(folder, names))
        if Path(folder).resolve() == target.parent:
            skipped |= {n for n in names if n == target.name or n.startswith(f".{target.name}.")}
        return skipped

    return ignore
