"""Recipe families and CUDA runtime sets: what stays the same across many releases.

A **family** (`recipes/families/cudnn<N>-win-x64.toml`) is what every release of one
cuDNN major shares: its DLLs and components, the load graph, which checks its files
carry (version resource, cudnnGetVersion) and, by era, who signed them. A **runtime
set** (`recipes/families/cuda<M>-win-x64.toml`) is the CUDA runtime, cuBLAS and math
libraries a release of CUDA <M> is paired with, written in the recipe format's own
tables. render.py joins one of each with a catalogue release into a recipe.
Both are read strictly: an unknown key is refused.

One family serves every platform: the Linux family of a cuDNN major is the Windows one
(its components, requires and load graph: what NVIDIA's builds share) with each file
named as the platform names it (bundler/targets/registry.py: cudnn_graph64_9.dll ->
libcudnn_graph.so.9) and the Windows-only facts (signatures, version resources, the
cudnnGetVersion constant read from PE code) left out. Runtime sets differ by platform
(other wheels, other files): one file per CUDA and platform, cuda<M>-<platform>.toml.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from bundler.errors import RecipeError
from bundler.releases.catalogue import version_key
from bundler.support.toml_tables import Table, load_toml
from bundler.targets.registry import Platform, platform_for, platform_for_release

REFERENCE = "docs/recipe-format.md"
VERSION_RESOURCES = ("cudnn", "cuda", "none")


@dataclass(frozen=True)
class Era:
    """How the family's releases from `start` on are trusted and checked."""

    start: str
    signed_by: str                      # "" : NVIDIA did not sign this era's DLLs
    signature_optional: bool = False    # checked where present (facts unknown)
    version_resource_checked: bool = True
    get_version_where_readable: bool = False   # cudnnGetVersion's code never seen


@dataclass(frozen=True)
class FamilyComponent:
    name: str
    description: str
    files: tuple[str, ...]
    requires: tuple[str, ...]


@dataclass(frozen=True)
class FamilyFile:
    name: str
    version_resource: str               # one of VERSION_RESOURCES
    get_version: bool
    loads: tuple[str, ...]
    # Those of `loads` it cannot work without: it loads them as the API is first used
    # (cudnnCreate), not on demand. A selection shipping it ships them too.
    loads_on_first_call: tuple[str, ...] = ()


@dataclass(frozen=True)
class Family:
    name: str
    platform: str
    cudnn_major: int
    description: str
    eras: tuple[Era, ...]
    signers: dict[str, Any]             # recipe-format [signers] tables
    components: dict[str, FamilyComponent]
    files: dict[str, FamilyFile]
    path: Path

    def era_for(self, version: str) -> Era:
        eras = [e for e in self.eras if version_key(e.start) <= version_key(version)]
        if not eras:
            raise RecipeError(f"{self.path}: no [[era]] covers cuDNN {version}",
                              f"add an [[era]] with from <= {version}")
        return max(eras, key=lambda e: version_key(e.start))


@dataclass(frozen=True)
class RuntimeSet:
    """The CUDA runtime and libraries paired with cuDNN, as recipe-format tables."""

    name: str
    platform: str
    cuda: str
    min_driver: str
    tables: dict[str, Any]              # licences, signers, sources, components, files
    path: Path


SHARED_FAMILIES = "win-x64"   # the platform whose family files every platform shares


@cache
def families(folder: Path, suffix: str = SHARED_FAMILIES) -> dict[int, Family]:
    """The families of one platform (a release suffix: "win-x64", "linux-x64")."""
    found = [_family(p) for p in sorted(folder.glob(f"cudnn*-{SHARED_FAMILIES}.toml"))]
    target = platform_for_release(suffix)
    if suffix != SHARED_FAMILIES and target is not None:
        found = [translated(f, target) for f in found]
    return {f.cudnn_major: f for f in found}


@cache
def runtime_sets(folder: Path, suffix: str = SHARED_FAMILIES) -> dict[str, RuntimeSet]:
    """One platform's, by the CUDA a release names: "12", "10.1"."""
    found = [_runtime_set(p) for p in sorted(folder.glob(f"cuda*-{suffix}.toml"))]
    return {s.name.split("-")[0][len("cuda"):]: s for s in found}


def translated(family: Family, target: Platform) -> Family:
    """The family as `target` names its files: the same components, requires and loads;
    no signatures, version resources or code reads (Windows facts)."""
    source = platform_for(family.platform)

    def name(file: str) -> str:
        version = "{cuda_major}" if "{cuda_major}" in file else str(family.cudnn_major)
        stem = source.library_stem(file)
        if not stem:
            raise RecipeError(f"{family.path}: {file} is not named as {source.os_name} "
                              "names a CUDA library", "name it <stem>64_<major>.dll")
        return target.library_file(stem, version)

    def described(text: str) -> str:
        for file in family.files:
            text = text.replace(file, name(file))
        return text

    return replace(
        family, name=family.name.replace(source.release_suffix, target.release_suffix),
        platform=target.name, signers={},
        eras=tuple(Era(start=e.start, signed_by="", version_resource_checked=False)
                   for e in family.eras),
        components={k: replace(c, description=described(c.description),
                               files=tuple(name(f) for f in c.files))
                    for k, c in family.components.items()},
        files={name(k): FamilyFile(name=name(k), version_resource="none", get_version=False,
                                   loads=tuple(name(n) for n in f.loads),
                                   loads_on_first_call=tuple(name(n)
                                                             for n in f.loads_on_first_call))
               for k, f in family.files.items()})


def _family(path: Path) -> Family:
    top = Table(load_toml(path, RecipeError, "recipe family"), path, "", RecipeError,
                REFERENCE)
    family = Family(
        name=top.take("family", str), platform=top.take("platform", str),
        cudnn_major=top.take("cudnn_major", int), description=top.take("description", str),
        eras=tuple(_era(Table(t, path, "era", RecipeError, REFERENCE))
                   for t in top.take("era", list)),
        signers=top.take("signers", dict, {}),
        components={name: _component(name, t) for name, t in top.tables("components").items()},
        files={name: _file(name, t) for name, t in top.tables("files").items()},
        path=path)
    top.done()
    if path.stem != family.name:
        raise RecipeError(f"{path}: family = {family.name!r} differs from its file name",
                          f"name the file {family.name}.toml")
    listed = {f for c in family.components.values() for f in c.files}
    for name in set(family.files) - listed:
        raise RecipeError(f"{path}: [files.\"{name}\"] is in no component",
                          "add it to a component's files or remove the table")
    return family


def _era(table: Table) -> Era:
    era = Era(start=table.take("from", str), signed_by=table.take("signed_by", str),
              signature_optional=table.take("signature_optional", bool, False),
              version_resource_checked=table.take("version_resource_checked", bool, True),
              get_version_where_readable=table.take("get_version_where_readable", bool,
                                                    False))
    table.done()
    return era


def _component(name: str, table: Table) -> FamilyComponent:
    component = FamilyComponent(name=name, description=table.take("description", str, ""),
                                files=tuple(table.take_str_list("files")),
                                requires=tuple(table.take_str_list("requires", [])))
    table.done()
    return component


def _file(name: str, table: Table) -> FamilyFile:
    facts = FamilyFile(name=name, version_resource=table.take("version_resource", str),
                       get_version=table.take("get_version", bool, False),
                       loads=tuple(table.take_str_list("loads", [])),
                       loads_on_first_call=tuple(table.take_str_list("loads_on_first_call",
                                                                     [])))
    table.done()
    for unlisted in set(facts.loads_on_first_call) - set(facts.loads):
        raise RecipeError(f"{table.path}: [files.\"{name}\"] loads_on_first_call names "
                          f"{unlisted}, which its loads do not", f"add {unlisted} to loads")
    if facts.version_resource not in VERSION_RESOURCES:
        raise RecipeError(f"{table.path}: [files.\"{name}\"] version_resource is "
                          f"{facts.version_resource!r}",
                          f"use one of: {', '.join(VERSION_RESOURCES)}")
    return facts


_SET_TABLES = ("licences", "signers", "sources", "components", "files")


def _runtime_set(path: Path) -> RuntimeSet:
    top = Table(load_toml(path, RecipeError, "runtime set"), path, "", RecipeError, REFERENCE)
    name, platform = top.take("runtime_set", str), top.take("platform", str)
    cuda, min_driver = top.take("cuda", str), top.take("min_driver", str, "")
    tables = {key: top.take(key, list if key == "licences" else dict, None)
              for key in _SET_TABLES}
    top.done()
    if path.stem != name:
        raise RecipeError(f"{path}: runtime_set = {name!r} differs from its file name",
                          f"name the file {name}.toml")
    return RuntimeSet(name=name, platform=platform, cuda=cuda, min_driver=min_driver,
                      tables={k: v for k, v in tables.items() if v is not None}, path=path)
