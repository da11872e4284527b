"""Issue 17, item 2, end to end: an embedded-python bundle cross-packed on Linux (no
Wine) runs under Wine through its .cmd launcher, in a prefix where no Python is
installed: its own CPython 3.11, the real numpy win_amd64 wheel pip installed for it,
and the bundled cuDNN although a decoy cuDNN comes first on PATH.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import SEED, own_copy
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.wheels import NUMPY_WHEEL
from tests.harness.winenv.winpython import to_windows_path
from tests.integration.test_embedded_python import EMBEDDED_MAIN, bundler_cache, embedded_workspace


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
           standin_toolkit: Path, standin_framework: Path) -> Path:
    root = tmp_path_factory.mktemp("embedded-wine")
    spec = embedded_workspace(root, standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    return pack(load_spec(spec), environ=bundler_cache(root / "cache")).out


def _report(output: str) -> dict:
    (line,) = [line for line in output.splitlines() if line.startswith("{")]
    return json.loads(line)


def test_no_python_is_installed_in_the_prefix(app_python: WindowsPython) -> None:
    """What the launcher must not fall back on: no python.exe anywhere on the prefix's
    drive C: (its Windows folders, PATH's), no registered CPython (PEP 514 keys). The
    harness's own Python lies outside the prefix and is never on the Windows PATH."""
    drive_c = app_python.prefix / "drive_c"
    assert drive_c.is_dir()
    assert not [p for p in drive_c.rglob("python*.exe")]
    for hive in ("HKCU", "HKLM"):
        query = app_python.run_exe("reg", ["query", f"{hive}\\Software\\Python"])
        assert query.returncode != 0, query.stdout


def test_the_launcher_runs_the_app_with_its_own_python_numpy_and_runtime(
        bundle: Path, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    dist = own_copy(bundle, tmp_path)
    stray = tmp_path / "stray"   # PYTHONPATH: ignored by the isolated embeddable CPython
    result = app_python.run_exe("cmd", ["/c", dist / "demo.cmd", "7", "two words", "--x=1"],
                                path_dirs=[decoy_cudnn_dir], timeout=300,
                                env={"PYTHONPATH": to_windows_path(stray)})
    assert result.returncode == 7, result.stderr   # the app's exit code, through cmd
    report = _report(result.stdout)
    assert report["argv"] == ["7", "two words", "--x=1"]
    assert report["executable"].lower() == to_windows_path(
        dist / "python" / "python.exe").lower()
    assert report["numpy"] == NUMPY_WHEEL.version and report["dot"] == 14.0
    assert report["numpy_file"].lower().startswith(to_windows_path(
        dist / "python" / "Lib" / "site-packages" / "numpy").lower())
    assert report["helper"] == "the app folder is on sys.path"
    # sys.path is the ._pth's: the app folder first, nothing from PYTHONPATH
    assert report["isolated"] == 1
    assert report["sys_path"][0].lower() == to_windows_path(dist).lower()
    assert not [p for p in report["sys_path"] if "stray" in p.lower()]
    assert report["bootstrap"] is True
    # the bundled cuDNN, although the decoy is on PATH (and stays there)
    assert report["version"] == 8003
    assert report["path"].lower() == to_windows_path(dist / "cudnn" / "cudnn64_8.dll").lower()
    assert to_windows_path(decoy_cudnn_dir).lower() in report["PATH"].lower()


def test_without_the_bootstrap_the_decoy_wins(
        bundle: Path, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    """The control: the same bundle's Python running the app as written (no bootstrap
    lines) loads the decoy from PATH, so the test above shows the bootstrap at work."""
    dist = own_copy(bundle, tmp_path)
    (dist / "control.py").write_text(EMBEDDED_MAIN)
    result = app_python.run_exe(dist / "python" / "python.exe", [dist / "control.py"],
                                path_dirs=[decoy_cudnn_dir], timeout=300)
    assert result.returncode == 0, result.stderr
    report = _report(result.stdout)
    assert report["version"] == 7605 and report["bootstrap"] is False
    assert report["path"].lower().startswith(to_windows_path(decoy_cudnn_dir).lower())


def test_the_bundles_report_runs_with_its_own_python(
        bundle: Path, app_python: WindowsPython, tmp_path: Path) -> None:
    dist = own_copy(bundle, tmp_path)
    result = app_python.run_exe(dist / "python" / "python.exe",
                                [dist / "_cudnn_bootstrap.py"], timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["versions"]["cudnn"] == "8.0.3.33"


def test_doctor_accepts_the_bundle(bundle: Path, win_python: WindowsPython) -> None:
    """Doctor on Windows reads the embedded-python bundle as a folder app's: verified,
    every bundled DLL would load; the one problem here is the missing NVIDIA driver."""
    result = win_python.run(["-m", "bundler", "doctor", bundle, "--json"], timeout=300)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["verify"]["ok"] is True and report["recipe"] == SEED
    findings = [(f["level"], f["message"]) for f in report["findings"]]
    assert len([m for level, m in findings if level == "ok" and "would load" in m]) == 10
    problems = [m for level, m in findings if level == "problem"]
    assert len(problems) == 1 and "no NVIDIA driver found" in problems[0], problems
