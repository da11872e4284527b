"""`bundler doctor APPDIR` of a Linux bundle on Linux, as a process: it lists every
bundled library (a Linux bundle's files are ELF, not *.dll), says how the bootstrap
loads them (absolute path, RTLD_GLOBAL, the manifest's order) and names, for each, the
copy LD_LIBRARY_PATH would give a bare-name load without the bootstrap (the decoys of
tests/linux/test_linux_bundle.py first on LD_LIBRARY_PATH)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import own_environ
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
    assert ("the bootstrap loads the 2 bundled libraries by absolute path with RTLD_GLOBAL, "
            "dependencies first (libcudnn_graph.so.9, libcudnn.so.9), before the app's "
            "imports: a later dlopen by SONAME (cuDNN's of its sub-libraries) gets these "
            "whatever LD_LIBRARY_PATH holds; the bootstrap never reads or writes it") in messages
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):
        assert (f"without the bootstrap, a bare-name load of {name} would get "
                f"{decoys / name} (LD_LIBRARY_PATH[1]), not the bundled {app / 'cudnn' / name}: "
                "the bootstrap's preload by absolute path is what keeps it out") in messages
    for name in ("libcudnn.so.9", "libcudnn_graph.so.9"):   # read as ELF, not as a DLL
        assert any(m.startswith(f"{name} would load (X86_64;") for m in messages), messages
