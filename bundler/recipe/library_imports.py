"""Where a library's import resolves: the one answer pack, inspect and doctor share.

An import named `name`, of a library that has `beside` next to it (the bundle, the
folder, the archive), is, on the recipe's platform (bundler.targets.registry):

- bundled: a library of that name is beside it (names compared as the platform does);
- system: the OS provides it (on Windows: Windows or the VC++ runtime, windows.toml);
- driver: the NVIDIA driver provides it (never bundled);
- missing: none of these. Then `cuda_majors` says which CUDA majors ship a DLL of that
  name (if it is a CUDA library; several for names like curand64_10) and `owner` which
  recipe ships it (if any of the given ones does).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import lru_cache

from bundler.recipe.load import Recipe, RuntimeFile, shipped_recipes
from bundler.targets.registry import Platform, platform_for

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


def resolve_import(name: str, beside: Collection[str], recipes: Iterable[Recipe],
                   platform: Platform) -> Resolution:
    """`beside` holds file names in the platform's name_key form; `recipes` are asked
    who ships a missing one. The platform is the examined library's, always given: a
    default would judge a Linux library by Windows names."""
    key = platform.name_key(name)
    facts = platform.facts()
    if key in beside:
        return Resolution(BUNDLED)
    if facts.is_system(key):
        return Resolution(SYSTEM)
    if facts.is_driver(key):
        return Resolution(DRIVER)
    owner = next(((r, f) for r in recipes for f in r.files.values()
                  if platform.same_name(f.name, name)), None)
    return Resolution(MISSING, facts.cuda_majors_of(key), owner)


def is_runtime_library(name: str, platform: Platform) -> bool:
    """A library a bundle could have to supply: a CUDA library, a cuDNN library (the
    driver table's scan patterns) or one some shipped recipe ships. What the app scan,
    inspect and doctor look for in a framework's imports."""
    return (platform.facts().is_cuda_library(name)
            or platform.matches(name, platform.driver_table().scan)
            or platform.name_key(name) in _recipe_file_names(platform.name))


@lru_cache(maxsize=4)
def _recipe_file_names(platform_name: str) -> frozenset[str]:
    platform = platform_for(platform_name)
    return frozenset(platform.name_key(f.name) for r in shipped_recipes()
                     if r.platform == platform.name for f in r.files.values()
                     if platform.is_library(f.name))
