"""The CUDA a framework build names itself for, where no file of its says it: its
distribution name (cupy-cuda101, mxnet-cu112) or Paddle's version tag (2.2.2.post101).
Its own build-info file, read after (facts.py), wins."""

from __future__ import annotations

import re

from bundler.platforms.driver_table import build_tag
from bundler.support.wheel_names import normalize

# Builds named for their CUDA: cupy-cuda101, cupy-cuda11x, mxnet-cu101 (normalized names)
_CUDA_IN_NAME = re.compile(r"^(?:cupy_cuda|mxnet_cu)(\d{2,3})(x?)$")
_PADDLE_TAG = re.compile(r"^post(\d{3})$")   # Paddle's CUDA builds: 2.2.2.post112 (11.2)


def cuda_named(distribution: str, version: str) -> tuple[str, str]:
    """(the CUDA a build names itself for, what says so): its name (cuda_in_name), else
    Paddle's version tag (2.2.2.post101: CUDA 10.1, not the PyPI build's); ("", "")."""
    named = cuda_in_name(distribution)
    if named:
        return named, f"its name {distribution}"
    tag = build_tag(version)
    found = _PADDLE_TAG.match(tag) if normalize(distribution) == "paddlepaddle_gpu" else None
    if found:
        digits = found.group(1)
        return f"{digits[:-1]}.{digits[-1]}", f"its version tag {tag}"
    return "", ""


def cuda_in_name(distribution: str) -> str:
    """The CUDA a build names itself for, where its distribution name is the only place
    that says it (cupy-cuda101 9.6 ships no _wheel.json): "10.1", "11" (cupy-cuda11x),
    "11.2" (mxnet-cu112); "" for any other name. Its own file, read after, wins."""
    found = _CUDA_IN_NAME.match(normalize(distribution))
    if not found:
        return ""
    digits, any_minor = found.groups()
    if any_minor:
        return digits
    return f"{digits[:-1]}.{digits[-1]}"
