"""Issue 2, end to end: pack a folder app from a Deflate64 NVIDIA-layout zip and a
CUDA toolkit folder (stand-in DLLs built by mingw), then run it under Wine with the
official Windows CPython (embeddable: its ._pth keeps the script folder off sys.path).
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import (
    Workspace,
    bundler_cli,
    make_workspace,
    own_copy,
    own_environ,
    run_cli,
    snapshot,
)
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.build import build_runtime, make_nvidia_zip, make_toolkit
from tests.harness.winenv.paths import RECIPES
from tests.harness.winenv.winpython import to_windows_path


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path, standin_toolkit: Path,
           standin_framework: Path) -> Workspace:
    workspace = make_workspace(tmp_path_factory.mktemp("ws"), standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    assert bundler_cli("pack", workspace.spec).returncode == 0
    return workspace


def run_app(python: WindowsPython, main: Path, decoy: Path, *args: str) -> list[dict]:
    result = python.run([main, *args], path_dirs=[decoy], timeout=120)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_bundle_layout_and_manifest(packed: Workspace) -> None:
    dist = packed.dist
    runtime = sorted(p.name for p in (dist / "cudnn").iterdir())
    assert runtime == sorted([
        "cudart64_101.dll", "cublas64_10.dll", "cublasLt64_10.dll", "cudnn64_8.dll",
        "cudnn_ops_infer64_8.dll", "cudnn_ops_train64_8.dll", "cudnn_cnn_infer64_8.dll",
        "cudnn_cnn_train64_8.dll", "cudnn_adv_infer64_8.dll", "cudnn_adv_train64_8.dll",
        "NVIDIA_SLA_cuDNN_Support.txt", "manifest.json"])
    assert (dist / "_cudnn_bootstrap.py").is_file()
    manifest = json.loads((dist / "cudnn" / "manifest.json").read_text())
    assert manifest["versions"] == {"cudnn": "8.0.3.33", "cuda": "10.1", "min_driver": "418.96"}
    order = [Path(p).name for p in manifest["load_order"]]
    # dependencies first: the CUDA runtime, cuBLAS(Lt), the shim, then its sub-libraries
    assert order.index("cudart64_101.dll") < order.index("cublasLt64_10.dll")
    assert order.index("cublasLt64_10.dll") < order.index("cublas64_10.dll")
    assert order.index("cublas64_10.dll") < order.index("cudnn_ops_infer64_8.dll")
    assert order.index("cudnn64_8.dll") < order.index("cudnn_ops_infer64_8.dll")
    assert order.index("cudnn_ops_infer64_8.dll") < order.index("cudnn_cnn_infer64_8.dll")
    shim = next(f for f in manifest["files"] if f["path"] == "cudnn/cudnn64_8.dll")
    assert (shim["machine"], shim["version"], shim["component"], shim["source"]) == (
        "AMD64", "8.0.3.33", "core", "cudnn")
    assert not any(f["path"].endswith((".h", ".lib")) for f in manifest["files"])
    lock = json.loads(packed.spec.with_name("app.spec.lock").read_text())
    assert set(lock["files"]) == {f["path"] for f in manifest["files"]}


def test_pack_is_deterministic(packed: Workspace, tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert bundler_cli("pack", packed.spec, "--out", again).returncode == 0
    assert snapshot(again) == snapshot(packed.dist)


def test_bundled_app_loads_its_own_cudnn_despite_a_decoy_on_path(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    # Unbundled, the framework's bare-name load finds the decoy on PATH ...
    unbundled = run_app(app_python, packed.root / "app" / "main.py", decoy_cudnn_dir)[0]
    assert unbundled["version"] == 7605
    assert unbundled["path"].lower().startswith(to_windows_path(decoy_cudnn_dir).lower())
    # ... packed, it gets the bundled copy, and PATH is what it was.
    dist = own_copy(packed.dist, tmp_path)
    bundled = run_app(app_python, dist / "main.py", decoy_cudnn_dir)[0]
    assert bundled["version"] == 8003
    expected = to_windows_path(dist / "cudnn" / "cudnn64_8.dll")
    assert bundled["path"].lower() == expected.lower()
    assert bundled["PATH"] == unbundled["PATH"]
    assert to_windows_path(decoy_cudnn_dir).lower() in bundled["PATH"].lower()


def test_report_names_versions_and_load_paths(packed: Workspace, app_python: WindowsPython,
                                              tmp_path: Path) -> None:
    dist = own_copy(packed.dist, tmp_path)
    result = app_python.run([dist / "_cudnn_bootstrap.py"], timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["versions"]["cudnn"] == "8.0.3.33"
    loaded = {Path(d["file"]).name: d for d in report["libraries"]}
    assert loaded["cudnn64_8.dll"]["version"] == "8.0.3.33"
    assert loaded["cudnn64_8.dll"]["loaded_from"].lower() == to_windows_path(
        dist / "cudnn" / "cudnn64_8.dll").lower()
    assert len(loaded) == 10


def test_two_apps_with_different_runtimes_run_at_once(
        packed: Workspace, app_python: WindowsPython, standin_framework: Path,
        decoy_cudnn_dir: Path, tmp_path: Path) -> None:
    other_dlls = build_runtime(tmp_path / "dlls-8.0.5", cudnn_version=(8, 0, 5, 39)).dir
    recipe = tmp_path / "cudnn-8.0.5.39-cuda10.1-test.toml"
    recipe.write_text((RECIPES / "cudnn-8.0.3.33-cuda10.1-win-x64.toml").read_text()
                      .replace("8.0.3.33", "8.0.5.39")
                      .replace("cudnn_get_version = 8003", "cudnn_get_version = 8005"))
    other = make_workspace(
        tmp_path / "other", standin_framework,
        {"cudnn": make_nvidia_zip(other_dlls, tmp_path / "cudnn-8.0.5.zip", "deflate",
                                  cudnn_version=(8, 0, 5, 39)),
         "cuda": make_toolkit(other_dlls, tmp_path / "cuda-other")},
        recipe=recipe.as_posix())
    assert bundler_cli("pack", other.spec).returncode == 0

    flags = [tmp_path / "first.loaded", tmp_path / "second.loaded"]
    dist = own_copy(packed.dist, tmp_path)
    runs = ((dist, flags[0], flags[1]), (other.dist, flags[1], flags[0]))
    with ThreadPoolExecutor(max_workers=2) as pool:  # both at once, through the harness
        outputs = list(pool.map(lambda run: app_python.run(
            [run[0] / "main.py", run[1], run[2]], path_dirs=[decoy_cudnn_dir]), runs))
    results = [[json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
               for out in outputs]
    assert [r[0]["version"] for r in results] == [8003, 8005], outputs
    assert all(r[1]["other_seen"] for r in results)  # both were running together
    assert results[1][0]["path"].lower().startswith(to_windows_path(other.dist).lower())


def test_deleted_dll_is_named_by_verify_and_by_the_app(
        packed: Workspace, app_python: WindowsPython, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(packed.dist, broken)
    (broken / "cudnn" / "cudnn_cnn_infer64_8.dll").unlink()  # "quarantined"
    code, out, err = run_cli(capsys, "verify", broken)
    assert code == 1
    assert "missing: cudnn/cudnn_cnn_infer64_8.dll" in out
    result = app_python.run([broken / "main.py"], timeout=120)
    assert result.returncode != 0
    assert "cudnn/cudnn_cnn_infer64_8.dll is missing" in result.stderr
    assert "bundler pack" in result.stderr
    assert '"version"' not in result.stdout  # the app stopped before its own code


def test_changed_and_unexpected_files_are_named_by_verify(
        packed: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(packed.dist, copy)
    with open(copy / "cudnn" / "cublas64_10.dll", "ab") as handle:
        handle.write(b"\0")
    (copy / "cudnn" / "stray.dll").write_bytes(b"MZ")
    code, out, _ = run_cli(capsys, "verify", copy, "--json")
    report = json.loads(out)
    assert code == 1
    assert report["changed"] == ["cudnn/cublas64_10.dll"]
    assert report["unexpected"] == ["cudnn/stray.dll"]
    assert run_cli(capsys, "verify", packed.dist)[0] == 0


LATE_BOOTSTRAP = '''\
import ctypes, importlib.util, os, sys
here = os.path.dirname(os.path.abspath(__file__))
# The framework is imported before the bootstrap: it loads the decoy from PATH.
ctypes.CDLL(os.path.join(here, "framework.dll")).framework_cudnn_version()
spec = importlib.util.spec_from_file_location("_cudnn_bootstrap",
                                              os.path.join(here, "_cudnn_bootstrap.py"))
spec.loader.exec_module(importlib.util.module_from_spec(spec))
'''


def test_bootstrap_after_framework_names_both_dlls(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    late = tmp_path / "late"
    shutil.copytree(packed.dist, late)
    (late / "late.py").write_text(LATE_BOOTSTRAP)
    result = app_python.run([late / "late.py"], path_dirs=[decoy_cudnn_dir], timeout=120)
    assert result.returncode != 0
    message = result.stderr.lower()
    assert "another cudnn64_8.dll is already loaded from " + to_windows_path(
        decoy_cudnn_dir / "cudnn64_8.dll").lower() in message
    assert to_windows_path(late / "cudnn" / "cudnn64_8.dll").lower() in message


def test_a_dll_that_fails_to_load_gives_the_windows_error(
        packed: Workspace, app_python: WindowsPython, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged"
    shutil.copytree(packed.dist, damaged)
    (damaged / "cudnn" / "cublas64_10.dll").write_bytes(b"MZ" + b"\0" * 4094)
    result = app_python.run([damaged / "main.py"], timeout=120)
    assert result.returncode != 0
    assert "cannot load bundled runtime file cudnn/cublas64_10.dll" in result.stderr
    assert "Windows error 193" in result.stderr
    assert "bundler pack" in result.stderr


def test_toolkit_is_found_through_cuda_path_variables(
        packed: Workspace, standin_zip: Path, standin_toolkit: Path, tmp_path: Path) -> None:
    spec_path = tmp_path / "app.spec"
    spec_path.write_text(packed.spec.read_text().replace(
        f'cuda = "{standin_toolkit.as_posix()}"', ""))
    shutil.copytree(packed.root / "app", tmp_path / "app")
    spec = load_spec(spec_path)
    assert "cuda" not in spec.sources
    # CUDA_PATH points at another CUDA; CUDA_PATH_V10_1 is tried first and wins.
    result = pack(spec, environ={**own_environ(), "CUDA_PATH_V10_1": str(standin_toolkit),
                                 "CUDA_PATH": str(tmp_path / "v11.8")})
    assert (result.out / "cudnn" / "cudart64_101.dll").is_file()
    with pytest.raises(SourceError) as caught:
        pack(spec, environ={**own_environ(), "CUDA_PATH": str(tmp_path)})
    assert "from CUDA_PATH" in caught.value.message
    assert "bin/cudart64_101.dll" in caught.value.message
    with pytest.raises(SourceError, match="CUDA_PATH_V10_1/CUDA_PATH are unset"):
        pack(spec, environ=own_environ())


RETRY = '''\
import importlib.util, json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
runtime = os.path.join(here, "cudnn")
spec = importlib.util.spec_from_file_location("_cudnn_bootstrap",
                                              os.path.join(here, "_cudnn_bootstrap.py"))
bootstrap = importlib.util.module_from_spec(spec)
try:
    spec.loader.exec_module(bootstrap)
except ImportError as exc:
    print(exc, file=sys.stderr)
first = bootstrap._dll_directory
os.rename(os.path.join(runtime, "held.dll"), os.path.join(runtime, "cudnn_cnn_infer64_8.dll"))
bootstrap.activate()
print(json.dumps({"same_dll_directory": bootstrap._dll_directory is first,
                  "loaded": len(bootstrap.report()["libraries"])}))
'''


def test_activate_again_after_a_failure_keeps_its_dll_directory(
        packed: Workspace, app_python: WindowsPython, tmp_path: Path) -> None:
    """The file comes back (restored from quarantine) and the app calls activate()
    again: it loads everything, and keeps the folder it registered the first time
    instead of adding it a second time and dropping the first handle unclosed."""
    app = tmp_path / "retry"
    shutil.copytree(packed.dist, app)
    (app / "cudnn" / "cudnn_cnn_infer64_8.dll").rename(app / "cudnn" / "held.dll")
    (app / "retry.py").write_text(RETRY)
    result = app_python.run([app / "retry.py"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cudnn/cudnn_cnn_infer64_8.dll is missing" in result.stderr
    # _dll_directory is the bootstrap's own state: no public name tells it.
    assert json.loads(result.stdout.splitlines()[-1]) == {"same_dll_directory": True,
                                                          "loaded": 10}


def test_an_entry_in_a_subfolder_finds_the_bootstrap(
        packed: Workspace, app_python: WindowsPython, decoy_cudnn_dir: Path,
        tmp_path: Path) -> None:
    root = tmp_path / "nested"
    shutil.copytree(packed.root / "app", root / "app" / "src")
    spec = root / "app.spec"
    spec.write_text(packed.spec.read_text().replace('entry = "main.py"',
                                                    'entry = "src\\\\main.py"'))
    assert bundler_cli("pack", spec).returncode == 0
    result = run_app(app_python, root / "dist" / "app" / "src" / "main.py", decoy_cudnn_dir)[0]
    assert result["version"] == 8003
    assert result["path"].lower() == to_windows_path(
        root / "dist" / "app" / "cudnn" / "cudnn64_8.dll").lower()


def test_bundles_linked_to_the_store_load_verify_and_pass_doctor(
        app_python: WindowsPython, win_python: WindowsPython, tmp_path: Path,
        standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        decoy_cudnn_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two apps share one runtime through the store: their DLLs are one file on disk,
    and Windows loads them as any other; --copy gives an app its own files again."""
    sources = {"cudnn": standin_zip, "cuda": standin_toolkit}
    first, second = (make_workspace(tmp_path / name, standin_framework, sources)
                     for name in ("first", "second"))
    pack(load_spec(first.spec))
    result = pack(load_spec(second.spec))
    assert result.origin.files == {"store": len(result.manifest.files)}
    dlls = sorted(p.name for p in (second.dist / "cudnn").glob("*.dll"))
    assert all((first.dist / "cudnn" / n).samefile(second.dist / "cudnn" / n) for n in dlls)
    bundled = run_app(app_python, second.dist / "main.py", decoy_cudnn_dir)[0]
    assert bundled["version"] == 8003
    assert bundled["path"].lower() == to_windows_path(
        second.dist / "cudnn" / "cudnn64_8.dll").lower()
    assert run_cli(capsys, "verify", second.dist)[0] == 0
    doctor = json.loads(win_python.run(["-m", "bundler", "doctor", second.dist, "--json"]
                                       ).stdout)
    assert [f for f in doctor["findings"] if f["about"] == "bundle"
            and f["level"] == "problem"] == []
    assert doctor["verify"]["ok"] is True
    pack(load_spec(first.spec), copy=True)
    assert all((first.dist / "cudnn" / n).stat().st_nlink == 1 for n in dlls)
    assert run_app(app_python, first.dist / "main.py", decoy_cudnn_dir)[0]["version"] == 8003
