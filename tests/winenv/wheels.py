"""Real NVIDIA wheels the tests use, fetched once into the harness cache.

They are fetched by bundler's own fetch (pip, checked against the recipe's sha256
pin) into <cache>/wheels, laid out as bundler's wheel cache: a test may point
BUNDLER_CACHE there and pack with the source left out of [sources].
"""

from __future__ import annotations

from pathlib import Path

from bundler.pack.sources.fetch import cached, fetch
from bundler.recipe import SourceSpec, find_recipe

from ._cache import cache_root, locked

CUDA11_RECIPE = "cudnn-8.9.4.25-cuda11-win-x64"


def wheel_cache() -> Path:
    return cache_root() / "wheels"


def nvidia_wheel(recipe: str, source_id: str) -> Path:
    """The pinned wheel of `source_id` in `recipe`, fetched with pip on first use."""
    spec = find_recipe(recipe, Path.cwd()).sources[source_id]
    root = wheel_cache()
    found = cached(spec, root)
    if found:
        return found
    with locked(f"wheel-{spec.sha256[:16]}"):
        return cached(spec, root) or fetch(spec, root)


def cudart_wheel() -> Path:
    """nvidia-cuda-runtime-cu11==11.8.89 (1 MB): the real cudart64_110.dll."""
    return nvidia_wheel(CUDA11_RECIPE, "cudart")


# onnxruntime-gpu 1.26.0 (226 MB): its onnxruntime_providers_cuda.dll is the real framework
# binary the app-scan tests read. Pinned by version and sha256 like the NVIDIA wheels.
ORT_WHEEL = SourceSpec(
    id="onnxruntime", kind="wheel", contents=(), package="onnxruntime-gpu", version="1.26.0",
    platform_tag="win_amd64", file_name="onnxruntime_gpu-1.26.0-cp311-cp311-win_amd64.whl",
    sha256="cc5329aad02d9745cc3ae9cdb185bfa1aad242a7bf89b8c471280002ec40f98a")
ORT_PROVIDER = "onnxruntime/capi/onnxruntime_providers_cuda.dll"


def ort_wheel() -> Path:
    """The real onnxruntime-gpu 1.26.0 cp311 win_amd64 wheel, fetched with pip once."""
    root = wheel_cache()
    found = cached(ORT_WHEEL, root)
    if found:
        return found
    with locked(f"wheel-{ORT_WHEEL.sha256[:16]}"):
        return cached(ORT_WHEEL, root) or fetch(ORT_WHEEL, root)
