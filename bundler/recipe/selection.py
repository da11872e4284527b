"""Which components a recipe's selection holds, and why each one is in it.

A selection holds the components asked for (a spec's `components`, else the default
ones), what they `require`, and what their libraries load at their first call: cuDNN's
API shim (cudnn64_8.dll, cudnn64_9.dll, libcudnn.so.9) loads cudnn_ops_infer64_8 or
cudnn_graph64_9 when the app first uses it (cudnnCreate), so a bundle of the shim alone
fails at the app's first cuDNN call (on Linux the process aborts). Those names are the
cuDNN family's `loads_on_first_call` (recipes/families/cudnn<N>-win-x64.toml, named as
the recipe's platform names them), the one place the fact is written: they hold for any
recipe of that cuDNN major, hand-written or rendered. The selection is completed with
the components that ship them (docs/recipe-format.md, "Components that work"), and the
pack summary says so, as it says why the app scan brought a component in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bundler.errors import RecipeError
from bundler.recipe.folders import families_dir
from bundler.releases.families import Family, FamilyFile, families
from bundler.support.suggest import did_you_mean

if TYPE_CHECKING:
    from bundler.recipe.model import Component, Recipe


def selected(recipe: Recipe, wanted: Sequence[str] | None) -> list[Component]:
    """The wanted components (default: the default ones), everything they require and
    the components their libraries load at their first call, in recipe order."""
    if not wanted:
        wanted = [c.name for c in recipe.components.values() if c.default]
    chosen: set[str] = set()
    pending = list(wanted)
    while pending:
        name = pending.pop()
        if name not in recipe.components:
            known = ", ".join(recipe.components)
            raise RecipeError(f"recipe {recipe.name} has no component '{name}'"
                              f"{did_you_mean(name, recipe.components, 0.6)}",
                              f"choose from: {known}")
        if name not in chosen:
            chosen.add(name)
            pending.extend(recipe.components[name].requires)
            pending.extend(supplier for _, _, supplier in _first_call_loads(recipe, name))
    return [c for c in recipe.components.values() if c.name in chosen]


def completions(recipe: Recipe, explicit: Sequence[str], extra: Sequence[str] = ()
                ) -> dict[str, list[str]]:
    """The components `selected` adds beyond the wanted ones (`explicit`, else the
    default ones, plus `extra`) and what they require, each with why:
    "cudnn_ops_infer64_8.dll: loaded by cudnn64_8.dll at its first call", or "required
    by ops_infer" for what such a component requires in turn."""
    wanted = [*(explicit or [c.name for c in recipe.components.values() if c.default]),
              *extra]
    asked = set(_required(recipe, wanted))
    picked = [c.name for c in selected(recipe, wanted)]
    reasons: dict[str, list[str]] = {}
    for name in picked:
        for loader, library, supplier in _first_call_loads(recipe, name):
            if supplier not in asked:
                reasons.setdefault(supplier, []).append(
                    f"{library}: loaded by {loader} at its first call")
    for name in [n for n in picked if n in reasons]:
        for required in _required(recipe, recipe.components[name].requires):
            if required not in asked and required not in reasons:
                reasons[required] = [f"required by {name}"]
    return {name: reasons[name] for name in picked if name in reasons}


def _required(recipe: Recipe, names: Sequence[str]) -> list[str]:
    """`names` and what they require, without the first-call completion."""
    found: list[str] = []
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in recipe.components and name not in found:
            found.append(name)
            pending.extend(recipe.components[name].requires)
    return found


def _first_call_loads(recipe: Recipe, component: str) -> list[tuple[str, str, str]]:
    """(library of `component`, library it loads at its first call, the component that
    ships that one) for each such load its cuDNN family names."""
    family = _family_files(recipe)
    found = []
    for file_name in recipe.components[component].files:
        facts = family.get(recipe.target.name_key(file_name))
        for library in facts.loads_on_first_call if facts else ():
            supplier = recipe.supplier_of(library)
            if supplier is None:
                raise RecipeError(
                    f"recipe {recipe.name}: {file_name} loads {library} at its first call "
                    f"({_family_name(recipe)}), and no component of the "
                    "recipe ships it: a bundle of it would fail at the app's first cuDNN "
                    "call", f"add {library} to a component of the recipe (`bundler "
                    "recipes NAME --write` writes one that has it)")
            found.append((file_name, library, supplier.component))
    return found


def _family_files(recipe: Recipe) -> dict[str, FamilyFile]:
    """The recipe's cuDNN family's file facts by the platform's name key ({} when
    bundler has no family of that major or the recipe names no cuDNN major)."""
    family = _family(recipe)
    key = recipe.target.name_key
    return {key(name): facts for name, facts in family.files.items()} if family else {}


def _family_name(recipe: Recipe) -> str:
    family = _family(recipe)
    return family.path.name if family else ""


def _family(recipe: Recipe) -> Family | None:

    major = recipe.cudnn.split(".")[0]
    if not major.isdigit():
        return None
    return families(families_dir(), recipe.target.release_suffix).get(int(major))
