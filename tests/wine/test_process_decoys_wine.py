"""`bundler verify --run` of a Windows bundle under Wine sees what the debugger saw (issue
40, items 4 and 5).

The Windows debug API (bundler/windows/process_trace.py, run by the command's Windows
Python) records every DLL any process of the command loads: a decoy cuDNN renamed g.bin
(known by the cuDNN API it exports), and a decoy loaded by a child process that never
runs the bootstrap, both of which the processes' own reports never showed. With no
command, a Windows embedded-python bundle runs import-only under Wine with its own
python.exe; without Wine, verify says so (exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import Workspace
from tests.harness.winenv import WindowsPython, to_windows_path
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace
from tests.wine.test_process_truth_wine import _verify_run, packed

__all__ = ["packed"]   # the fixture, shared with test_process_truth_wine.py

RENAMED = '''\
import ctypes, runpy, sys
runpy.run_path("main.py", run_name="__main__")
ctypes.CDLL(sys.argv[1])
'''
CHILD = '''\
import runpy, subprocess, sys
runpy.run_path("main.py", run_name="__main__")
subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                sys.argv[1]], check=True)
'''


def _script(workspace: Workspace, name: str, text: str) -> str:
    (workspace.dist / name).write_text(text)
    return name


def test_a_decoy_renamed_g_bin_is_known_by_the_cudnn_api_it_exports(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    renamed = tmp_path / "g.bin"
    shutil.copy(decoy_cudnn_dir / "cudnn64_8.dll", renamed)
    code, report, err = _verify_run(app_python, packed.dist,
                                    _script(packed, "renamed.py", RENAMED),
                                    to_windows_path(renamed))
    assert code == 1 and report["traced"] and report["exit_code"] == 0, (report, err)
    [module] = [m for m in report["modules"] if not m["from_bundle"]]
    assert module["path"].lower() == to_windows_path(renamed).lower()
    assert module["exports"][0].startswith("cudnn"), module
    assert "under the name g.bin" in module["why"]


def test_a_decoy_loaded_by_a_child_process_is_seen(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path) -> None:
    """The child never runs the bootstrap, so it never reported: only the debugger,
    which debugs every process the command starts, sees its load."""
    decoy = to_windows_path(decoy_cudnn_dir / "cudnn64_8.dll")
    code, report, err = _verify_run(app_python, packed.dist,
                                    _script(packed, "child.py", CHILD), decoy)
    assert code == 1 and report["exit_code"] == 0, (report, err)
    [parent] = report["processes"]
    children = [p for p in report["traced_processes"] if p != parent]
    assert children and [f.lower() for f in report["foreign"]] == [
        f"{children[0]}: {decoy}".lower()], report

TREE = '''\
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
time.sleep(120)
'''


def test_a_timeout_kills_every_process_the_debugger_saw(
        packed: Workspace, app_python: WindowsPython) -> None:
    app_python.start_server()
    _script(packed, "tree.py", TREE)
    started = time.monotonic()
    done = _bundler(["verify", "--run", str(packed.dist), "--json", "--timeout", "8", "--",
                     "wine", str(app_python.python_exe), "tree.py"], app_python.environ())
    report = json.loads(done.stdout)
    assert done.returncode == 1 and report["timed_out"] and report["traced"], report
    assert time.monotonic() - started < 90
    [said] = [p for p in report["problems"] if p.startswith("timed out: ")]
    killed = said.rsplit("(", 1)[1].rstrip(")").split(", ")
    assert len(killed) == 2, said   # the command's python.exe and the one it started


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
             standin_toolkit: Path, standin_framework: Path) -> Path:
    """A Windows embedded-python bundle (its own python/python.exe), no requirements."""
    root = tmp_path_factory.mktemp("embedded-verify")
    spec = embedded_workspace(root, standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit},
                              extra_app='python = "3.11"\n')
    return pack(load_spec(spec), environ=bundler_cache(root / "cache")).out


def _bundler(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = ":".join(filter(None, (str(PROJECT_ROOT), env.get("PYTHONPATH"))))
    return subprocess.run([sys.executable, "-m", "bundler", *args],
                          env={**env, "PYTHONPATH": path}, capture_output=True, text=True,
                          check=False, timeout=300)


def test_a_windows_bundle_runs_import_only_under_wine_by_default(
        embedded: Path, app_python: WindowsPython) -> None:
    app_python.start_server()
    done = _bundler(["verify", "--run", str(embedded), "--timeout", "240"],
                    app_python.environ())
    assert done.returncode == 0, done.stderr
    assert "process(es) of" in done.stdout and "(its entry, import-only; traced)" in \
        done.stdout, done.stdout


def test_without_wine_a_windows_bundle_is_refused_with_a_hint(embedded: Path) -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    if shutil.which("wine", path=env["PATH"]):
        pytest.skip("wine beside this Python")
    done = _bundler(["verify", "--run", str(embedded)], env)
    assert done.returncode == 2
    assert "a Windows bundle runs on this machine under Wine, and Wine is not installed" in \
        done.stderr and "install Wine" in done.stderr
