"""Recipes: the knowledge of one runtime, loaded from `recipes/*.toml`.

A recipe says which sources a runtime comes from, which files each component
takes from them, what each component requires, and what is never shipped. Code
elsewhere reads these facts; it never hard-codes a runtime.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path, PurePosixPath

from bundler.errors import RecipeError, SourceError
from bundler.recipe.checks import check_consistency, driver_minimums, signer_trust
from bundler.recipe.folders import families_dir, shipped_recipe_dir
from bundler.recipe.model import (
    LICENCE_COMPONENT,
    SOURCE_KINDS,
    Component,
    Recipe,
    RuntimeFile,
    SourceKind,
    SourceSpec,
    required_trust,
)
from bundler.releases.catalogue import catalogue_releases, cuda_key
from bundler.releases.channels import detect as detect_channel
from bundler.releases.families import runtime_sets
from bundler.releases.render import (
    CUDNN_SOURCE,
    channel_of,
    default_channel,
    release_for,
    render,
    rendered_from,
)
from bundler.releases.runtime_inputs import overrides as runtime_overrides
from bundler.support.paths import is_bare_file_name
from bundler.support.suggest import did_you_mean
from bundler.support.toml_tables import Table, load_toml_bytes, parse_toml_text
from bundler.targets.registry import platform_for

# The model's records, where the rest of bundler has always found them.
__all__ = ["LICENCE_COMPONENT", "SOURCE_KINDS", "Component", "Recipe", "RuntimeFile",
           "SourceKind", "SourceSpec", "find_recipe", "families_dir", "load_recipe_file",
           "load_recipe_text", "required_trust", "shipped_recipe_dir", "shipped_recipes"]

def shipped_recipes() -> list[Recipe]:
    """Every shipped recipe, read once while its files are unchanged: a refusal that
    asks, per library name, which recipe ships it (40,000 names in one binary) reads
    each file once, not once a name (0.03 s a time). The files' stamps are the key, so
    an edited recipe is read again."""
    folder = shipped_recipe_dir()
    stamps = []
    for path in sorted(folder.glob("*.toml")):
        try:
            facts = path.stat()
        except OSError:
            facts = None   # gone or unreadable: load_recipe_file says so
        stamps.append((path, None if facts is None else
                       (facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns, facts.st_ino)))
    return list(_read_recipes(tuple(stamps)))


@lru_cache(maxsize=2)
def _read_recipes(stamps: tuple[tuple[Path, object], ...]) -> tuple[Recipe, ...]:
    return tuple(load_recipe_file(path) for path, _ in stamps)


def find_recipe(name_or_path: str, relative_to: Path,
                inputs: Mapping[str, Path] | None = None) -> Recipe:
    """A recipe file by path (relative to the spec), a shipped recipe by name, or any
    release of the catalogue by name, rendered from its family (bundler/releases/).
    `inputs`: the paths the spec gives by source id. The cuDNN input's layout picks the
    channel; a CUDA toolkit or another companion wheel changes the runtime half."""
    inputs = inputs or {}
    if name_or_path.endswith(".toml") or "/" in name_or_path or "\\" in name_or_path:
        return load_recipe_file((relative_to / name_or_path).resolve())
    candidate = shipped_recipe_dir() / f"{name_or_path}.toml"
    shipped = load_recipe_file(candidate) if candidate.is_file() else None
    if shipped is not None and not _needs_rendering(shipped, inputs):
        return shipped
    release = release_for(name_or_path)
    if release is None:
        known = ", ".join(r.name for r in shipped_recipes())
        names = [*(r.name for r in shipped_recipes()), *(r.name for r in catalogue_releases())]
        raise RecipeError(f"no shipped recipe is named '{name_or_path}'"
                          f"{did_you_mean(name_or_path, names, 0.8)}",
                          f"use one of: {known}, a catalogue release "
                          "(cudnn-<version>-cuda<major>-win-x64 or -linux-x64: bundler "
                          "recipes), or a "
                          "path to a recipe file")
    cudnn_input = inputs.get(CUDNN_SOURCE)
    channel = (channel_of(release, cudnn_input) if cudnn_input is not None
               else default_channel(release))
    text = render(release, channel, families_dir(), inputs).encode()
    return load_recipe_text(text, Path(f"{release.name} ({rendered_from(release)})"))


def _needs_rendering(shipped: Recipe, inputs: Mapping[str, Path]) -> bool:
    """Whether the spec's inputs are another channel than the shipped recipe reads: the
    cuDNN input in another layout (NVIDIA's redist archive of a release the shipped
    recipe takes from PyPI), a CUDA toolkit or another companion wheel."""
    runtime = runtime_sets(families_dir(), shipped.target.release_suffix).get(
        cuda_key(shipped.cuda))
    if runtime is not None and runtime_overrides(runtime, inputs):
        return True
    own = shipped.sources.get(CUDNN_SOURCE)
    cudnn_input = inputs.get(CUDNN_SOURCE)
    if cudnn_input is None or own is None:
        return False
    major = int(shipped.cudnn.split(".")[0])
    try:
        found = detect_channel(cudnn_input, major, shipped.target.release_suffix)
    except SourceError:
        return False   # the shipped recipe's own source names what is wrong with it
    return (found.kind, found.root) != (own.kind, own.root)


def load_recipe_file(path: Path) -> Recipe:
    data, raw = load_toml_bytes(path, RecipeError, "recipe")
    return _recipe(data, raw, path)


def load_recipe_text(raw: bytes, label: Path) -> Recipe:
    """A recipe from TOML text (a rendered one); `label` names it in messages."""
    return _recipe(parse_toml_text(raw.decode(), label, RecipeError), raw, label)


def _recipe(data: dict, raw: bytes, path: Path) -> Recipe:
    top = Table(data, path, "", RecipeError, "docs/recipe-format.md")
    name = top.take("name", str)
    platform = top.take("platform", str)
    target = platform_for(platform, path)   # an unknown one would skip its checks
    description = top.take("description", str, "")
    versions = top.table("versions")
    cudnn, cuda = _dotted(versions, "cudnn", "8.9.4.25"), _dotted(versions, "cuda", "11.8")
    min_driver, min_driver_compat = driver_minimums(versions, cuda, target)
    versions.done()
    signers = {name: signer_trust(name, t) for name, t in top.tables("signers").items()}
    sources = {sid: _source(sid, t, platform) for sid, t in top.tables("sources").items()}
    file_facts = top.tables("files")
    components, files = _components(top, sources, file_facts)
    licences = tuple(_file_ref(ref, LICENCE_COMPONENT, sources, top)
                     for ref in top.take("licences", list, []))
    top.done()
    for leftover in file_facts:
        raise RecipeError(f"{path}: [files.\"{leftover}\"] is not a file of any component",
                          "add it to a component's files or remove the table")
    recipe = Recipe(name=name, platform=platform, description=description, cudnn=cudnn,
                    cuda=cuda, min_driver=min_driver, sources=sources,
                    components=components, files=files, licences=licences, path=path,
                    sha256=hashlib.sha256(raw).hexdigest(),
                    min_driver_compat=min_driver_compat, signers=signers, text=raw)
    check_consistency(recipe)
    return recipe


# A release number as NVIDIA writes them: numbers and dots ("8.9.4.25", "12"); cuDNN's
# development builds on PyPI add .devN ("9.26.0.33.dev63203437", as the catalogue's
# parse_release_name reads them). Version checks compare them part by part, so anything
# else must be refused here, by name.
_DOTTED = re.compile(r"\d+(?:\.\d+)*")
_DOTTED_DEV = re.compile(r"\d+(?:\.\d+)*(?:\.dev\d+)?")


def _dotted(versions: Table, key: str, example: str) -> str:
    value = versions.take(key, str)
    if not (_DOTTED_DEV if key == "cudnn" else _DOTTED).fullmatch(value):
        raise RecipeError(f"{versions.path}: [versions] {key} = {value!r} is not a release "
                          "number (numbers and dots)",
                          f'write it as NVIDIA does, e.g. {key} = "{example}"')
    return value


def _source(sid: str, table: Table, platform: str) -> SourceSpec:
    kind = table.take("kind", str)
    if kind not in SOURCE_KINDS:
        raise RecipeError(f"{table.path}: [sources.{sid}] kind '{kind}' is unknown",
                          f"use one of: {', '.join(SOURCE_KINDS)}")
    source_kind = SOURCE_KINDS[kind]
    spec = SourceSpec(
        id=sid, kind=kind, contents=tuple(table.take_str_list("contents", [])),
        optional_contents=tuple(table.take_str_list("optional_contents", [])),
        file_name=table.take("file_name", str, ""), sha256=table.take("sha256", str, ""),
        root=table.take("root", str, ""), env=tuple(table.take_str_list("env", [])),
        package=table.take("package", str, ""), version=table.take("version", str, ""),
        # A wheel's platform tag is the recipe's platform's (win-amd64 -> win_amd64)
        # unless the recipe says otherwise.
        platform_tag=table.take("platform_tag", str,
                                platform_for(platform).wheel_tag
                                if source_kind.takes_platform_tag else ""),
        signed_by=table.take("signed_by", str, ""),
        signature_optional=table.take("signature_optional", bool, False),
        pin_source=table.take("pin_source", str, ""))
    table.done()
    lacking = [key for key in source_kind.required if not getattr(spec, key)]
    if lacking:
        raise RecipeError(f"{table.path}: [sources.{sid}] is a {kind} but lacks "
                          f"{' or '.join(source_kind.required)}", source_kind.required_hint)
    return spec


def _file_ref(ref: object, component: str, sources: dict[str, SourceSpec],
              top: Table) -> RuntimeFile:
    """Parse "source:member" or {source, member, as} into a RuntimeFile."""
    if isinstance(ref, str) and ":" in ref:
        source, member = ref.split(":", 1)
        target = ""
    elif isinstance(ref, dict):
        entry = Table(ref, top.path, f"{component} file", RecipeError, top.reference)
        source, member = entry.take("source", str), entry.take("member", str)
        target = entry.take("as", str, "")
        entry.done()
    else:
        raise RecipeError(f"{top.path}: file reference {ref!r} in '{component}' is not "
                          "\"source:member\" or {source, member, as}",
                          'write e.g. "cudnn:bin/cudnn64_8.dll"')
    if source not in sources:
        raise RecipeError(f"{top.path}: '{component}' takes {member} from unknown source "
                          f"'{source}'", f"define [sources.{source}]")
    if target and not is_bare_file_name(target):
        # The name is joined to the runtime folder: a path would write outside it.
        raise RecipeError(f"{top.path}: '{component}' ships {member} as {target!r}, which "
                          "is not a bare file name", 'give as = a file name without folders, '
                          'e.g. as = "NVIDIA_cuDNN_LICENSE.txt"')
    return RuntimeFile(name=target or PurePosixPath(member).name, source=source,
                       member=member, component=component)


def _with_facts(runtime_file: RuntimeFile, facts: Table | None, source: SourceSpec
                ) -> RuntimeFile:
    """Add what [files."NAME"] says: the expected version, run-time loads and signer
    (by default its source's; "" says the file is not signed)."""
    runtime_file = replace(runtime_file, signed_by=source.signed_by,
                           signature_optional=source.signature_optional)
    if facts is None:
        return runtime_file
    version = facts.take("version", str, "")
    loads = tuple(facts.take_str_list("loads", []))
    signed_by = facts.take("signed_by", str, source.signed_by)
    get_version = facts.take("cudnn_get_version", int, 0)
    where_readable = facts.take("cudnn_get_version_where_readable", bool, False)
    facts.done()
    if where_readable and not get_version:
        raise RecipeError(f"{facts.path}: cudnn_get_version_where_readable without "
                          "cudnn_get_version", "add cudnn_get_version or remove it")
    return replace(runtime_file, version=version, loads=loads, signed_by=signed_by,
                   cudnn_get_version=get_version,
                   cudnn_get_version_where_readable=where_readable)


def _components(top: Table, sources: dict[str, SourceSpec], file_facts: dict[str, Table]
                ) -> tuple[dict[str, Component], dict[str, RuntimeFile]]:
    components: dict[str, Component] = {}
    files: dict[str, RuntimeFile] = {}
    for cname, table in top.tables("components").items():
        names = []
        for ref in table.take("files", list):
            runtime_file = _file_ref(ref, cname, sources, top)
            runtime_file = _with_facts(runtime_file, file_facts.pop(runtime_file.name, None),
                                       sources[runtime_file.source])
            if runtime_file.name in files:
                raise RecipeError(f"{top.path}: {runtime_file.name} is listed by both "
                                  f"'{files[runtime_file.name].component}' and '{cname}'",
                                  "list each file in one component")
            files[runtime_file.name] = runtime_file
            names.append(runtime_file.name)
        components[cname] = Component(
            name=cname, files=tuple(names),
            requires=tuple(table.take_str_list("requires", [])),
            description=table.take("description", str, ""),
            default=table.take("default", bool, True))
        table.done()
    return components, files
