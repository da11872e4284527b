"""One copy of each NVIDIA library in the packed app's process.

A framework that loads NVIDIA's libraries by path from the nvidia-* wheels of its
environment (bundler/frameworks/environment.py) maps them beside the bundle's preloaded
copies. So, where the app's environment holds nvidia-* wheels whose libraries the
bundle also provides:

- the embedded-python builder leaves those libraries out of the site-packages it makes
  (the whole wheel when the bundle provides all it holds) and the bundle provides them
  (their components are selected): `leave_out_provided`;
- a folder app is refused with the fix (the framework's "local CUDA" variant, or
  `pip uninstall` of the named wheels): `refuse_second_copies`;

unless the spec sets `[scan] allow_app_copies = true`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from bundler.errors import CheckError, SpecError
from bundler.frameworks.environment import (
    Environment,
    SecondCopy,
    app_environment,
    read_environment,
    second_copies,
)
from bundler.recipe.load import Component, Recipe
from bundler.support.suggest import listing

if TYPE_CHECKING:  # the spec module imports the builders, which import this module
    from bundler.pack.spec_model import Spec

_SHOWN = 6
FIX = ("install the framework's \"local CUDA\" variant, which loads the libraries already "
       "in the process (e.g. jax[cuda13-local] rather than jax[cuda13], onnxruntime-gpu "
       "without [cuda,cudnn]), or remove the wheels: pip uninstall {wheels}; to pack "
       "anyway, set [scan] allow_app_copies = true")


@dataclass(frozen=True)
class LeftOutWheel:
    """An nvidia-* wheel whose libraries the bundle provides, left out of the app."""

    distribution: str
    version: str
    libraries: tuple[str, ...]   # the library files left out (names)
    whole: bool                  # the whole wheel (False: only those libraries)


def examine(spec: Spec, recipe: Recipe, app: Path, skip: str) -> Environment:
    """The environment the packed app runs in (app_environment's rule); `skip`: the
    runtime folder being built, relative to `app`."""
    named = None
    if spec.scan.environment:
        named = (spec.folder / spec.scan.environment).resolve()
        if not named.is_dir():
            raise SpecError(f"{spec.path}: [scan] environment = {spec.scan.environment!r}: "
                            f"{named} is not a folder",
                            "set it to the site-packages folder of the Python that runs the "
                            "app (python -c \"import site; print(site.getsitepackages())\")")
    return app_environment(app, recipe.target, named, app / skip if skip else None)


def refuse_second_copies(environment: Environment, recipe: Recipe,
                         components: list[Component]) -> None:
    """Refuse a bundle beside nvidia-* wheels a path-loading framework would load too."""
    if not environment.loaders:
        return
    provided = [f.name for f in recipe.files_for(components)]
    copies = second_copies(environment, provided, recipe.target)
    if not copies:
        return
    raise CheckError(
        f"{environment.described} holds {_wheels(copies)}, which "
        f"{listing([f'{x.title} ({_how(x.opens)})' for x in environment.loaders], 3)} "
        f"loads by path after the bootstrap ran: the process would map both those and the "
        f"bundle's {listing(_names(copies), _SHOWN)} ({recipe.name})",
        FIX.format(wheels=" ".join(c.wheel.distribution for c in copies)))


def leave_out_provided(site: Path, recipe: Recipe) -> tuple[LeftOutWheel, ...]:
    """Remove from `site` (a site-packages this pack made) the libraries of nvidia-*
    wheels that `recipe` ships, and the whole wheel where it ships them all."""
    environment = read_environment((site,), recipe.target)
    copies = second_copies(environment, [f.name for f in recipe.files.values()],
                           recipe.target)
    kept = {f for w in environment.wheels if w not in {c.wheel for c in copies}
            for f in w.files}
    left: list[LeftOutWheel] = []
    for copy in copies:
        wheel = copy.wheel
        names = set(copy.libraries)
        whole = all(PurePosixPath(lib).name in names for lib in wheel.libraries)
        gone = [f for f in wheel.files if f not in kept] if whole else \
            [lib for lib in wheel.libraries if PurePosixPath(lib).name in names]
        for relpath in gone:
            _remove(site, relpath)
        left.append(LeftOutWheel(wheel.distribution, wheel.version, copy.libraries, whole))
    return tuple(left)


def _remove(site: Path, relpath: str) -> None:
    """Remove one installed file, then its folders as they empty (not `site`)."""
    path = site / relpath
    if path.is_file() or path.is_symlink():
        path.unlink()
    folder = path.parent
    while folder != site and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _wheels(copies: tuple[SecondCopy, ...]) -> str:
    return listing([f"{c.wheel.title} ({', '.join(c.libraries)})" for c in copies], 4,
                   sep="; ")


def _names(copies: tuple[SecondCopy, ...]) -> list[str]:
    return sorted({name for c in copies for name in c.libraries})


def _how(opens: str) -> str:
    return {"absolute": "by absolute path",
            "preload": "preload_dlls() when the app calls it"}.get(opens, opens)

