"""Render a recipe for any catalogue release: family + runtime set + release + channel.

The result is recipe-format TOML (written deterministically, so its sha256, which the
lock pins, changes only when the facts do) and is loaded by bundler/recipe/load.py exactly
like a shipped recipe file, with every consistency check.

The pairing rule: a release of CUDA <M> is paired with the runtime set of <M> (the CUDA
runtime, cuBLAS and math libraries of the newest CUDA <M> release bundler knows; for
CUDA 10.x, the installed toolkit of that minor). A spec pairs other files by giving them
in [sources]: a CUDA toolkit folder as `cuda`, or another wheel of a companion under its
source id (runtime_inputs.py). Anything else: write the rendered recipe out (`bundler
recipes NAME --write FILE`), edit it, and name the file in the spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from bundler.errors import RecipeError
from bundler.releases.catalogue import (
    Release,
    catalogue_releases,
    closest_releases,
    cuda_key,
    find_release,
    parse_release_name,
)
from bundler.releases.channels import Channel, detect, pick_cuda
from bundler.releases.families import SHARED_FAMILIES, Family, families, runtime_sets
from bundler.releases.runtime_inputs import RuntimeTables, runtime_tables
from bundler.support.toml_write import dumps
from bundler.targets.registry import platform_for

CUDNN_SOURCE = "cudnn"
CUDNN_LICENCE = "NVIDIA_cuDNN_LICENSE.txt"


def release_for(name: str) -> Release | None:
    """The catalogue release of that name; None if the name is not release-shaped;
    RecipeError naming the closest known releases if it is but none has it."""
    if parse_release_name(name) is None:
        return None
    release = find_release(name)
    if release is None:
        raise RecipeError(f"bundler knows no cuDNN release named '{name}'",
                          f"closest known: {', '.join(closest_releases(name))} (bundler "
                          "recipes VERSION lists a series), or write a recipe file")
    return release


def release_shipping(dll: str, cuda: str, folder: Path, platform: str) -> str:
    """The newest catalogue release whose family ships `dll`, for `cuda` where one is
    ("" if no family ships it), of `platform` (a release suffix, "win-x64"; "" for any),
    the newest NVIDIA publishes as a PyPI wheel first: what a refusal suggests."""
    majors = [f.cudnn_major for f in families(folder).values()
              if any(dll.lower() == name.lower() for name in f.files)]
    if not majors:
        return ""   # no family ships it: no release to look through (asked once a name)
    found = [r for r in catalogue_releases() if r.major in majors
             and (not platform or r.platform == platform)]
    fitting = [r for r in found if r.cuda == cuda_key(cuda)] or found
    # one pack fetches itself (NVIDIA's PyPI wheel) before a newer login-only zip
    wheels = [r for r in fitting if r.wheel is not None and not r.wheel.yanked]
    return (wheels or fitting)[-1].name if fitting else ""


def rendered_from(release: Release) -> str:
    """What a rendered recipe is made of, for messages naming it."""
    runtime = "" if release.platform == SHARED_FAMILIES else \
        f" and cuda{release.cuda}-{release.platform}.toml"
    return f"rendered from recipes/families/cudnn{release.major}-win-x64.toml{runtime}"


def default_channel(release: Release) -> Channel:
    """The channel a spec that gives no cuDNN input gets: the pinned wheel, fetched with
    pip; else NVIDIA's archive by name (to be given in [sources])."""
    if release.wheel is not None:
        return _wheel_channel(release)
    archive = release.archives[-1]
    root = "cuda" if archive.layout == "legacy" else archive.file_name.removesuffix(".zip")
    return Channel(f"{archive.layout} archive", "archive", "bin/", root=root,
                   licence="NVIDIA_SLA_cuDNN_Support.txt" if archive.layout == "legacy"
                   else "LICENSE", file_name=archive.file_name, sha256=archive.sha256,
                   pin_source=archive.sha256_source)


def channel_of(release: Release, path: Path) -> Channel:
    """The channel of the input the spec gives, with the catalogue's pin where one fits."""
    found = pick_cuda(detect(path, release.major, release.platform), release.cuda)
    # A tarball's file says 9.19.0, the release 9.19.0.56: the figures it gives must agree.
    given = found.version.split(".")
    if found.version and given != release.cudnn.split(".")[:len(given)]:
        raise RecipeError(f"{path}: holds cuDNN {found.version} ({found.name}), not "
                          f"{release.cudnn}",
                          f"give an input of cuDNN {release.cudnn}, or name the release it "
                          f"holds (cudnn-{found.version}-cuda{release.cuda}-{release.platform})")
    if found.kind == "wheel":
        if release.wheel is None:
            raise RecipeError(f"{path}: a wheel, but NVIDIA published no wheel of cuDNN "
                              f"{release.cudnn} for CUDA {release.cuda}",
                              "give NVIDIA's archive of this release instead")
        return _wheel_channel(release)
    if found.kind != "archive":
        return found
    layout = "legacy" if found.root == "cuda" else "redist"
    candidates = [a for a in release.archives if a.layout == layout]
    by_name = [a for a in candidates if path.name in (a.file_name, *a.also_named)]
    pinned = by_name or (candidates if len({a.sha256 for a in candidates}) == 1 else [])
    if pinned and pinned[0].sha256:
        return replace(found, file_name=pinned[0].file_name, sha256=pinned[0].sha256,
                       pin_source=pinned[0].sha256_source)
    return found


def _wheel_channel(release: Release) -> Channel:
    wheel = release.wheel
    assert wheel is not None
    return Channel("PyPI wheel", "wheel", f"{wheel.bin}/", licence=wheel.licence,
                   file_name=wheel.file_name, sha256=wheel.sha256, pin_source="PyPI")


def render(release: Release, channel: Channel, folder: Path,
           runtime_inputs: Mapping[str, Path] | None = None) -> str:
    """The recipe of `release` read from `channel`, as TOML text; `runtime_inputs`:
    the spec's inputs for the runtime half (runtime_inputs.py)."""
    family = families(folder, release.platform).get(release.major)
    runtime_set = runtime_sets(folder, release.platform).get(release.cuda)
    if family is None or runtime_set is None:
        missing = (f"cuDNN {release.major} family" if family is None
                   else f"CUDA {release.cuda} {release.platform} runtime set")
        raise RecipeError(f"{release.name}: bundler has no {missing} (recipes/families/)",
                          "pick a release of a family bundler has: bundler recipes")
    runtime = runtime_tables(runtime_set, runtime_inputs or {})
    shipped = _shipped_dlls(release, family)
    components = _components(family, shipped, channel.prefix)
    files = {name: _facts(family, release, runtime, name) for name in shipped}
    document: dict[str, Any] = {
        "name": release.name, "platform": family.platform,
        "description": family.description.format(
            cudnn=release.cudnn, cuda=release.cuda, cuda_major=release.cuda,
            platform=platform_for(family.platform).label)
        + f" ({', '.join(filter(None, [channel.name, runtime.given]))})",
        "licences": _licences(channel) + runtime.licences,
        "versions": {"cudnn": release.cudnn, "cuda": runtime.cuda,
                     # the set's own figure, unless the runtime given is another CUDA
                     # (an installed runtime) the driver table knows: the table's then
                     **({"min_driver": runtime_set.min_driver}
                        if runtime_set.min_driver and (
                            runtime.cuda == runtime_set.cuda or not platform_for(
                                family.platform).driver_table().min_driver_for(runtime.cuda))
                        else {})},
        "signers": _signers(family, runtime_set.tables.get("signers", {})),
        "sources": {CUDNN_SOURCE: _source(family, release, channel, shipped),
                    **runtime.sources},
        "components": _ordered(runtime.components, components),
        "files": {**_loads_within(files, shipped, runtime), **runtime.files},
    }
    return dumps(document)


def _shipped_dlls(release: Release, family: Family) -> list[str]:
    """The family's DLLs this release has: the wheel's (read from its directory) where
    NVIDIA published one, else all of them. A DLL the family does not know is refused:
    the family must learn it first."""
    known = [f for c in family.components.values() for f in c.files]
    if release.wheel is None:
        return known
    unknown = sorted(set(release.wheel.dlls) - set(known))
    if unknown:
        raise RecipeError(f"{release.name}: its wheel holds {', '.join(unknown)}, which "
                          f"{family.path.name} does not know",
                          "add them to a component of the family (read their imports "
                          "and loads from the real files first)")
    return [f for f in known if f in release.wheel.dlls]


def _components(family: Family, shipped: list[str], prefix: str
                ) -> dict[str, dict[str, Any]]:
    kept = {name: [f for f in c.files if f in shipped]
            for name, c in family.components.items()}
    kept = {name: files for name, files in kept.items() if files}
    return {name: {"description": family.components[name].description,
                   "files": [f"{CUDNN_SOURCE}:{prefix}{f}" for f in files],
                   "requires": [r for r in family.components[name].requires
                                if r in kept or r not in family.components]}
            for name, files in kept.items()}


def _ordered(runtime: dict[str, Any], cudnn: dict[str, Any]) -> dict[str, Any]:
    """The runtime's default components, then cuDNN's, then the optional math libraries
    (the order `bundler recipes` and the manifest list them in)."""
    default = {k: v for k, v in runtime.items() if v.get("default", True)}
    return {**default, **cudnn, **{k: v for k, v in runtime.items() if k not in default}}


def _facts(family: Family, release: Release, runtime: RuntimeTables, name: str
           ) -> dict[str, Any]:
    facts = family.files.get(name)
    if facts is None:
        return {}
    era = family.era_for(release.cudnn)
    version = {"cudnn": release.cudnn if era.version_resource_checked else "",
               "cuda": driver_style_version(runtime.cuda), "none": ""}[facts.version_resource]
    return {**({"version": version} if version else {}),
            **({"cudnn_get_version": api_version(release.cudnn)} if facts.get_version else {}),
            **({"cudnn_get_version_where_readable": True}
               if facts.get_version and era.get_version_where_readable else {}),
            "loads": [n.format(cuda_major=release.cuda.split(".")[0]) for n in facts.loads]}


def _loads_within(files: dict[str, dict[str, Any]], shipped: list[str],
                  runtime: RuntimeTables) -> dict[str, dict[str, Any]]:
    """`loads` keeps the names this recipe ships: a later release's library is not
    loaded by an earlier one that never had it."""
    runtime_names = {ref.split(":", 1)[1].rsplit("/", 1)[-1]
                     for c in runtime.components.values() for ref in c["files"]}
    for facts in files.values():
        facts["loads"] = [n for n in facts.get("loads", [])
                          if n in shipped or n in runtime_names]
        if not facts["loads"]:
            del facts["loads"]
    return {name: facts for name, facts in files.items() if facts}


def _licences(channel: Channel) -> list[dict[str, str]]:
    if not channel.licence:
        return []
    return [{"source": CUDNN_SOURCE, "member": channel.licence, "as": CUDNN_LICENCE}]


def _signers(family: Family, runtime_signers: dict[str, Any]) -> dict[str, Any]:
    """Both files' signers; a signer both name may reach the roots of either."""
    merged: dict[str, Any] = {}
    for signers in (family.signers, runtime_signers):
        for name, table in signers.items():
            into = merged.setdefault(name, {"roots": []})
            into["roots"] = _union(into["roots"], table["roots"])
            stamps = table.get("timestamp_roots", table["roots"])
            into["timestamp_roots"] = _union(into.get("timestamp_roots", []), stamps)
    return merged


def _union(first: list[str], second: list[str]) -> list[str]:
    return first + [item for item in second if item not in first]


def _source(family: Family, release: Release, channel: Channel, shipped: list[str]
            ) -> dict[str, Any]:
    era = family.era_for(release.cudnn)
    members = [f"{channel.prefix}{name}" for name in shipped]
    source: dict[str, Any] = {"kind": channel.kind,
                              "contents": members + ([channel.licence] if channel.licence
                                                     else [])}
    wheel = release.wheel
    if channel.kind == "wheel" and wheel is not None:
        source |= {"package": wheel.package, "version": wheel.version,
                   "platform_tag": wheel.platform}
    for key in ("root", "file_name", "sha256", "pin_source"):   # the recipe keys' names
        if getattr(channel, key):
            source[key] = getattr(channel, key)
    if era.signed_by:
        source["signed_by"] = era.signed_by
    if era.signature_optional:
        source["signature_optional"] = True
    return source


def driver_style_version(cuda: str) -> str:
    """NVIDIA's driver-style FileVersion of a CUDA release's DLLs: 10.1 -> 6.14.11.10010."""
    major, minor = (int(p) for p in cuda.split(".")[:2])
    return f"6.14.11.{major * 1000 + minor * 10}"


def api_version(cudnn: str) -> int:
    """What cudnnGetVersion returns: 7.5.0 -> 7500, 8.9.7 -> 8907, 9.1.0 -> 90100."""
    major, minor, patch = (int(p) for p in cudnn.split(".")[:3])
    return major * 10000 + minor * 100 + patch if major >= 9 else \
        major * 1000 + minor * 100 + patch
