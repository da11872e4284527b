"""`bundler verify --run` on a Windows bundle, for real under Wine (issue 27, item 5).

The packed stand-in app runs in the Windows CPython under Wine; the bootstrap lists the
process's modules with EnumProcessModules/GetModuleFileNameW as the process exits, and
verify judges them: the clean case (every cuDNN/CUDA DLL the bundle's), a decoy
cudnn64_8.dll loaded before the bootstrap (the bootstrap stops the app: no process seen,
so verify fails), and a second copy the app loads itself by absolute path after the
bootstrap ran (one DLL name from two files).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, bundler_cli, make_workspace
from tests.harness.winenv import WindowsPython, to_windows_path
from tests.harness.winenv.paths import PROJECT_ROOT

# The decoy's cudnn64_8.dll loaded by absolute path before the bootstrap, as a framework
# imported first does; then the packed entry.
DECOY_FIRST = '''\
import ctypes, os, runpy, sys
ctypes.CDLL(sys.argv[1])
runpy.run_path("main.py", run_name="__main__")
'''
# The packed entry (the bootstrap first), then a second cuDNN by absolute path, as JAX's
# plugin and onnxruntime's preload_dlls() do with site-packages/nvidia.
SECOND_COPY = '''\
import ctypes, os, runpy, sys
runpy.run_path("main.py", run_name="__main__")
ctypes.CDLL(sys.argv[1])
'''


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path) -> Workspace:
    workspace = make_workspace(tmp_path_factory.mktemp("ws"), standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    for name, text in (("decoy_first.py", DECOY_FIRST), ("second_copy.py", SECOND_COPY)):
        (workspace.root / "app" / name).write_text(text)
    assert bundler_cli("pack", workspace.spec).returncode == 0
    return workspace


def _verify_run(python: WindowsPython, app: Path, *args: object) -> tuple[int, dict, str]:
    """`bundler verify --run APP --json -- wine python.exe ARGS` in Wine's environment."""
    python.start_server()
    environment = python.environ()
    path = ":".join(filter(None, (str(PROJECT_ROOT),
                                  environment.get("PYTHONPATH"))))
    done = subprocess.run([sys.executable, "-m", "bundler", "verify", "--run", str(app),
                           "--json", "--timeout", "240", "--", "wine", str(python.python_exe),
                           *map(str, args)], env={**environment, "PYTHONPATH": path},
                          capture_output=True, text=True, check=False, timeout=300)
    return done.returncode, json.loads(done.stdout), done.stderr


def _in_bundle(app: Path, module: dict) -> bool:
    return module["path"].lower().startswith(to_windows_path(app).lower() + "\\")


def test_verify_run_passes_the_clean_app_under_wine(
        packed: Workspace, app_python: WindowsPython) -> None:
    code, report, err = _verify_run(app_python, packed.dist, "main.py")
    assert code == 0, (report, err)
    assert report["ok"] and len(report["processes"]) == 1
    names = sorted(m["name"].lower() for m in report["modules"])
    assert "cudnn64_8.dll" in names and "cudart64_101.dll" in names, names
    assert len(names) == len(set(names))
    assert all(m["from_bundle"] and _in_bundle(packed.dist, m) for m in report["modules"])


def test_verify_run_fails_on_a_decoy_loaded_before_the_bootstrap(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path) -> None:
    code, report, _ = _verify_run(app_python, packed.dist, "decoy_first.py",
                                  to_windows_path(decoy_cudnn_dir / "cudnn64_8.dll"))
    assert code == 1 and report["processes"] == [] and not report["ok"]
    assert ("another cudnn64_8.dll is already loaded from " + to_windows_path(
        decoy_cudnn_dir / "cudnn64_8.dll").lower()) in report["output"][-1].lower(), report


def test_verify_run_fails_on_a_second_copy_loaded_by_absolute_path(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path) -> None:
    decoy = to_windows_path(decoy_cudnn_dir / "cudnn_ops_infer64_8.dll")
    code, report, err = _verify_run(app_python, packed.dist, "second_copy.py", decoy)
    assert code == 1 and report["exit_code"] == 0, (report, err)
    pid = report["processes"][0]
    [doubled] = report["doubled"]
    assert doubled.lower().startswith(f"{pid}: cudnn_ops_infer64_8.dll: ")
    assert decoy.lower() in doubled.lower()
    assert to_windows_path(packed.dist / "cudnn" / "cudnn_ops_infer64_8.dll").lower() in \
        doubled.lower()
    assert [f.lower() for f in report["foreign"]] == [f"{pid}: {decoy}".lower()]
