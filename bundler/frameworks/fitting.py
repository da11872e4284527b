"""Which catalogue releases serve a set of frameworks: by pack's rule (facts.fits: their
CUDA and cuDNN figures) and by what their files and table rows say they load (a release
whose runtime set lacks one is no answer: TensorFlow 2.4's cusolver64_10.dll is in no
CUDA 11 release). Those pack fetches itself (NVIDIA's PyPI wheel) come first, then
NVIDIA's login-only zips, each newest first. Refusal hints and `bundler recipes --for`
list them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from bundler.platforms.driver_table import version_tuple
from bundler.recipe.load import find_recipe
from bundler.releases.catalogue import Release, catalogue_releases

if TYPE_CHECKING:
    from bundler.frameworks.facts import FrameworkFacts

_RENDERED = 12   # fitting releases checked for the libraries before a hint gives up
# facts.fits, passed in: this module sits below facts.py (which lists releases through it)
Fits = Callable[["FrameworkFacts", str, str], Optional[str]]


def serving(frameworks: Sequence[FrameworkFacts], platform_suffix: str, count: int | None,
            fits: Fits) -> list[Release]:
    """Catalogue releases of that platform that serve every framework (`fits`) and ship
    every library their files and table rows say they load: those pack fetches itself
    (NVIDIA's PyPI wheel, as init picks) newest first, then NVIDIA's login-only zips
    newest first. A yanked wheel's release and a development build are none."""
    fitting = [r for r in catalogue_releases() if r.platform == platform_suffix
               and ".dev" not in r.cudnn and not (r.wheel is not None and r.wheel.yanked)
               and all(fits(f, r.cuda, r.cudnn) is None for f in frameworks)]
    fitting.sort(key=lambda r: (fetchable(r), version_tuple(r.cudnn), version_tuple(r.cuda)),
                 reverse=True)
    loads = {name for f in frameworks if f.gpu_build and not f.ships_own_runtime
             for name in (*f.loads, *(f.row.loads if f.row else ()))}
    found: list[Release] = []
    for release in fitting[:_RENDERED] if loads and count is not None else fitting:
        if not loads or _ships_all(release, loads):
            found.append(release)
        if len(found) == count:
            break
    return found


def fetchable(release: Release) -> bool:
    """NVIDIA publishes it as a PyPI wheel, which pack fetches itself (a zip of NVIDIA's
    developer site needs the user's login)."""
    return release.wheel is not None and not release.wheel.yanked


def _ships_all(release: Release, names: Iterable[str]) -> bool:
    recipe = find_recipe(release.name, Path.cwd())
    return all(recipe.supplier_of(name) is not None for name in names)


def fitting_hint(frameworks: Sequence[FrameworkFacts], releases: Sequence[Release]) -> str:
    """The releases that fit, said with how each is had (pack fetches a PyPI wheel; a zip
    is a download behind NVIDIA's login); or that none does."""
    wheels = [r.name for r in releases if fetchable(r)]
    zips = [r.name for r in releases if not fetchable(r)]
    said = ([f"{', '.join(wheels)} (NVIDIA's PyPI wheel{'s' if len(wheels) > 1 else ''}: "
             f"pack fetches {'them' if len(wheels) > 1 else 'it'})"] if wheels else []) + \
        ([f"{', '.join(zips)} (NVIDIA's zip{'s' if len(zips) > 1 else ''}: a download behind "
          "NVIDIA's login, given in [sources])"] if zips else [])
    if said:
        return f"use a release that fits: {'; '.join(said)} (bundler recipes --for lists more)"
    titles = ", ".join(f.title for f in frameworks)
    return (f"no release bundler knows serves {titles} (its CUDA, its cuDNN and every library "
            "it loads)" + (": pack them as separate apps" if len(frameworks) > 1 else ""))
