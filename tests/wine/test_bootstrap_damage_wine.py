"""A packed app whose bundle was damaged after the pack stops with the bootstrap's own
message, never an AttributeError or a FileNotFoundError from its insides:

- a manifest that is valid JSON of another shape (`"load_order": [1]`, `"versions": "x"`);
- a deleted (or quarantined) `_cudnn_bootstrap.py`: the lines added to the entry script
  say in one line that the bundle is incomplete and what to do.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bundler.cli import main
from bundler.runtime import common as bootstrap
from tests.harness.packing import Workspace, make_workspace, own_copy
from tests.harness.winenv import WindowsPython, require_wine

# (key, a value of another shape, what the message says the key must be)
OTHER_SHAPES = [
    ("load_order", [1], "a list of strings"),
    ("load_order", ["cudnn/cudnn64_8.dll", None], "a list of strings"),
    ("versions", "x", "an object of strings"),
    ("versions", {"cuda": 10.1}, "an object of strings"),
    ("files", {"cudnn64_8.dll": 1}, "a list of objects"),
    ("files", ["cudnn64_8.dll"], "a list of objects"),
    ("recipe", ["cudnn"], "an object of strings"),
]
SHAPE_IDS = [f"{key}={json.dumps(value)}" for key, value, _ in OTHER_SHAPES]


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path) -> Workspace:
    workspace = make_workspace(tmp_path_factory.mktemp("ws"), standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    assert main(["pack", str(workspace.spec)]) == 0
    return workspace


def with_manifest_value(bundle: Path, key: str, value: Any) -> Path:
    path = bundle / "cudnn" / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data[key] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("key, value, shape", OTHER_SHAPES, ids=SHAPE_IDS)
def test_the_bootstrap_reader_names_a_key_of_another_shape(
        packed: Workspace, tmp_path: Path, key: str, value: Any, shape: str) -> None:
    path = with_manifest_value(own_copy(packed.dist, tmp_path), key, value)
    with pytest.raises(bootstrap.BundledRuntimeError,
                       match=f"is damaged: '{key}' must be {shape}; restore it, or re-run"):
        bootstrap.read_manifest(str(path))


def test_a_file_entry_without_a_path_is_damaged(packed: Workspace, tmp_path: Path) -> None:
    path = with_manifest_value(own_copy(packed.dist, tmp_path), "files", [{"name": "x.dll"}])
    with pytest.raises(bootstrap.BundledRuntimeError, match="must have a 'path' string"):
        bootstrap.read_manifest(str(path))


@pytest.mark.parametrize("key, value, shape", [OTHER_SHAPES[0], OTHER_SHAPES[2]],
                         ids=[SHAPE_IDS[0], SHAPE_IDS[2]])
def test_a_manifest_of_another_shape_stops_the_app_with_the_bootstraps_message(
        packed: Workspace, win_python: WindowsPython, tmp_path: Path, key: str, value: Any,
        shape: str) -> None:
    require_wine()
    app = own_copy(packed.dist, tmp_path)
    with_manifest_value(app, key, value)
    done = win_python.run([app / "main.py"], cwd=app)
    assert done.returncode != 0
    assert done.stdout == ""   # the app's own code never ran
    assert "cuDNN runtime error: bundled runtime manifest " in done.stderr
    assert "Traceback" not in done.stderr
    assert f"is damaged: '{key}' must be {shape}" in done.stderr
    assert "AttributeError" not in done.stderr


def run_host(app: Path) -> subprocess.CompletedProcess[str]:
    """The packed entry under this machine's Python: the added lines run the same way
    (off Windows the bootstrap itself does nothing)."""
    return subprocess.run([sys.executable, str(app / "main.py")], cwd=app,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("python", ["windows", "host"])
def test_a_deleted_bootstrap_is_one_line_saying_the_bundle_is_incomplete(
        packed: Workspace, win_python: WindowsPython, tmp_path: Path, python: str) -> None:
    app = own_copy(packed.dist, tmp_path)
    (app / "_cudnn_bootstrap.py").unlink()
    if python == "windows":
        require_wine()
        done = win_python.run([app / "main.py"], cwd=app)
    else:
        done = run_host(app)
    assert done.returncode == 1
    assert done.stdout == ""   # the app's own code never ran
    lines = [line for line in done.stderr.splitlines()   # less Wine's own chatter
             if not line.startswith("wine:") and ":fixme:" not in line and ":err:" not in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("this app's bundle is incomplete: ")
    assert "_cudnn_bootstrap.py is missing" in lines[0] and "bundler verify" in lines[0]


def test_a_missing_runtime_dll_stops_the_app_with_one_message_and_no_traceback(
        packed: Workspace, win_python: WindowsPython, tmp_path: Path) -> None:
    """The message names the file and the fix; a traceback through the lines added to
    the entry script would only bury it. The exit status says the app failed."""
    require_wine()
    app = own_copy(packed.dist, tmp_path)
    (app / "cudnn" / "cudnn_cnn_infer64_8.dll").unlink()   # "quarantined"
    done = win_python.run([app / "main.py"], cwd=app)
    assert done.returncode == 1
    assert done.stdout == ""   # the app's own code never ran
    lines = [line for line in done.stderr.splitlines()   # less Wine's own chatter
             if not line.startswith("wine:") and ":fixme:" not in line and ":err:" not in line
             and not line.startswith("cuDNN runtime warning: no NVIDIA driver")]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("cuDNN runtime error: bundled runtime file "
                               "cudnn/cudnn_cnn_infer64_8.dll is missing from "), lines
    assert lines[0].endswith("restore it, or re-run `bundler pack` to rebuild the app")
