"""Real NVIDIA wheels the tests use, fetched once into the harness cache.

They are fetched by bundler's own fetch (pip, checked against the recipe's sha256
pin) into <cache>/wheels, laid out as bundler's wheel cache: a test may point
BUNDLER_CACHE there and pack with the source left out of [sources].
"""

from __future__ import annotations

from pathlib import Path

from bundler.pack.sources.fetch import cached, fetch
from bundler.recipe import find_recipe

from ._cache import cache_root, locked
from .paths import PROJECT_ROOT
from .pins import PinMismatch, nvidia_pin

CUDA11_RECIPE = "cudnn-8.9.4.25-cuda11-win-x64"


def wheel_cache() -> Path:
    return cache_root() / "wheels"


def nvidia_wheel(recipe: str, source_id: str) -> Path:
    """The pinned wheel of `source_id` in `recipe`, fetched with pip on first use."""
    spec = find_recipe(recipe, PROJECT_ROOT).sources[source_id]
    pin = nvidia_pin(spec.package)
    if (spec.version, spec.sha256) != (pin.version, pin.sha256):
        raise PinMismatch(f"recipe {recipe} pins {spec.package}=={spec.version} "
                          f"({spec.sha256}), pins.toml {pin.requirement} ({pin.sha256})")
    root = wheel_cache()
    found = cached(spec, root)
    if found:
        return found
    with locked(f"wheel-{spec.sha256[:16]}"):
        return cached(spec, root) or fetch(spec, root)


def cudart_wheel() -> Path:
    """nvidia-cuda-runtime-cu11==11.8.89 (1 MB): the real cudart64_110.dll."""
    return nvidia_wheel(CUDA11_RECIPE, "cudart")
