"""torch on Linux, detected at pack time as on Windows: torch opens
site-packages/nvidia/*/lib by absolute path, so an app folder holding torch and
nvidia/cudnn/lib/libcudnn.so.9 would have two libcudnn.so.9 in one process next to a
bundle that preloads its own. pack refuses it naming both files, or packs it with
[scan] allow_app_copies = true. The libraries are gcc-built ELF stand-ins
(tests/linux/test_linux_bundle.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.linux.test_linux_bundle import GRAPH, RECIPE, SHIM, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

pytestmark = linux_with_gcc


def _torch_app(tmp_path: Path, allow: bool) -> Path:
    """An app folder as pip installs torch into it (torch's dist-info, torch/, and the
    nvidia-cudnn wheel's nvidia/cudnn/lib), plus the bundle's source folder."""
    site = tmp_path / "app" / "site-packages"
    for folder in (site / "nvidia" / "cudnn" / "lib", tmp_path / "nvidia" / "cudnn" / "lib"):
        _library(folder, "libcudnn_graph.so.9", GRAPH.replace("MARKER", "1"))
        _library(folder, "libcudnn.so.9", SHIM, "-ldl")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("")
    info = site / "torch-2.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0\n")
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    scan = "[scan]\nallow_app_copies = true\n" if allow else ""
    spec.write_text('[app]\nname = "app"\npath = "app"\n[runtime]\nrecipe = "standin.toml"\n'
                    f'[sources]\nnvidia = "{(tmp_path / "nvidia").as_posix()}"\n{scan}')
    return spec


def test_torch_with_nvidias_cudnn_wheel_in_the_app_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "pack", _torch_app(tmp_path, allow=False))
    assert code == 2, err
    assert ("the app ships its own libcudnn_graph.so.9 "
            "(site-packages/nvidia/cudnn/lib/libcudnn_graph.so.9, from site-packages)") in err
    assert "allow_app_copies" in err and "opens site-packages/nvidia/*/lib by absolute path" in err
    assert not (tmp_path / "dist" / "app").exists()


def test_allow_app_copies_packs_torch_with_its_own_cudnn_on_linux(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "pack", _torch_app(tmp_path, allow=True))
    assert code == 0, err
    bundle = tmp_path / "dist" / "app"
    assert (bundle / "site-packages" / "nvidia" / "cudnn" / "lib" / "libcudnn.so.9").is_file()
