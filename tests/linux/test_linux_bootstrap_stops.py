"""The Linux bootstrap's two stops, natively (issue 18, item 3): a library of a bundled
file's name already mapped from elsewhere is refused naming both paths (the bundle's
copy would never be the one cuDNN's dlopen by SONAME gets), and a bundled file that is
gone stops the app naming the file and the fix, before the app runs on another copy.

The libraries are tests/linux/test_linux_bundle.py's gcc-built stand-ins of NVIDIA's shape.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.linux.test_linux_bundle import APP, RECIPE, _cudnn_pair

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")


def _bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    """(the packed app folder, the decoys' folder)."""
    decoys = _cudnn_pair(tmp_path / "nvidia" / "cudnn" / "lib", tmp_path / "decoys")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(APP)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    'recipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    return tmp_path / "dist" / "app", decoys


def _python(code: str, drivers: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`code` run with no LD_LIBRARY_PATH, or only the folder of a stand-in driver."""
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    env.update({"LD_LIBRARY_PATH": str(drivers)} if drivers else {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=False, timeout=60)


def test_a_library_already_mapped_from_elsewhere_is_refused_naming_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Something mapped the decoy libcudnn_graph.so.9 before the bootstrap ran (a
    framework imported first): the bootstrap stops and names the decoy and the bundle's
    copy, rather than letting the process run on the decoy."""
    app, decoys = _bundle(tmp_path, capsys)
    decoy = decoys / "libcudnn_graph.so.9"
    done = _python(f"import ctypes, os, runpy\nctypes.CDLL({str(decoy)!r}, os.RTLD_GLOBAL)\n"
                   f"runpy.run_path({str(app / '_cudnn_bootstrap.py')!r})\n")
    assert done.returncode != 0
    assert (f"another libcudnn_graph.so.9 is already loaded from {decoy}; this app needs its "
            f"bundled {app / 'cudnn' / 'libcudnn_graph.so.9'}") in done.stderr, done.stderr
    # The control: the same bootstrap with nothing mapped first loads the bundle.
    clean = _python(f"import runpy\nrunpy.run_path({str(app / '_cudnn_bootstrap.py')!r})\n")
    assert clean.returncode == 0, clean.stderr


def test_a_bundled_library_that_is_gone_stops_the_app_with_the_file_and_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = _bundle(tmp_path, capsys)
    (app / "cudnn" / "libcudnn.so.9").unlink()
    done = _python(f"import runpy\nrunpy.run_path({str(app / 'main.py')!r}, "
                   "run_name='__main__')\n")
    assert done.returncode != 0
    assert (f"bundled runtime file cudnn/libcudnn.so.9 ({app / 'cudnn' / 'libcudnn.so.9'}) is "
            "missing: restore it, or re-run `bundler pack` to rebuild the app") in done.stderr
    # This machine has no NVIDIA driver: that warning first, then the error alone.
    assert done.stderr.splitlines()[-1].startswith("cuDNN runtime error: bundled runtime file ")
    assert "Traceback" not in done.stderr   # the message alone: it names the file and fix
    assert "cudnnGetVersion" not in done.stdout   # the app itself never ran


def test_the_driver_is_checked_at_start_up_as_on_windows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """libcuda.so.1 judged by the manifest's figures before any library loads: none is one
    warning (the app runs: it may fall back to the CPU); a driver too old for CUDA 13.0
    stops the app under require_driver = true; one new enough says nothing."""
    from tests.linux.test_linux_doctor import _driver
    app, _ = _bundle(tmp_path, capsys)
    run_main = (f"import runpy\nrunpy.run_path({str(app / 'main.py')!r}, "
                "run_name='__main__')\n")
    none = _python(run_main)
    assert none.returncode == 0, none.stderr
    assert none.stderr.startswith("cuDNN runtime warning: no NVIDIA driver found "
                                  "(libcuda.so.1 cannot be loaded: "), none.stderr
    old = _driver(tmp_path / "old", "550.54.14", 12040)
    manifest = app / "cudnn" / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"require_driver": false',
                                                     '"require_driver": true'))
    stopped = _python(run_main, old)
    assert stopped.returncode != 0
    assert stopped.stderr.startswith(
        f"cuDNN runtime error: the NVIDIA driver {old / 'libcuda.so.550.54.14'} supports "
        "CUDA 12.4 (cuDriverGetVersion 12040), but this app's CUDA 13.0 runtime needs"
    ), stopped.stderr
    new = _python(run_main, _driver(tmp_path / "new", "580.65.06", 13000))
    assert new.returncode == 0 and "NVIDIA driver" not in new.stderr, new.stderr
