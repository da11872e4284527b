"""The offline quickstart: its committed stand-ins are what tests/standin builds, it
packs with no network and no NVIDIA download, and the packed app runs under Wine."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.packing import snapshot
from tests.winenv import PROJECT_ROOT, WindowsPython, require_toolchain, require_wine
from tests.winenv.quickstart import QUICKSTART, build_inputs


def zip_directory(path: Path) -> list[tuple[str, int, int, int]]:
    """Names, sizes, CRCs and methods: zipfile cannot read Deflate64 member data."""
    with zipfile.ZipFile(path) as archive:
        return [(i.filename, i.file_size, i.CRC, i.compress_type) for i in archive.infolist()]


def test_committed_standins_match_their_sources(tmp_path: Path) -> None:
    require_toolchain()
    zip_path, toolkit = build_inputs(tmp_path)
    committed_zip = QUICKSTART / "downloads" / zip_path.name
    assert zip_directory(committed_zip) == zip_directory(zip_path)
    assert snapshot(QUICKSTART / "standin-cuda") == snapshot(toolkit.parent)


@pytest.fixture(scope="module")
def quickstart_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("qs") / "quickstart"
    shutil.copytree(QUICKSTART, copy, ignore=shutil.ignore_patterns("dist", "*.lock"))
    result = subprocess.run(["bundler", "pack", str(copy / "app.spec")],
                            capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert result.returncode == 0, result.stderr
    assert "packed cudnn-8.0.3.33-cuda10.1-win-x64" in result.stdout
    # The stand-ins are not NVIDIA-signed: the spec says so, and so does the output.
    assert "NOT SIGNED: 7 files lack the signature the recipe asks for" in result.stdout
    assert "this runtime is a stand-in" in result.stdout
    return copy / "dist" / "quickstart"


def test_quickstart_packs_and_verifies(quickstart_copy: Path) -> None:
    result = subprocess.run(["bundler", "verify", str(quickstart_copy)],
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("ok: 12 files match")


def test_quickstart_app_runs_on_windows(quickstart_copy: Path) -> None:
    require_wine()
    python = WindowsPython.setup(script_dir_on_path=False)
    result = python.run([quickstart_copy / "main.py"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cudnnGetVersion() = 8003" in result.stdout
    assert "cudnn64_8.dll" in result.stdout
