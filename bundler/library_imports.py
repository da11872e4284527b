"""Where a DLL's import resolves: the one answer pack, inspect and doctor share.

An import named `name`, of a DLL that has `beside` next to it (the bundle, the folder,
the archive), is:

- bundled: a DLL of that name is beside it;
- system: Windows or the VC++ runtime provides it (windows.toml);
- driver: the NVIDIA driver provides it (windows.toml, never bundled);
- missing: none of these. Then `cuda_majors` says which CUDA majors ship a DLL of that
  name (if it is a CUDA library; several for names like curand64_10) and `owner` which
  recipe ships it (if any of the given ones does).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache

from bundler.recipe import Recipe, RuntimeFile, shipped_recipes
from bundler.windows.compat import compat_facts
from bundler.windows.facts import name_matches, windows_facts

BUNDLED, SYSTEM, DRIVER, MISSING = "bundled", "system", "driver", "missing"


@dataclass(frozen=True)
class Resolution:
    status: str                    # BUNDLED, SYSTEM, DRIVER or MISSING
    cuda_majors: tuple[int, ...] = ()   # the CUDA majors that ship a missing library
    owner: tuple[Recipe, RuntimeFile] | None = None   # a recipe that ships it

    @property
    def note(self) -> str:
        """Why a missing import matters, in a few words."""
        if self.owner is not None:
            recipe, runtime_file = self.owner
            return f"recipe {recipe.name} takes it from source '{runtime_file.source}'"
        if self.cuda_majors:
            return f"a CUDA {'/'.join(map(str, self.cuda_majors))} library"
        return ""


def resolve_import(name: str, beside: Collection[str], recipes: Iterable[Recipe] = ()
                   ) -> Resolution:
    """`beside` holds lower-case file names; `recipes` are asked who ships a missing one."""
    lowered = name.lower()
    facts = windows_facts()
    if lowered in beside:
        return Resolution(BUNDLED)
    if facts.is_system(lowered):
        return Resolution(SYSTEM)
    if facts.is_driver(lowered):
        return Resolution(DRIVER)
    owner = next(((r, f) for r in recipes for f in r.files.values()
                  if f.name.lower() == lowered), None)
    return Resolution(MISSING, facts.cuda_majors_of(lowered), owner)


def is_runtime_dll(name: str) -> bool:
    """A DLL a bundle could have to supply: a CUDA library, a cuDNN DLL (compat.toml's
    scan patterns) or a DLL some shipped recipe ships. What the app scan, inspect and
    doctor look for in a framework's imports."""
    return (windows_facts().is_cuda_library(name) or name_matches(name, compat_facts().scan)
            or name.lower() in _recipe_file_names())


@lru_cache(maxsize=1)
def _recipe_file_names() -> frozenset[str]:
    return frozenset(f.name.lower() for r in shipped_recipes() for f in r.files.values()
                     if f.name.lower().endswith(".dll"))
