"""`bundler doctor APPDIR` of a Linux bundle on Linux, as a process: it lists every
bundled library (a Linux bundle's files are ELF, not *.dll), says how the bootstrap
loads them (absolute path, the manifest's order) and names, for each, the copy
LD_LIBRARY_PATH would give a bare-name load without the bootstrap (the decoys of
tests/linux/test_linux_bundle.py first on LD_LIBRARY_PATH). A Linux bundle and a
Windows bundle are judged by the same code path (issue 40 item 2)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.diagnose.doctor import bundle_checks, bundle_view, examine_bundle
from bundler.targets.registry import platform_for
from tests.harness.packing import Workspace, own_environ, run_cli
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.linux.test_linux_bootstrap_stops import _bundle
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

pytestmark = linux_with_gcc


def test_doctor_of_a_linux_bundle_explains_how_each_library_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, decoys = _bundle(tmp_path, capsys)
    env = {**own_environ(), "PATH": os.environ.get("PATH", ""), "LD_LIBRARY_PATH": str(decoys)}
    done = subprocess.run([sys.executable, "-m", "bundler", "doctor", str(app), "--json"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert sorted(d["facts"]["name"] for d in report["dlls"]) == ["libcudnn.so.9",
                                                                  "libcudnn_graph.so.9"]
    messages = [f["message"] for f in report["findings"]]
    assert ("the bootstrap loads the 2 bundled libraries by absolute path, dependencies first "
            "(libcudnn_graph.so.9, libcudnn.so.9), before the app's imports: a later load by "
            "name (cuDNN's of its sub-libraries) gets these whatever LD_LIBRARY_PATH holds; the "
            "bootstrap never reads or writes LD_LIBRARY_PATH") in messages
    # As a Windows bundle's DLLs: the decoy graph (another build) is a problem, the decoy
    # shim (the same bytes) a note.
    problems = [f["message"] for f in report["findings"] if f["level"] == "problem"]
    graph = decoys / "libcudnn_graph.so.9"
    assert any(m.startswith(f"a process that skips the bootstrap would load {graph} "
                            "(LD_LIBRARY_PATH[1]") and m.endswith("not the bundled "
                                                                  "libcudnn_graph.so.9")
               for m in problems), problems
    assert any(m.startswith(f"{decoys / 'libcudnn.so.9'} (LD_LIBRARY_PATH[1]") and
               m.endswith("is identical to the bundled libcudnn.so.9") for m in messages)
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):   # read as ELF, not as a DLL
        assert any(m.startswith(f"{name} would load (X86_64;") for m in messages), messages


def test_a_linux_and_a_windows_bundle_are_judged_by_the_same_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        standin_workspace: Workspace) -> None:
    """One examine_bundle for both: each bundle's platform's bare-name search finds the
    decoy on that platform's search variable, the same finding names it, the same
    preload finding says how the bootstrap loads, and the JSON has the same keys."""
    linux_app, decoys = _bundle(tmp_path / "linux", capsys)
    code, _, err = run_cli(capsys, "pack", standin_workspace.spec)
    assert code == 0, err
    windows_app = standin_workspace.dist
    dll_decoys = tmp_path / "dll-decoys"
    dll_decoys.mkdir()
    shutil.copy(PROJECT_ROOT / "examples/quickstart/standin-cuda/v10.1/bin/cudart64_101.dll",
                dll_decoys / "cudnn64_8.dll")
    searched, preloaded = [], []
    reached, preload = bundle_checks.reached_copies, bundle_checks.preload_findings
    monkeypatch.setattr(bundle_checks, "reached_copies", lambda platform, *rest: (
        searched.append(platform.name), reached(platform, *rest))[1])
    monkeypatch.setattr(bundle_checks, "preload_findings", lambda platform, *rest: (
        preloaded.append(platform.name), preload(platform, *rest))[1])
    environ = {"PATH": str(dll_decoys), "LD_LIBRARY_PATH": str(decoys)}
    reports = [examine_bundle(app, environ) for app in (windows_app, linux_app)]
    assert [r.platform for r in reports] == ["win-amd64", "linux-x86_64"]
    assert set(searched) == set(preloaded) == {"win-amd64", "linux-x86_64"}
    views = [bundle_view(r, platform_for(r.platform)) for r in reports]
    assert set(views[0]) == set(views[1]) and views[0]["schema"] == 2
    assert set(views[0]["driver"]) == set(views[1]["driver"])
    for report, decoy in zip(reports, (dll_decoys / "cudnn64_8.dll",
                                       decoys / "libcudnn_graph.so.9"), strict=True):
        platform = platform_for(report.platform)
        problems = [f.message for f in report.findings if f.level == "problem"]
        assert any(m.startswith(f"a process that skips the bootstrap would load {decoy} "
                                f"({platform.search_path_variable}[1]") for m in problems), problems
        assert any(f.message.startswith("the bootstrap loads the ") and
                   f.message.endswith(f"the bootstrap never reads or writes "
                                      f"{platform.search_path_variable}")
                   for f in report.findings)
