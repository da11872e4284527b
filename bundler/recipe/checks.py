"""A recipe's consistency checks, run once it is read (docs/recipe-format.md,
"Consistency checks"), and the reading of its [signers] tables."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bundler.errors import RecipeError
from bundler.support.toml_tables import Table
from bundler.targets.registry import Platform, Trust

if TYPE_CHECKING:
    from bundler.recipe.model import Recipe

_FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")


def signer_trust(name: str, table: Table) -> Trust:
    """[signers."NAME"]: the roots (SHA-256 of each DER certificate) NAME's chain must
    reach, and those its timestamps may reach (default: the same)."""
    roots = tuple(table.take_str_list("roots"))
    stamps = tuple(table.take_str_list("timestamp_roots", list(roots)))
    table.done()
    for fingerprint in roots + stamps:
        if not _FINGERPRINT.match(fingerprint):
            raise RecipeError(f"{table.path}: [signers.\"{name}\"] root {fingerprint!r} is not "
                              "a SHA-256 fingerprint", "give 64 lower-case hex digits, e.g. "
                              "from `openssl x509 -noout -fingerprint -sha256`")
    if not roots:
        raise RecipeError(f"{table.path}: [signers.\"{name}\"] pins no root",
                          "add roots = [\"<sha256>\"] (docs/recipe-format.md)")
    return Trust(signer=name, roots=roots, timestamp_roots=stamps)


def check_consistency(recipe: Recipe) -> None:
    where = recipe.path
    facts = recipe.target.facts()
    for component in recipe.components.values():
        for required in component.requires:
            if required not in recipe.components:
                raise RecipeError(f"{where}: component '{component.name}' requires unknown "
                                  f"component '{required}'", "fix the requires list")
    for runtime_file in recipe.files.values():
        if not facts.is_redistributable(runtime_file.name):
            raise RecipeError(f"{where}: {runtime_file.name} is not redistributable "
                              f"(allowed: {', '.join(facts.redistributable)})",
                              "headers and import libraries never go into an app")
        if facts.is_driver(runtime_file.name):
            raise RecipeError(f"{where}: {runtime_file.name} is a driver or system DLL and "
                              "is never bundled", "remove it from the components")
        if runtime_file.signed_by and runtime_file.signed_by not in recipe.signers:
            raise RecipeError(f"{where}: {runtime_file.name} must be signed by "
                              f"{runtime_file.signed_by!r}, which [signers] does not list",
                              f'add [signers."{runtime_file.signed_by}"] with its roots')
    shipped = [f.name for f in (*recipe.files.values(), *recipe.licences)]
    key = recipe.target.name_key   # on Windows, file names ignore case
    keys = [key(name) for name in shipped]
    clashes = sorted({name for name in shipped if keys.count(key(name)) > 1})
    if clashes:
        raise RecipeError(f"{where}: {', '.join(clashes)} would be shipped twice (each "
                          "wheel names its licence alike)",
                          'rename them apart: {source = "...", member = "...", as = "..."}')
    for item in (*recipe.files.values(), *recipe.licences):
        source = recipe.sources[item.source]
        if source.contents and item.member not in (*source.contents,
                                                   *source.optional_contents):
            raise RecipeError(f"{where}: {item.member} is not in the contents of source "
                              f"'{source.id}'", "add it to contents or fix the member path")


def driver_minimums(versions: Table, cuda: str, platform: Platform) -> tuple[str, str]:
    """min_driver and min_driver_compat of a CUDA release, from the platform's driver
    table (bundler/windows/compat.toml). A recipe may state them only to agree with it,
    or for a release the table lacks."""
    table = platform.driver_table()
    known = {"min_driver": table.min_driver_for(cuda),
             "min_driver_compat": table.minor_compatible_from(cuda)}
    for key, derived in known.items():
        given = versions.take(key, str, "")
        if given and derived and given != derived:
            raise RecipeError(f"{versions.path}: versions.{key} = {given!r}, but bundler's "
                              f"driver table gives {derived!r} for CUDA {cuda}",
                              f"remove {key}: it comes from the driver table "
                              "(docs/recipe-format.md)")
        known[key] = given or derived
    if not known["min_driver"]:
        raise RecipeError(f"{versions.path}: bundler's driver table has no CUDA {cuda}",
                          f'add min_driver = "..." (NVIDIA\'s minimum {platform.os_name} '
                          f"driver for CUDA {cuda}) to [versions]")
    return known["min_driver"], known["min_driver_compat"]
