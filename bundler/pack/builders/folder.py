"""The "folder" builder: ship an existing app folder, with the bootstrap injected."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import SpecError
from bundler.manifest import BootstrapEntry
from bundler.pack.emit import BOOTSTRAP_NAME, inject_entry, write_bootstrap
from bundler.support.swap_journal import is_pack_file

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
    ignore = _skip_output(target)
    _refuse_links_leaving(app, ignore)
    shutil.copytree(app, staging, dirs_exist_ok=True, ignore=ignore)
    taken = _existing_ignoring_case(staging, spec.runtime_dir)
    if taken:
        raise SpecError(f"{spec.path}: the app folder already has '{taken}', where the runtime "
                        f"'{spec.runtime_dir}' goes (Windows does not tell names apart by "
                        "case)", 'set [runtime] dir = "another-name"')
    sha256 = write_bootstrap(staging / BOOTSTRAP_NAME, spec.runtime_dir)
    if spec.entry:
        inject_entry(staging / spec.entry, spec.entry.count("/"))
    return staging, BootstrapEntry(path=BOOTSTRAP_NAME, sha256=sha256, entry=spec.entry)


def _existing_ignoring_case(root: Path, relpath: str) -> str:
    """The path in `root` that `relpath` names on Windows (case-insensitively), or ""."""
    found = root
    for part in relpath.split("/"):
        match = [p for p in found.iterdir() if p.name.casefold() == part.casefold()] \
            if found.is_dir() else []
        if not match:
            return ""
        found = match[0]
    return found.relative_to(root).as_posix()


def _skip_output(target: Path) -> Callable[[str, list[str]], set[str]]:
    """Skip the bundle itself, its staging folders, and any other bundle (an app folder
    of "." holds dist/ with every earlier output): a bundle never copies bundles."""
    target = target.resolve()

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(_SKIP(folder, names))
        here = Path(folder)
        if here.resolve() == target.parent:
            skipped |= {n for n in names if n == target.name or n.startswith(f".{target.name}.")}
        skipped |= {n for n in names if is_output(here, n)}
        return skipped

    return ignore


def is_output(folder: Path, name: str) -> bool:
    """Whether `name` in `folder` is a bundle (it has bundler's bootstrap) or debris of a
    pack (staging, retired, journal): never part of the app, never copied or scanned."""
    return (folder / name / BOOTSTRAP_NAME).is_file() or is_pack_file(name)


def _refuse_links_leaving(app: Path, ignore: Callable[[str, list[str]], set[str]]) -> None:
    """Symbolic links are followed only inside the app folder: a link leaving it would
    ship a file from elsewhere, a dangling link or a loop cannot be copied."""
    root = app.resolve()
    for folder, dirs, files in os.walk(app):
        skipped = ignore(folder, dirs + files)
        dirs[:] = [d for d in dirs if d not in skipped]
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if name in skipped or not path.is_symlink():
                continue
            try:
                pointed = path.resolve(strict=True)
            except (OSError, RuntimeError):  # a loop, or nothing at the other end
                raise _link_error(path, "is a symbolic link loop or points to nothing"
                                  ) from None
            if pointed != root and root not in pointed.parents:
                raise _link_error(path, f"is a symbolic link to {pointed}, outside the app "
                                  "folder")
            here = Path(folder).resolve()
            if path.is_dir() and (pointed == here or pointed in here.parents):
                raise _link_error(path, "is a symbolic link to a folder that holds it (a "
                                  "loop)")


def _link_error(path: Path, what: str) -> SpecError:
    return SpecError(f"{path}: {what}", "bundler follows links only inside the app folder: "
                     "copy the file in, or remove the link")
