"""Session-scoped pytest fixtures of the Windows harness.

tests/conftest.py imports them with `from tests.harness.winenv.fixtures import *`.
They are shared by every test of a session: copy a file or folder before
changing it (truncating a DLL, adding a decoy ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from . import PROJECT_ROOT, require_toolchain, require_wine
from .build import (
    StandinRuntime,
    build_decoy,
    build_dll,
    build_framework,
    build_runtime,
    cudnn_spec,
    make_nvidia_zip,
    make_toolkit,
    nvidia_zip_name,
)
from .wheels import cudart_wheel as fetch_cudart_wheel
from .winpython import WindowsPython

__all__ = [
    "app_python",
    "cudart_wheel",
    "decoy_cudnn_dir",
    "standin_cudnn_x86",
    "standin_framework",
    "standin_runtime",
    "standin_runtime_cuda11",
    "standin_toolkit",
    "standin_zip",
    "win_python",
]


@pytest.fixture(scope="session")
def win_python() -> Iterator[WindowsPython]:
    """Windows CPython 3.11 under Wine; its _pth lists the wheels and the project root."""
    require_wine()
    with WindowsPython.setup(extra_paths=[PROJECT_ROOT]).session() as python:
        yield python


@pytest.fixture(scope="session")
def app_python() -> Iterator[WindowsPython]:
    """The embeddable CPython as shipped: the script's folder is NOT on sys.path.

    Held as a session like win_python: another pytest process finishing stops the
    prefix's Wine server only when nobody holds one (else our runs would die with it)."""
    require_wine()
    with WindowsPython.setup(script_dir_on_path=False).session() as python:
        yield python


@pytest.fixture(scope="session")
def standin_runtime(tmp_path_factory: pytest.TempPathFactory) -> StandinRuntime:
    """cuDNN 8.0.3.33 for CUDA 10.1, x64: the 7 cuDNN DLLs and the 3 CUDA DLLs in one folder."""
    require_toolchain()
    return build_runtime(tmp_path_factory.mktemp("standin-runtime"))


@pytest.fixture(scope="session")
def standin_runtime_cuda11(tmp_path_factory: pytest.TempPathFactory) -> StandinRuntime:
    """cuDNN 8.0.3.33 built against CUDA 11 (imports cublas64_11.dll ...): a wrong build."""
    require_toolchain()
    return build_runtime(tmp_path_factory.mktemp("standin-runtime-cuda11"), cuda="11")


@pytest.fixture(scope="session")
def standin_zip(standin_runtime: StandinRuntime, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """NVIDIA's cudnn-10.1-windows10-x64-v8.0.3.33.zip layout, Deflate64, 31 files."""
    out = tmp_path_factory.mktemp("downloads") / nvidia_zip_name()
    return make_nvidia_zip(standin_runtime.dir, out, "deflate64")


@pytest.fixture(scope="session")
def standin_toolkit(standin_runtime: StandinRuntime,
                    tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CUDA v10.1 toolkit folder (bin/cudart64_101.dll, cublas64_10.dll, cublasLt64_10.dll)."""
    return make_toolkit(standin_runtime.dir, tmp_path_factory.mktemp("cuda") / "v10.1")


@pytest.fixture(scope="session")
def decoy_cudnn_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stray folder on PATH: cudnn64_8.dll reporting 7605, and its own ops_infer."""
    require_toolchain()
    return build_decoy(tmp_path_factory.mktemp("decoy")).dir


@pytest.fixture(scope="session")
def standin_framework(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """framework.dll (alone in its folder): loads cudnn64_8.dll by bare name, like TensorFlow."""
    require_toolchain()
    return build_framework(tmp_path_factory.mktemp("framework"))


@pytest.fixture(scope="session")
def standin_cudnn_x86(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 32-bit (i386) cudnn64_8.dll, for the wrong-architecture check."""
    require_toolchain()
    return build_dll(cudnn_spec(arch="x86"), tmp_path_factory.mktemp("standin-x86"))


@pytest.fixture(scope="session")
def cudart_wheel() -> Path:
    """The real nvidia-cuda-runtime-cu11==11.8.89 wheel (1 MB), fetched with pip once."""
    return fetch_cudart_wheel()
