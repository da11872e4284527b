"""`bundler init`: the recipe and components an app needs, from what the app scan found.

The scan is pack's own (pack/app_scan.py): the CUDA/cuDNN DLLs the app's binaries import
and the ones its frameworks load by name. The recipe is the newest catalogue release
that ships every one of them (cudnn64_9.dll + cublas64_12.dll: a cuDNN 9 release for
CUDA 12). Where the names leave a choice, a release whose own input this machine has
(its cuDNN wheel or zip in the project, its wheel in the wheel cache) comes first: the
spec then packs from what is there. An app that shows none and has no such input gets
the default recipe, and the spec says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bundler.frameworks.facts import FrameworkFacts, fits
from bundler.init.inputs import ReleaseInput
from bundler.pack.app_scan import AppScan, Need
from bundler.recipe.load import Recipe, families_dir, find_recipe, shipped_recipes
from bundler.releases.catalogue import Release, catalogue_releases, version_key
from bundler.releases.families import families
from bundler.support.regular_files import read_bounded
from bundler.targets.registry import Platform

# The recipe of an app that shows no CUDA/cuDNN DLL: the seed, the one the offline
# quickstart packs (a zip of NVIDIA's the user gives, plus an installed CUDA 10.1); for
# another platform's app, the newest recipe bundler ships for that platform.
DEFAULT_RECIPE = "cudnn-8.0.3.33-cuda10.1-win-x64"
# Releases rendered and checked, newest first, before giving up: each needed name
# narrows the family and the CUDA major, so the first one nearly always fits.
_TRIES = 12
# The app's own scripts read for library names: a string naming one ('cudnn64_8.dll',
# 'libcudnn.so.9'), a library of the platform by its name rule.
_NAME_STRING = re.compile(r"""["']([A-Za-z0-9_.+-]+)["']""")
_NOT_THE_APPS = {"site-packages", "__pycache__", "Lib", "node_modules", "dist", "build"}
_SCRIPT_DEPTH = 3
_MAX_SCRIPTS = 500
_MAX_SCRIPT_BYTES = 1 << 20
# What pack's copy of the app leaves out (builders/folder.py): not the app's, so nothing
# in it is a need or a copy (a file name there could be anything a checkout holds).
_VCS = ".git"


@dataclass(frozen=True)
class Choice:
    """The recipe, the components to name in the spec, and why (for its comments)."""

    recipe: Recipe
    why: tuple[str, ...]                   # sentences on the recipe choice
    components: tuple[str, ...]            # in recipe order
    reasons: dict[str, tuple[str, ...]]    # component -> "cufft64_11.dll: imported by X"
    unsupplied: tuple[Need, ...]           # needs no release bundler knows supplies
    app_copies: tuple[str, ...]            # "cudnn64_9.dll (torch/lib/cudnn64_9.dll)"


def choose(scan: AppScan, platform: Platform, folder: Path,
           found: Sequence[ReleaseInput] = (), named: Sequence[Need] = (),
           pinned: Sequence[FrameworkFacts] = ()) -> Choice:
    """What to write for an app whose scan is `scan`; `folder`: the spec's folder;
    `found`: the releases whose own inputs this machine has; `named`: the DLLs the
    app's scripts name (named_in_scripts), which decide among those where the app's
    binaries show none; `pinned`: the frameworks its requirements file pins, for an app
    with no site-packages (init/requirements.py)."""
    key = platform.name_key
    in_app = [n for n in scan.needs if not _in_vcs(n.by)]
    shipped = {name: path for name, path in scan.shipped.items() if not _in_vcs(path)}
    frameworks = [f for f in (*scan.framework_facts, *pinned) if not _in_vcs(f.file)]
    in_app += [Need(name, f.title, "loaded by") for f in pinned
               for name in (*f.loads, *(f.row.loads if f.row else ()))]
    needs = [n for n in in_app if key(n.dll) not in shipped]
    copies = tuple(sorted({f"{n.dll} ({shipped[key(n.dll)]})" for n in in_app
                           if key(n.dll) in shipped}))
    names = list(dict.fromkeys(n.dll for n in needs))
    constraining = [f for f in frameworks if _constrains(f)]
    if not names and not constraining and not any(f.unreadable for f in frameworks):
        needs += [n for n in named if key(n.dll) not in shipped]
        fitting = [item for item in found if all(find_recipe(item.release.name, folder)
                                                 .supplier_of(n.dll) for n in named)]
        if fitting:
            return _from_input(fitting, named, folder, needs, copies)
        default = default_recipe(platform, folder)
        why = (f"the app shows no CUDA or cuDNN {platform.library_word} (none of its "
               "binaries imports one and no framework bundler's table knows is installed in "
               f"it), so this is bundler's default recipe for {platform.release_suffix}",
               "if the app needs another cuDNN or CUDA, name that release here (`bundler "
               "recipes` lists them)")
        return _with_components(default, why, needs, copies)
    recipe, reasons = _newest_supplying(names, constraining, platform, folder, found)
    # pack refuses a framework whose build-info file it cannot read: say so here too
    reasons += tuple(f"TO DECIDE: {f.title}'s build-info file cannot be read "
                     f"({f.unreadable}), so what it needs is unknown and `bundler pack` "
                     "refuses it: reinstall it" for f in frameworks if f.unreadable)
    return _with_components(recipe, reasons, needs, copies)


def default_recipe(platform: Platform, folder: Path) -> Recipe:
    """The seed where it is the platform's (the offline quickstart's), else the newest
    recipe bundler ships for the platform, else its newest catalogue release."""
    seed = find_recipe(DEFAULT_RECIPE, folder)
    if seed.platform == platform.name:
        return seed
    ours = [r for r in shipped_recipes() if r.platform == platform.name]
    if ours:
        return max(ours, key=lambda r: (version_key(r.cudnn), version_key(r.cuda)))
    releases = [r for r in catalogue_releases() if r.platform == platform.release_suffix]
    return find_recipe(max(releases, key=lambda r: (version_key(r.cudnn),
                                                    version_key(r.cuda))).name, folder)


def _in_vcs(path: str) -> bool:
    return _VCS in path.split("/")


def _constrains(facts: FrameworkFacts) -> bool:
    """Whether the framework's figures rule out some release (torch's own runtime and a
    CPU build need none)."""
    return not facts.ships_own_runtime and facts.gpu_build and bool(
        facts.cudnn_minimum()[0] or facts.cuda_needed()[0])


def _from_input(fitting: Sequence[ReleaseInput], named: Sequence[Need], folder: Path,
                needs: list[Need], copies: tuple[str, ...]) -> Choice:
    """The newest release whose own input is here, for an app whose binaries show no
    CUDA/cuDNN DLL (those its scripts name, it ships)."""
    newest = max(fitting, key=lambda f: (version_key(f.release.cudnn),
                                         version_key(f.release.cuda)))
    also = (f" that ships what its scripts name ({', '.join(sorted({n.dll for n in named}))})"
            if named else "")
    why = (f"the app's binaries show no CUDA or cuDNN DLL; {newest.path.name} ({newest.where}) "
           f"is the own input of release {newest.release.name}, the newest release found "
           f"on this machine{also}",
           f"another release: `bundler recipes cudnn{newest.release.major}-"
           f"{newest.release.platform}` lists this family's (any name it prints goes here)")
    return _with_components(find_recipe(newest.release.name, folder), why, needs, copies)


def named_in_scripts(app: Path, platform: Platform) -> list[Need]:
    """CUDA/cuDNN DLLs the app's own scripts name in a string (`ctypes.WinDLL(
    "cudnn64_8.dll")`), as frameworks load them: not imports pack's scan sees, so
    they only decide among the releases found here, and name components."""
    facts = platform.facts()
    found: list[Need] = []
    for script in _scripts(app):
        try:
            text = read_bounded(script, _MAX_SCRIPT_BYTES).decode("utf-8", "replace")
        except OSError:   # swapped for a pipe or a larger file since it was listed
            continue
        by = script.relative_to(app).as_posix()
        for name in dict.fromkeys(_NAME_STRING.findall(text)):
            if platform.is_library(name) and (
                    name.lower().startswith("cudnn")
                    or platform.library_stem(name).startswith("cudnn")
                    or facts.cuda_majors_of(name)):
                found.append(Need(name, by, "named in"))
    return found


def _scripts(app: Path) -> list[Path]:
    """The app's own .py files (not installed packages'), a few levels deep."""
    found: list[Path] = []
    level = [app]
    for _ in range(_SCRIPT_DEPTH):
        below = []
        for folder in level:
            try:
                entries = sorted(folder.iterdir())
            except OSError:
                continue
            for path in entries:
                if path.name.startswith(".") or path.name in _NOT_THE_APPS:
                    continue
                if path.is_dir() and not path.is_symlink():
                    below.append(path)
                elif path.suffix == ".py" and path.is_file() and \
                        path.stat().st_size <= _MAX_SCRIPT_BYTES:
                    found.append(path)
        level = below
    return found[:_MAX_SCRIPTS]


def _newest_supplying(names: list[str], frameworks: Sequence[FrameworkFacts],
                      platform: Platform, folder: Path, found: Sequence[ReleaseInput]
                      ) -> tuple[Recipe, tuple[str, ...]]:
    """The newest release that ships every name and serves every framework (their own
    figures: framework_facts.fits, pack's rule), those whose input is here first, then
    those bundler fetches itself (NVIDIA's PyPI wheel) before login-only zips."""
    shown = ", ".join(names)
    serves = "; ".join(_figures(f) for f in frameworks)
    tried: list[Recipe] = []
    have = {item.release.name: item for item in found}
    candidates = [r for r in _candidates(names, platform)
                  if all(fits(f, r.cuda, r.cudnn) is None for f in frameworks)]
    candidates.sort(key=lambda r: (r.name in have, _fetchable(r)), reverse=True)  # stable
    for release in candidates[:_TRIES]:
        recipe = find_recipe(release.name, folder)
        if all(recipe.supplier_of(name) for name in names):
            return recipe, _why(release, recipe, have.get(release.name), candidates, shown,
                                serves)
        tried.append(recipe)
    recipe = tried[0] if tried else default_recipe(platform, folder)
    wanted = " and ".join(filter(None, (f"ships all of {shown}" if shown else "",
                                        f"serves {serves}" if serves else "")))
    return recipe, (f"TO DECIDE: no cuDNN release bundler knows {wanted}; this one is "
                    "the closest it found, and `bundler pack` names what it lacks",
                    "`bundler recipes` lists every family and release")


def _fetchable(release: Release) -> bool:
    """NVIDIA publishes it as a PyPI wheel, which pack fetches itself (a zip of NVIDIA's
    developer site needs the user's login)."""
    return release.wheel is not None and not release.wheel.yanked


def _figures(facts: FrameworkFacts) -> str:
    cudnn, cudnn_by = facts.cudnn_minimum()
    cuda, cuda_by = facts.cuda_needed()
    said = [f"CUDA {cuda} ({cuda_by})" if cuda else "",
            f"cuDNN {cudnn} or newer ({cudnn_by})" if cudnn else ""]
    return f"{facts.title}: {', '.join(filter(None, said))}"


def _why(release: Release, recipe: Recipe, here: ReleaseInput | None,
         candidates: Sequence[Release], shown: str, serves: str) -> tuple[str, ...]:
    which = (f"the newest cuDNN release whose own input is here ({here.path.name}, "
             f"{here.where})" if here else
             "the newest cuDNN release bundler fetches itself (NVIDIA's PyPI wheel)"
             if _fetchable(release) else "the newest cuDNN release")
    what = " and ".join(filter(None, (
        f"ships every CUDA/cuDNN library the app needs ({shown})" if shown else "",
        f"serves every framework in it ({serves})" if serves else "")))
    why = [f"{which} that {what}: cuDNN {recipe.cudnn} for CUDA {recipe.cuda}"]
    newer = [r.name for r in candidates if version_key(r.cudnn) > version_key(release.cudnn)
             and not _fetchable(r)][:1]
    if newer and not here:
        why.append(f"newer: {newer[0]}, NVIDIA's zip only (a download behind NVIDIA's "
                   "login: give it in [sources] to use it)")
    why.append(f"another release: `bundler recipes cudnn{release.major}-{release.platform}` "
               "lists this family's (any name it prints goes here)")
    return tuple(why)


def _candidates(names: list[str], platform: Platform) -> list[Release]:
    """Catalogue releases of the cuDNN major(s) and CUDA major(s) every name allows,
    newest first (a release whose wheel NVIDIA yanked is left out)."""
    cudnn = _cudnn_majors(names, platform)
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


def _cudnn_majors(names: list[str], platform: Platform) -> set[int] | None:
    """The cuDNN majors whose family (of the platform) ships every cuDNN library named;
    None if none is one."""
    found: set[int] | None = None
    for name in names:
        if not platform.library_stem(name).startswith("cudnn") \
                and not name.lower().startswith("cudnn"):
            continue
        majors = {major for major, family in families(families_dir(),
                                                      platform.release_suffix).items()
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
