"""From what the app needs (app_scan) to the components a bundle ships, with reasons.

Every CUDA/cuDNN DLL the app needs must come from the bundle: the component that
supplies it is selected, and the pack summary says why. A DLL no component supplies
stops the pack, naming the DLL, who needs it and a shipped recipe that has it. An app
that ships its own copy of a DLL the bundle would preload (torch carries cuDNN in
torch/lib) is refused: two DLLs of one name in one process break the framework.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from bundler.errors import CheckError, SpecError
from bundler.frameworks import facts as framework_facts
from bundler.frameworks.environment import Environment
from bundler.frameworks.facts import FrameworkFacts, fitting_releases, refuse_unfit
from bundler.pack.app_scan import AppScan, Need
from bundler.pack.one_copy import refuse_second_copies
from bundler.recipe.library_imports import MISSING, resolve_import
from bundler.recipe.load import Component, Recipe, families_dir, find_recipe, shipped_recipes
from bundler.releases.catalogue import Release, catalogue_releases, version_key
from bundler.releases.families import runtime_sets
from bundler.releases.render import release_shipping
from bundler.support.suggest import listing
from bundler.targets.registry import Platform

_FAMILY = re.compile(r"^([a-z_-]+?)(?:64)?_\d")
_SHOWN = 8   # DLLs named in a refusal before the rest are counted


@dataclass(frozen=True)
class Unprovided:
    """Libraries an app file imports that neither the app, its recipe nor the OS (or the
    driver) provides: that file loads only on a machine that has them (onnxruntime-gpu's
    TensorRT provider imports nvinfer_10.dll, which comes with TensorRT)."""

    by: str                     # the importing file, relative to the app, with /
    libraries: tuple[str, ...]


@dataclass(frozen=True)
class Selection:
    components: list[Component]
    reasons: dict[str, list[str]]   # component -> why the app scan brought it in
    unprovided: tuple[Unprovided, ...] = ()
    environment: str = ""   # the Python environment examined for second copies


def select_for_app(recipe: Recipe, explicit: Sequence[str], extra: Sequence[str],
                   needs: Sequence[Need], scan: AppScan | None, allow_app_copies: bool,
                   environment: Environment | None = None) -> Selection:
    """`explicit`: [runtime] components (may be empty: the default ones); `extra`:
    [scan] components, added on top; `needs`: the scan's plus the spec's named DLLs;
    `environment`: the app's Python environment (pack/one_copy.py)."""
    shipped = scan.shipped if scan is not None else {}
    if scan is not None:   # before any input is read: the wrong release is refused now
        refuse_other_platform(recipe, scan)
        refuse_unfit(scan.framework_facts, recipe.name, recipe.cuda, recipe.cudnn,
                     recipe.target.release_suffix)
    base = [c.name for c in recipe.select(list(explicit) or None)] + list(extra)
    reasons: dict[str, list[str]] = {}
    unsupplied: list[Need] = []
    for need in needs:
        if recipe.target.name_key(need.dll) in shipped:
            continue   # the app brings its own (checked against the bundle below)
        supplier = recipe.supplier_of(need.dll)
        if supplier is None:
            unsupplied.append(need)
        elif supplier.component not in base:
            reasons.setdefault(supplier.component, []).append(f"{need.dll}: {need.reason}")
    if unsupplied:
        raise _unsupplied_error(recipe, unsupplied, needs,
                                scan.framework_facts if scan is not None else ())
    if explicit and reasons:
        raise _left_out_error(recipe, explicit, reasons)
    components = recipe.select(base + list(reasons))
    if not allow_app_copies:
        if environment is not None:   # first: it names the framework and the fix
            refuse_second_copies(environment, recipe, components)
        _refuse_app_copies(recipe, components, shipped, scan)
    return Selection(components, {c: r for c, r in reasons.items()},
                     _unprovided(recipe, scan) if scan is not None else (),
                     environment.described if environment is not None else "")


def refuse_other_platform(recipe: Recipe, scan: AppScan) -> None:
    """An app whose GPU binaries are all another platform's than the recipe's (ELF .so
    files importing libcudnn.so.9, packed with a win-x64 recipe) is refused, naming one
    of them and the recipe. An app holding both platforms' (a plug-in folder for either
    OS) packs: the recipe's half is served."""
    own = [g for g in scan.gpu_binaries if g.platform.name == recipe.platform]
    other = [g for g in scan.gpu_binaries if g.platform.name != recipe.platform]
    if own or not other:
        return
    found = other[0]
    release = other_release(recipe, found.platform)
    use = (f"pack it with a {found.platform.release_suffix} recipe, e.g. {release} "
           if release else f"pack it with a {found.platform.release_suffix} recipe ")
    raise CheckError(
        f"the app's GPU binaries are {found.platform.label} ones, e.g. {found.described}, "
        f"but recipe {recipe.name} is for {recipe.target.label} ({recipe.platform}): a "
        f"bundle for one platform cannot load the other's libraries",
        f"{use}(bundler recipes cudnn{recipe.cudnn.split('.')[0]}-"
        f"{found.platform.release_suffix} lists them), or write a spec for this app with "
        "bundler init APPDIR, which takes the platform from its binaries")


def other_release(recipe: Recipe, platform: Platform) -> str:
    """The catalogue release of `platform` nearest the recipe: its cuDNN and CUDA, else
    the newest of its cuDNN major and CUDA major, else of its cuDNN major; "" if none."""
    releases = [r for r in catalogue_releases() if r.platform == platform.release_suffix
                and not (r.wheel is not None and r.wheel.yanked)]
    cudnn_major = int(recipe.cudnn.split(".")[0])

    def same_cuda(release: Release) -> bool:
        return int(release.cuda.split(".")[0]) == recipe.cuda_major

    for fits in (lambda r: r.cudnn == recipe.cudnn and same_cuda(r),
                 lambda r: r.major == cudnn_major and same_cuda(r),
                 lambda r: r.major == cudnn_major):
        found = [r for r in releases if fits(r)]
        if found:
            return max(found, key=lambda r: (version_key(r.cudnn), version_key(r.cuda))).name
    return ""


# The app's Python brings these (a folder app's interpreter; a frozen or embedded-python
# app ships them, so the scan finds them there).
_PYTHON = re.compile(r"^(lib)?python\d[\d.]*(\.dll|\.so(\.[\d.]+)?)$", re.IGNORECASE)


def _unprovided(recipe: Recipe, scan: AppScan) -> tuple[Unprovided, ...]:
    """What app binaries import that nothing provides. Every binary the app ships counts
    as provided wherever it lies, Python extension modules (.pyd) too: Python loads it
    by full path when the app imports it, and a later import of that name resolves to
    the module already loaded (TensorFlow's 45 tensorflow/python/**/*.pyd import
    _pywrap_tensorflow_internal.pyd, which tensorflow/python/ holds)."""
    platform = recipe.target
    beside = {*scan.shipped, *(platform.name_key(f.name) for f in recipe.files.values()),
              *(platform.name_key(PurePosixPath(by).name) for by, _ in scan.imports)}
    found = []
    for by, names in scan.imports:
        once: dict[str, str] = {}   # each name once, compared as the OS compares them
        for name in names:
            once.setdefault(platform.name_key(name), name)
        missing = tuple(n for n in once.values() if not _PYTHON.match(n)
                        and resolve_import(n, beside, (), platform).status == MISSING)
        if missing:
            found.append(Unprovided(by, missing))
    return tuple(found)


def _family(dll: str) -> str:
    found = _FAMILY.match(dll.lower())
    return found.group(1) if found else dll.lower()


def _unsupplied_error(recipe: Recipe, unsupplied: list[Need], needs: Sequence[Need],
                      frameworks: Sequence[FrameworkFacts] = ()) -> CheckError:
    """One refusal for every DLL no component supplies: each importer, each DLL this
    recipe ships instead and each suggestion named once (an app importing 13 CUDA 12
    DLLs packed with a CUDA 13 recipe gets one short line, not 13 repeats)."""
    wanted: dict[str, list[str]] = {}
    ships: list[str] = []
    own: dict[str, list[str]] = {}   # this recipe's files by family, sorted out once
    for runtime_file in recipe.files.values():
        own.setdefault(_family(runtime_file.name), []).append(runtime_file.name)
    for need in unsupplied:
        wanted.setdefault(f"{need.by} {_verb(need)}", []).append(need.dll)
        ships += own.get(_family(need.dll), [])
    # One shipped recipe of the app's CUDA that has them all is the answer; else where
    # each can be had, for that CUDA (a cuDNN 8 app for CUDA 12 is not sent to 10.1).
    app_cuda = _app_cuda(recipe, needs)
    recipes = shipped_recipes()   # read once here, not once a name (40,000 in one binary)
    whole = [r.name for r in recipes if r.name != recipe.name
             and _of_cuda(r.cuda, app_cuda)
             and all(framework_facts.fits(f, r.cuda, r.cudnn) is None for f in frameworks)
             and all(r.supplier_of(need.dll) is not None for need in unsupplied)]
    if not whole and frameworks:   # a release that serves the frameworks, fetchable first
        whole = [r.name for r in fitting_releases(frameworks, recipe.target.release_suffix)
                 if r.name != recipe.name and all(find_recipe(r.name, Path.cwd())
                                                  .supplier_of(n.dll) for n in unsupplied)]
    suggested: dict[str, str] = {}   # each name's suggestion once
    folder, key = families_dir(), recipe.target.name_key
    known = {key(f.name) for r in recipes for f in r.files.values()}
    for need in [] if whole else unsupplied:
        if key(need.dll) not in suggested:
            suggested[key(need.dll)] = _suggestion(
                recipe, need.dll, app_cuda, recipes if key(need.dll) in known else (), folder
            ) or _nowhere(recipe, need, app_cuda, frameworks)
    uses = [f"use {whole[0]}"] if whole else list(suggested.values())
    texts = [f"{who} {listing(dlls, _SHOWN)}" for who, dlls in wanted.items()]
    texts.append(f"this recipe ships {listing(ships, _SHOWN)}" if ships
                 else "this recipe has no such DLL")
    texts.append(listing(uses, 3, sep="; "))
    return CheckError("; ".join(texts),
                      "pack the app with a recipe for the CUDA its framework is built for "
                      "(bundler recipes), or, if the app never uses that DLL, set "
                      "[scan] enabled = false in the spec")


def _app_cuda(recipe: Recipe, needs: Sequence[Need]) -> set[int] | None:
    """The CUDA majors every CUDA library the app needs allows (cublas64_12.dll: 12;
    curand64_10.dll: 10 to 13); None where no need names one."""
    found: set[int] | None = None
    for need in needs:
        majors = set(recipe.target.facts().cuda_majors_of(need.dll))
        if majors:
            found = majors if found is None else found & majors
    return found


def _of_cuda(cuda: str, app_cuda: set[int] | None) -> bool:
    return app_cuda is None or int(cuda.split(".")[0]) in app_cuda


def _suggestion(recipe: Recipe, dll: str, app_cuda: set[int] | None,
                recipes: Sequence[Recipe], folder: Path) -> str:
    """Where `dll` can be had: another of the shipped `recipes` of the app's CUDA, else a
    catalogue release (of the app's CUDA where the app's names tell it, else the
    recipe's)."""
    others = [r.name for r in recipes if r.name != recipe.name
              and _of_cuda(r.cuda, app_cuda) and r.supplier_of(dll) is not None]
    cuda = str(max(app_cuda)) if app_cuda else recipe.cuda
    release = release_shipping(dll, cuda, folder, recipe.target.release_suffix)
    return (f"use {others[0]}" if others else
            f"use a release that has it, e.g. {release} (bundler recipes)" if release
            else "")


def _nowhere(recipe: Recipe, need: Need, app_cuda: set[int] | None,
             frameworks: Sequence[FrameworkFacts]) -> str:
    """Why no release has `need`, naming the CUDA that has the library: TensorFlow 2.4
    loads cusolver64_10.dll, CUDA 11.0's name, which bundler's CUDA 11 releases (CUDA
    11.8's libraries: cusolver64_11.dll) do not ship; the CUDA 10.1 and 10.2 toolkits do."""
    key = recipe.target.name_key
    sets = runtime_sets(families_dir(), recipe.target.release_suffix)
    having = [s.cuda for s in sets.values() if any(
        key(PurePosixPath(f.split(":", 1)[-1]).name) == key(need.dll)
        for c in s.tables.get("components", {}).values() for f in c.get("files", ()))]
    cuda = str(max(app_cuda) if app_cuda else recipe.cuda_major)
    ours = sets.get(cuda)
    built = next((f.cuda_needed() for f in frameworks if f.title == need.by
                  and f.cuda_needed()[0]), ("", ""))
    text = (f"no release bundler knows ships {need.dll} for CUDA {cuda}"
            + (f" (its CUDA {cuda} releases pair CUDA {ours.cuda}'s libraries)" if ours else ""))
    if built[0] and not any(version_key(c)[:2] == version_key(built[0])[:2] for c in having):
        text += (f"; {need.dll} is CUDA {built[0]}'s, which {need.by} is built for "
                 f"({built[1]} says {built[0]})")
    if having:
        verb = "runtime sets ship" if len(having) > 1 else "runtime set ships"
        text += f"; the CUDA {' and '.join(having)} {verb} it"
    return text


def _verb(need: Need) -> str:
    return {"imported by": "imports", "loaded by": "loads",
            "loaded by name by": "loads by name"}.get(need.how, "names")


def _left_out_error(recipe: Recipe, explicit: Sequence[str],
                    reasons: dict[str, list[str]]) -> SpecError:
    why = "; ".join(f"'{c}' ({', '.join(r)})" for c, r in reasons.items())
    names = ", ".join(f'"{c}"' for c in [*explicit, *reasons])
    return SpecError(f"[runtime] components = {list(explicit)} leaves out what the app "
                     f"needs from {recipe.name}: {why}",
                     f"use components = [{names}], or [scan] enabled = false if the app "
                     "never loads them")


def _refuse_app_copies(recipe: Recipe, components: list[Component], shipped: dict[str, str],
                       scan: AppScan | None) -> None:
    files = recipe.files_for(components)
    key = recipe.target.name_key
    clashes = [(f.name, shipped[key(f.name)]) for f in files if key(f.name) in shipped]
    if not clashes:
        return
    name, where = clashes[0]
    parts = where.lower().split("/")
    frameworks = scan.frameworks if scan else ()
    # The framework whose package folder holds the copy (torch/lib/...), else the folder.
    owner = next((fw for fw in frameworks if fw.distribution.lower() in parts), None)
    who = owner.title if owner else where.split("/", 1)[0]
    raise CheckError(
        f"the app ships its own {name} ({where}, from {who}) and the bundle would preload "
        f"{recipe.name}'s {name}: two {recipe.target.library_word}s of one name in one "
        f"process break the framework that loads its own second "
        f"({recipe.target.app_copy_harm.format(name=name)})",
        f"{who} brings its own CUDA and cuDNN: ship this app without a bundled runtime, "
        "or, if another framework in it needs the bundle, set [scan] "
        "allow_app_copies = true and import that framework before torch")
