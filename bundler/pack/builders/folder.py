"""The "folder" builder: ship an existing app folder, with the bootstrap injected."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import BundlerError, SpecError
from bundler.formats.manifest import BootstrapEntry, UnsupportedManifest, find_manifest
from bundler.formats.swap_journal import is_pack_file_of
from bundler.pack.builders.base import Builder, BuildOptions, BuiltApp, Skipped
from bundler.pack.emit import BOOTSTRAP_NAME, inject_entry, write_bootstrap
from bundler.pack.zip.output import is_bundle_zip
from bundler.support.paths import (
    MAX_PATH,
    WINDOWS_NAME_HINT,
    case_twin,
    windows_name_problem,
    windows_path_length,
)
from bundler.support.suggest import did_you_mean

if TYPE_CHECKING:
    from bundler.pack.spec_model import Spec
    from bundler.recipe.model import Recipe

# Never copied from the user's app folder into the bundle (named in the pack summary).
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".git")
_WHY_SKIPPED = {".git": "git's own data"}
_BYTECODE = "Python bytecode (Python writes it again)"
_OUTPUT = "the output folder itself"
_DEBRIS = "left by a pack of this output or lock while it runs (staging, journal, lock)"
_BUNDLE = "a bundle bundler made (it has the bootstrap and a bundler manifest)"
_BUNDLE_ZIP = "a zip bundler made of a bundle (pack --zip)"
_RUNTIME = "the runtime folder"


def build_folder_app(spec: Spec, recipe: Recipe, staging: Path, target: Path,
                     options: BuildOptions | None = None) -> BuiltApp:
    """Copy the app into `staging`; return the bootstrap's folder, its manifest entry and
    what was left out. (The app is copied as it is, so the recipe is not needed.)"""
    app = spec.app_path
    assert app is not None  # load_spec requires it for this builder
    if not app.is_dir():
        raise SpecError(f"{spec.path}: app.path {app} is not a folder",
                        "set app.path to the folder to ship, relative to the spec")
    left_out = _LeftOut(app, target, spec.lock_path, (options or BuildOptions()).own_data)
    ignore = left_out.ignore
    _refuse_links_leaving(app, ignore)
    if recipe.target.windows_names:   # a Linux app may have CON.txt or a.so beside A.so
        _refuse_names_windows_cannot_hold(app, ignore, spec.runtime_dir)
    # symlinks=False: a link (checked above to stay inside the app) ships as the file or
    # folder it points to, in the folder and in --zip alike: a bundle never holds a link
    shutil.copytree(app, staging, symlinks=False, dirs_exist_ok=True, ignore=ignore)
    taken = _existing_ignoring_case(staging, spec.runtime_dir)
    if taken:
        raise SpecError(f"{spec.path}: the app folder already has '{taken}', where the runtime "
                        f"'{spec.runtime_dir}' goes (Windows does not tell names apart by "
                        "case)", 'set [runtime] dir = "another-name"')
    sha256 = write_bootstrap(staging / BOOTSTRAP_NAME, spec.runtime_dir, recipe.target)
    if spec.entry:
        inject_entry(staging / spec.entry, spec.entry.count("/"))
    return BuiltApp(staging, BootstrapEntry(path=BOOTSTRAP_NAME, sha256=sha256,
                                            entry=spec.entry), left_out.skipped())


def check_entry(spec: Spec) -> None:
    """app.entry must name a script in the app folder: said before any input is read or
    fetched, naming the user's own path (not the staging copy's) and the closest script
    beside it ("did you mean main.py?")."""
    app = spec.app_path
    if not spec.entry or app is None or not app.is_dir() or (app / spec.entry).is_file():
        return
    path = app / spec.entry
    shown = Path(os.path.relpath(path, spec.folder)).as_posix()
    folder = path.parent if path.parent.is_dir() else app
    scripts = sorted(p.relative_to(app).as_posix() for p in folder.glob("*.py"))
    guess = did_you_mean(spec.entry, scripts, cutoff=0.6)
    what = "is a folder, not a script" if path.is_dir() else "does not exist"
    raise SpecError(f"{spec.path}: app.entry = {spec.entry!r}: {shown} {what}{guess}",
                    "set app.entry to the script to run, relative to the app folder "
                    f"({Path(os.path.relpath(app, spec.folder)).as_posix()})")


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


class _LeftOut:
    """What the copy of the app folder leaves out, and why: bytecode and .git; the
    bundle itself and what packs of it (and of the spec's lock) keep beside it while they
    run, by their own names only; and any other bundle (an app folder of "." holds dist/
    with every earlier output): a bundle never copies bundles. Nothing else."""

    def __init__(self, app: Path, target: Path, lock: Path,
                 own: Mapping[Path, str] | None = None) -> None:
        self.app, self.target, self.lock = app, target.resolve(), lock.resolve()
        self.own = own
        self._skipped: dict[str, str] = {}

    def ignore(self, folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        found = outputs_in(here, names, self.target, self.lock, self.own)
        found |= {n: _WHY_SKIPPED.get(n, _BYTECODE) for n in _SKIP(folder, names)}
        for name, why in found.items():
            self._skipped[(here / name).relative_to(self.app).as_posix()] = why
        return set(found)

    def skipped(self) -> tuple[Skipped, ...]:
        return tuple(Skipped(path, why) for path, why in sorted(self._skipped.items()))


def outputs_in(folder: Path, names: list[str], target: Path | None, lock: Path | None = None,
               own: Mapping[Path, str] | None = None) -> dict[str, str]:
    """Which of `names` in `folder` are output, not app, and why: the bundle `target`
    itself, what packs of `target` or `lock` keep beside them while they run, another
    bundle (bundler's bootstrap at its top and a bundler manifest) or a zip bundler made
    of one (zip_output.is_bundle_zip). Never copied or scanned; only these names: a
    user's `.env.new-prod` or `plugins/x/_cudnn_bootstrap.py` is app."""
    here = folder.resolve() if target or lock or own else folder
    found: dict[str, str] = {}
    for name in names:
        if own and (here / name) in own:
            found[name] = f"bundler's own: {own[here / name]}"
        elif target and here == target.parent and name == target.name:
            found[name] = _OUTPUT
        elif any(p and here == p.parent and is_pack_file_of(p, name) for p in (target, lock)):
            found[name] = _DEBRIS
        elif _is_bundle(folder / name):
            found[name] = _BUNDLE
        elif is_bundle_zip(folder / name):
            found[name] = _BUNDLE_ZIP
    return found


def _is_bundle(folder: Path) -> bool:
    """A bundle a folder build made: bundler's bootstrap at its top, where its own
    manifest says it is. (A damaged manifest beside a file named like the bootstrap may
    be the app's own: it is copied, not dropped.)"""
    if not (folder / BOOTSTRAP_NAME).is_file():
        return False
    try:
        found = find_manifest(folder)
    except UnsupportedManifest:
        return True     # a newer bundler's bundle
    except BundlerError:
        return False
    return found.root == folder and found.manifest.bootstrap.path == BOOTSTRAP_NAME


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


def _refuse_names_windows_cannot_hold(app: Path, ignore: Callable[[str, list[str]], set[str]],
                                      runtime_dir: str) -> None:
    """Every name the app folder puts in the bundle must be one Windows can hold, by the
    rules the spec's paths and the archives' members follow (support/paths.py): anywhere
    in the tree (through links, as the copy goes), and against what bundler adds (the
    bootstrap, the runtime folder), whatever the file system here tells apart."""
    ours = _added_names(runtime_dir)
    for folder, dirs, files in os.walk(app, followlinks=True):  # links were checked
        skipped = ignore(folder, dirs + files)
        dirs[:] = [d for d in dirs if d not in skipped]
        names = [n for n in [*dirs, *files] if n not in skipped]
        where = Path(folder).relative_to(app).as_posix()
        for name in names:
            relpath = name if where == "." else f"{where}/{name}"
            problem = windows_name_problem(name)
            if problem:
                raise SpecError(f"{app / relpath}: Windows cannot hold this name in the "
                                f"bundle: {problem}", WINDOWS_NAME_HINT)
            length = windows_path_length(relpath)
            if length >= MAX_PATH:
                raise SpecError(f"{app / relpath}: Windows cannot open this path in the "
                                f"bundle: it is {length} characters long, and Windows paths "
                                f"are shorter than {MAX_PATH} (MAX_PATH), the bundle's own "
                                "folder included", "shorten its folder or file names")
        added = ours.get(where, {})
        twin = case_twin([*added, *names])
        if twin is None and where == "." and BOOTSTRAP_NAME in names:
            twin = (BOOTSTRAP_NAME, BOOTSTRAP_NAME)   # the app's own would be overwritten
        if twin is not None:
            raise _twin_error(app / where / twin[1], *twin, added)


def _twin_error(path: Path, first: str, second: str, added: dict[str, str]) -> SpecError:
    if first not in added:
        return SpecError(f"{path}: Windows cannot hold this name in the bundle: '{first}' "
                         "beside it differs from it only in case, and Windows takes them "
                         "for one file", "rename one of them")
    if added[first] == _RUNTIME:
        return SpecError(f"{path}: the app folder already has '{second}', where the runtime "
                         f"folder '{first}' goes (Windows does not tell names apart by case)",
                         'rename it, or set [runtime] dir = "another-name"')
    case = ", and Windows does not tell names apart by case" if first != second else ""
    return SpecError(f"{path}: Windows cannot hold this name in the bundle: bundler writes "
                     f"{added[first]} '{first}' there{case}", "rename it")


def _added_names(runtime_dir: str) -> dict[str, dict[str, str]]:
    """What bundler adds to the app's tree: {folder: {name: what it is}}."""
    added: dict[str, dict[str, str]] = {".": {BOOTSTRAP_NAME: "the bootstrap"}}
    parts = runtime_dir.split("/")
    for depth, part in enumerate(parts):
        added.setdefault("/".join(parts[:depth]) or ".", {})[part] = _RUNTIME
    return added


def _link_error(path: Path, what: str) -> SpecError:
    return SpecError(f"{path}: {what}", "bundler follows links only inside the app folder: "
                     "copy the file in, or remove the link")


def require_app_path(spec: Spec) -> None:
    """A builder that ships a folder needs app.path, the folder."""
    if spec.app_path is None:
        raise SpecError(f"{spec.path}: app.path is required with builder = "
                        f"\"{spec.builder}\"",
                        'add path = "app" (the folder to ship, relative to the spec)')


BUILDER = Builder("folder", ("path", "entry"), require_app_path, build_folder_app,
                  ships_app_as_is=True)
