"""`bundler init`: the recipe and components an app needs, from what the app scan found.

The scan is pack's own (pack/app_scan.py): the CUDA/cuDNN DLLs the app's binaries import
and the ones its frameworks load by name. The recipe is the newest catalogue release
that ships every one of them (cudnn64_9.dll + cublas64_12.dll: a cuDNN 9 release for
CUDA 12); an app that shows none gets the default recipe, and the spec says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bundler.pack.app_scan import AppScan, Need
from bundler.platforms import Platform
from bundler.recipe import Recipe, families_dir, find_recipe
from bundler.releases.catalogue import Release, catalogue_releases, version_key
from bundler.releases.families import families

# The recipe of an app that shows no CUDA/cuDNN DLL: the seed, the one the offline
# quickstart packs (a zip of NVIDIA's the user gives, plus an installed CUDA 10.1).
DEFAULT_RECIPE = "cudnn-8.0.3.33-cuda10.1-win-x64"
# Releases rendered and checked, newest first, before giving up: each needed name
# narrows the family and the CUDA major, so the first one nearly always fits.
_TRIES = 12


@dataclass(frozen=True)
class Choice:
    """The recipe, the components to name in the spec, and why (for its comments)."""

    recipe: Recipe
    why: tuple[str, ...]                   # sentences on the recipe choice
    components: tuple[str, ...]            # in recipe order
    reasons: dict[str, tuple[str, ...]]    # component -> "cufft64_11.dll: imported by X"
    unsupplied: tuple[Need, ...]           # needs no release bundler knows supplies
    app_copies: tuple[str, ...]            # "cudnn64_9.dll (torch/lib/cudnn64_9.dll)"


def choose(scan: AppScan, platform: Platform, folder: Path) -> Choice:
    """What to write for an app whose scan is `scan`; `folder`: the spec's folder."""
    key = platform.name_key
    needs = [n for n in scan.needs if key(n.dll) not in scan.shipped]
    copies = tuple(sorted({f"{n.dll} ({scan.shipped[key(n.dll)]})" for n in scan.needs
                           if key(n.dll) in scan.shipped}))
    names = list(dict.fromkeys(n.dll for n in needs))
    if not names:
        why = ("the app shows no CUDA or cuDNN DLL (none of its binaries imports one and no "
               "framework bundler's table knows is installed in it), so this is bundler's "
               "default recipe",
               "if the app needs another cuDNN or CUDA, name that release here (`bundler "
               "recipes` lists them)")
        return _with_components(find_recipe(DEFAULT_RECIPE, folder), why, needs, copies)
    recipe, reasons = _newest_supplying(names, platform, folder)
    return _with_components(recipe, reasons, needs, copies)


def _newest_supplying(names: list[str], platform: Platform,
                      folder: Path) -> tuple[Recipe, tuple[str, ...]]:
    shown = ", ".join(names)
    tried: list[Recipe] = []
    for release in _candidates(names, platform)[:_TRIES]:
        recipe = find_recipe(release.name, folder)
        if all(recipe.supplier_of(name) for name in names):
            return recipe, (f"the newest cuDNN release that ships every CUDA/cuDNN DLL "
                            f"the app needs ({shown}): cuDNN {recipe.cudnn} for CUDA "
                            f"{recipe.cuda}",
                            f"another release: `bundler recipes cudnn{release.major}` lists "
                            "this family's (any name it prints goes here)")
        tried.append(recipe)
    recipe = tried[0] if tried else find_recipe(DEFAULT_RECIPE, folder)
    return recipe, (f"no cuDNN release bundler knows ships all of {shown}; this one is the "
                    "closest it found, and `bundler pack` names what it lacks",
                    "`bundler recipes` lists every family and release")


def _candidates(names: list[str], platform: Platform) -> list[Release]:
    """Catalogue releases of the cuDNN major(s) and CUDA major(s) every name allows,
    newest first (a release whose wheel NVIDIA yanked is left out)."""
    cudnn = _cudnn_majors(names)
    cuda: set[int] | None = None
    for name in names:
        majors = set(platform.facts().cuda_majors_of(name))
        if majors:
            cuda = majors if cuda is None else cuda & majors
    fitting = [r for r in catalogue_releases() if r.platform == platform.release_suffix
               and (cudnn is None or r.major in cudnn)
               and (cuda is None or int(r.cuda.split(".")[0]) in cuda)
               and not (r.wheel is not None and r.wheel.yanked)]
    return sorted(fitting, key=lambda r: (version_key(r.cudnn), version_key(r.cuda)),
                  reverse=True)


def _cudnn_majors(names: list[str]) -> set[int] | None:
    """The cuDNN majors whose family ships every cuDNN DLL named; None if none is one."""
    found: set[int] | None = None
    for name in names:
        if not name.lower().startswith("cudnn"):
            continue
        majors = {major for major, family in families(families_dir()).items()
                  if any(name.lower() == known.lower() for known in family.files)}
        found = majors if found is None else found & majors
    return found


def _with_components(recipe: Recipe, why: tuple[str, ...], needs: list[Need],
                     copies: tuple[str, ...]) -> Choice:
    """The recipe's default components plus each one supplying a need, with the needs."""
    reasons: dict[str, list[str]] = {}
    unsupplied = []
    for need in needs:
        supplier = recipe.supplier_of(need.dll)
        if supplier is None:
            unsupplied.append(need)
            continue
        line = f"{need.dll}: {need.reason}"
        if line not in reasons.setdefault(supplier.component, []):
            reasons[supplier.component].append(line)
    wanted = {c.name for c in recipe.components.values() if c.default} | set(reasons)
    components = tuple(c for c in recipe.components if c in wanted)
    return Choice(recipe, why, components, {c: tuple(r) for c, r in reasons.items()},
                  tuple(unsupplied), copies)
