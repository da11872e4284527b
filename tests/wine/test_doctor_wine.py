"""`bundler doctor`, `bundler inspect` and the bootstrap's driver check, for real:
the Windows CPython under Wine runs bundler and the bundled apps, with stand-in
DLLs built by mingw. Wine has no nvcuda.dll, which plays a machine without the
NVIDIA driver; stand-in nvcuda.dlls with NVIDIA's version numbering play drivers
411.31 (CUDA 10.0), 451.48 (11.0), 516.01 (11.7) and 531.14 (12.1).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import SEED, make_workspace, own_copy, own_environ
from tests.harness.winenv import to_windows_path
from tests.harness.winenv.build import build_dll, build_nvcuda, nvcuda_spec
from tests.harness.winenv.paths import PROJECT_ROOT

SUBLIBS = ("cudnn_ops_infer64_8.dll", "cudnn_ops_train64_8.dll", "cudnn_cnn_infer64_8.dll",
           "cudnn_cnn_train64_8.dll", "cudnn_adv_infer64_8.dll", "cudnn_adv_train64_8.dll")

# The entry of the bundled app: activating twice and importing twice must still
# print the driver warning once; it then reports what the bootstrap found.
MAIN = '''import json
import _cudnn_bootstrap
_cudnn_bootstrap.activate()
import _cudnn_bootstrap as again
again.activate()
print("app running")
print(json.dumps(again.report()))
'''


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory, standin_framework: Path,
            standin_zip: Path, standin_toolkit: Path) -> dict[str, Path]:
    """Two packed folder apps: the default (warn) and one with require_driver = true."""
    packed = {}
    for name, extra in (("warn", ""), ("require", "require_driver = true\n")):
        workspace = make_workspace(tmp_path_factory.mktemp(f"doctor-{name}"), standin_framework,
                                   {"cudnn": standin_zip, "cuda": standin_toolkit},
                                   extra_runtime=extra)
        (workspace.root / "app" / "main.py").write_text(MAIN)
        packed[name] = pack(load_spec(workspace.spec), environ=own_environ()).out
    return packed


@pytest.fixture(scope="module")
def old_driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a stand-in nvcuda.dll whose cuDriverGetVersion says 10000."""
    return build_nvcuda(tmp_path_factory.mktemp("old-driver"), 10000).parent


@pytest.fixture(scope="module")
def cuda_path_with_cudnn(tmp_path_factory: pytest.TempPathFactory, standin_toolkit: Path,
                         standin_runtime) -> Path:
    """A CUDA 10.1 toolkit with cuDNN copied into its bin, as the usual instructions say."""
    toolkit = tmp_path_factory.mktemp("cuda-path") / "v10.1"
    shutil.copytree(standin_toolkit, toolkit)
    for dll in standin_runtime.cudnn_files:
        shutil.copy2(dll, toolkit / "bin" / dll.name)
    return toolkit


def _lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_doctor_names_both_cudnn_copies_the_winner_and_the_missing_driver(
        win_python, decoy_cudnn_dir: Path, cuda_path_with_cudnn: Path,
        standin_cudnn_x86: Path) -> None:
    decoy, toolkit_bin = to_windows_path(decoy_cudnn_dir), to_windows_path(
        cuda_path_with_cudnn / "bin")
    x86 = to_windows_path(standin_cudnn_x86.parent)
    env = {"CUDA_PATH": to_windows_path(cuda_path_with_cudnn),
           "CUDA_PATH_V10_1": to_windows_path(cuda_path_with_cudnn)}
    text = win_python.run(["-m", "bundler", "doctor"], path_dirs=[decoy_cudnn_dir,
                          standin_cudnn_x86.parent], env=env)
    assert text.returncode == 1, text.stdout + text.stderr
    [problem] = _lines_with(text.stdout, "cudnn64_8.dll: 3 different copies")
    assert f"a bare-name load picks {decoy}\\cudnn64_8.dll (PATH[1], version 7.6.5.32)" \
        in problem
    assert f"it shadows: {x86}\\cudnn64_8.dll (PATH[2], version 8.0.3.33)" in problem
    assert (f"not searched: {toolkit_bin}\\cudnn64_8.dll (CUDA_PATH, "
            "CUDA_PATH_V10_1, version 8.0.3.33)") in problem
    assert _lines_with(text.stdout, f"{x86}\\cudnn64_8.dll is a 32-bit (I386) DLL")
    assert _lines_with(text.stdout, "no NVIDIA driver: nvcuda.dll cannot be loaded")
    # cudnn64_8.dll, the decoy's ops_infer, the 32-bit DLL, the driver.
    assert "4 problem(s) found." in text.stdout

    as_json = win_python.run(["-m", "bundler", "doctor", "--json"],
                             path_dirs=[decoy_cudnn_dir], env=env)
    assert as_json.returncode == 1, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["ok"] is False and report["schema"] == 2
    assert report["libraries"] == report["dlls"]   # dlls: libraries' deprecated alias
    cudnn = {p["path"]: (p["role"], p["version"], p["reached_as"])
             for p in report["libraries"] if p["name"].lower() == "cudnn64_8.dll"}
    assert cudnn == {f"{decoy}\\cudnn64_8.dll": ("picked", "7.6.5.32", "PATH[1]"),
                     f"{toolkit_bin}\\cudnn64_8.dll": ("not searched", "8.0.3.33",
                                                       "CUDA_PATH, CUDA_PATH_V10_1")}
    driver = report["driver"]
    assert (driver["checked"], driver["driver_library"], driver["path"],
            driver["cuda_driver_version"]) == (True, "nvcuda.dll", "", 0)
    assert [f["about"] for f in report["findings"] if f["level"] == "problem"].count(
        "driver") == 1


def test_doctor_reads_an_old_driver(win_python, old_driver: Path) -> None:
    result = win_python.run(["-m", "bundler", "doctor", "--json"], path_dirs=[old_driver])
    facts = json.loads(result.stdout)["driver"]
    assert facts["path"].lower() == f"{to_windows_path(old_driver)}\\nvcuda.dll".lower()
    assert (facts["cuda_driver_version"], facts["cuda"]) == (10000, "10.0")
    assert (facts["version"], facts["version_from"]) == (
        "411.31", "nvcuda.dll file version 25.21.14.1131")
    assert facts["cuda_by_version"] == "10.0"


def test_without_a_driver_the_app_warns_once_and_runs(win_python, bundles, tmp_path) -> None:
    app = own_copy(bundles["warn"], tmp_path)
    result = win_python.run([app / "main.py"], cwd=app)
    assert result.returncode == 0, result.stderr
    warnings = _lines_with(result.stderr, "cuDNN runtime warning:")
    assert len(warnings) == 1, result.stderr
    assert "no NVIDIA driver found (nvcuda.dll cannot be loaded" in warnings[0]
    assert "needs an NVIDIA driver >= 418.96" in warnings[0]
    assert result.stdout.splitlines()[0] == "app running"
    report = json.loads(result.stdout.splitlines()[1])
    driver = report["driver"]
    assert (driver["nvcuda"], driver["needs_cuda"], driver["min_driver"]) == ("", "10.1",
                                                                               "418.96")
    assert driver["problem"] in warnings[0]
    # It kept going: the whole runtime was preloaded from the bundle.
    assert len(report["libraries"]) == 10
    assert all(d["loaded_from"].startswith(to_windows_path(app)) for d in report["libraries"])


def test_require_driver_stops_the_app_with_the_message(win_python, bundles, tmp_path) -> None:
    app = own_copy(bundles["require"], tmp_path)
    manifest = json.loads((app / "cudnn" / "manifest.json").read_text())
    assert manifest["require_driver"] is True
    result = win_python.run([app / "main.py"], cwd=app)
    assert result.returncode != 0
    assert "app running" not in result.stdout
    assert "cuDNN runtime error: no NVIDIA driver found" in result.stderr
    assert "Traceback" not in result.stderr
    assert "cuDNN runtime warning" not in result.stderr


def test_an_old_driver_is_named_with_both_versions(win_python, bundles, old_driver,
                                                   tmp_path) -> None:
    warn, require = own_copy(bundles["warn"], tmp_path), own_copy(bundles["require"], tmp_path)
    result = win_python.run([warn / "main.py"], cwd=warn, path_dirs=[old_driver])
    assert result.returncode == 0, result.stderr
    [warning] = _lines_with(result.stderr, "cuDNN runtime warning:")
    assert "supports CUDA 10.0 (cuDriverGetVersion 10000)" in warning
    assert "this app's CUDA 10.1 runtime needs an NVIDIA driver >= 418.96" in warning
    assert json.loads(result.stdout.splitlines()[1])["driver"]["driver_cuda"] == "10.0"

    stopped = win_python.run([require / "main.py"], cwd=require, path_dirs=[old_driver])
    assert stopped.returncode != 0
    assert "supports CUDA 10.0 (cuDriverGetVersion 10000), but this app's CUDA 10.1 " \
        "runtime needs an NVIDIA driver >= 418.96" in stopped.stderr


def test_doctor_on_a_bundle(win_python, bundles, old_driver: Path,
                            decoy_cudnn_dir: Path) -> None:
    """Verified, every DLL would load, the old driver and the decoy a process
    without the bootstrap would pick are problems."""
    result = win_python.run(["-m", "bundler", "doctor", bundles["warn"], "--json"],
                            path_dirs=[old_driver, decoy_cudnn_dir])
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["verify"]["ok"] is True and report["recipe"] == SEED
    findings = [(f["level"], f["message"]) for f in report["findings"]]
    loads = [m for level, m in findings if level == "ok" and "would load" in m]
    assert len(loads) == 10, findings
    problems = [m for level, m in findings if level == "problem"]
    decoy, driver = to_windows_path(decoy_cudnn_dir), to_windows_path(old_driver)
    assert problems == [
        f"the NVIDIA driver {driver}\\nvcuda.dll (version 411.31) supports CUDA 10.0 "
        "(cuDriverGetVersion 10000), but this app's CUDA 10.1 runtime needs an NVIDIA "
        "driver >= 418.96: update the NVIDIA driver (the app warns at start-up and runs "
        "without the GPU)",
        f"a process that skips the bootstrap would load {decoy}\\cudnn64_8.dll (PATH[2], "
        "version 7.6.5.32), not the bundled cudnn64_8.dll",
        f"a process that skips the bootstrap would load {decoy}\\cudnn_ops_infer64_8.dll "
        "(PATH[2], version 7.6.5.32), not the bundled cudnn_ops_infer64_8.dll"]
    assert report["driver"]["driver_cuda"] == "10.0"

    no_driver = win_python.run(["-m", "bundler", "doctor", bundles["warn"]])
    assert no_driver.returncode == 1
    assert _lines_with(no_driver.stdout, "no NVIDIA driver found")
    assert "1 problem(s) found." in no_driver.stdout


def test_inspect_a_standin_cudnn_dll_and_the_nvidia_zip(win_python, standin_runtime,
                                                        standin_zip: Path) -> None:
    code = ("import sys\nfrom bundler.cli import main\n"
            "for path in sys.argv[1:]:\n"
            "    print(main(['inspect', '--json', path]))\n    print('\\x00')\n")
    dll = standin_runtime["cudnn64_8.dll"]
    result = win_python.run_code(code, [dll, standin_zip])
    assert result.returncode == 0, result.stderr
    dll_json, zip_json = (json.loads(part.rsplit("\n", 2)[0])
                          for part in result.stdout.split("\x00")[:2])

    [facts] = dll_json["dlls"]
    assert dll_json["kind"] == "dll"
    assert facts["name"] == "cudnn64_8.dll" and facts["path"] == to_windows_path(dll)
    assert (facts["machine"], facts["bits"]) == ("AMD64", 64)
    assert (facts["file_version"], facts["product_version"]) == ("8.0.3.33", "8.0.3.33")
    assert facts["size"] == dll.stat().st_size
    assert facts["sha256"] == hashlib.sha256(dll.read_bytes()).hexdigest()
    assert {"cudnnGetVersion", "cudnnCreate"} <= set(facts["exports"])
    deps = [(d["name"], d["how"], d["status"]) for d in facts["dependencies"]]
    assert deps == [("KERNEL32.dll", "static", "system")] + [
        (name, "runtime", "bundled") for name in SUBLIBS]

    assert zip_json["kind"] == "archive"
    assert zip_json["sha256"] == hashlib.sha256(standin_zip.read_bytes()).hexdigest()
    assert len(zip_json["members"]) == 31
    assert [(m["recipe"], m["source"], m["missing"]) for m in zip_json["matches"]] == [
        (SEED, "cudnn", [])]
    assert "contents" in zip_json["matches"][0]["by"]
    by_member = {d["member"]: d for d in zip_json["dlls"]}
    assert sorted(by_member) == sorted(f"cuda/bin/{n}" for n in ("cudnn64_8.dll", *SUBLIBS))
    ops = by_member["cuda/bin/cudnn_ops_infer64_8.dll"]
    assert ops["file_version"] == "8.0.3.33" and ops["machine"] == "AMD64"
    # The NVIDIA zip holds cuDNN only: the CUDA libraries come from the toolkit.
    from_toolkit = f"recipe {SEED} takes it from source 'cuda'"
    assert [(d["name"], d["how"], d["status"], d["note"]) for d in ops["dependencies"]] == [
        (name, "static", "missing", from_toolkit)
        for name in ("cublas64_10.dll", "cublasLt64_10.dll", "cudart64_101.dll")]
    train = {d["name"].lower(): d["status"]
             for d in by_member["cuda/bin/cudnn_ops_train64_8.dll"]["dependencies"]}
    assert train["cudnn_ops_infer64_8.dll"] == "bundled"


def test_doctor_says_which_bundled_dlls_would_not_load(win_python, bundles, tmp_path: Path,
                                                       standin_cudnn_x86: Path) -> None:
    """A quarantined cudart64_101.dll and a 32-bit cudnn64_8.dll put in its place."""
    app = tmp_path / "app"
    shutil.copytree(bundles["warn"], app)
    (app / "cudnn" / "cudart64_101.dll").unlink()
    shutil.copy(standin_cudnn_x86, app / "cudnn" / "cudnn64_8.dll")
    result = win_python.run(["-m", "bundler", "doctor", app, "--json"])
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert (report["verify"]["missing"], report["verify"]["changed"]) == (
        ["cudnn/cudart64_101.dll"], ["cudnn/cudnn64_8.dll"])
    problems = [f["message"] for f in report["findings"] if f["level"] == "problem"]
    assert "cudnn64_8.dll would not load: it is a 32-bit I386 DLL, not AMD64" in problems
    unloadable = sorted(m.split(" would not load")[0] for m in problems
                        if m.endswith("imports cudart64_101.dll, which is missing from the "
                                      "bundle"))
    assert unloadable == sorted(["cublas64_10.dll", "cublasLt64_10.dll", *SUBLIBS])
    assert not [f for f in report["findings"] if f["level"] == "ok" and
                "would load" in f["message"]]


RECIPES = {"cu101": "cudnn-8.0.3.33-cuda10.1-win-x64", "cu118": "cudnn-8.9.4.25-cuda11-win-x64",
           "cu129": "cudnn-9.28.0.42-cuda12-win-x64"}

# Each recipe's driver check against one driver, in one Windows process, then doctor on
# a bundle whose manifest carries the CUDA 11.8 recipe's figures.
CHECK_DRIVERS = """import json, sys
from bundler.runtime.loader_windows import driver_check
from bundler.cli import main
print(json.dumps({name: driver_check(json.loads(versions))
                  for name, versions in zip(sys.argv[2::2], sys.argv[3::2])}))
main(["doctor", sys.argv[1], "--json"])
"""


@pytest.fixture(scope="module")
def cuda118_bundle(bundles, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packed app with the CUDA 11.8 recipe's driver figures in its manifest (only
    the driver check reads them)."""
    from bundler.recipe.load import find_recipe

    app = tmp_path_factory.mktemp("cu118") / "app"
    shutil.copytree(bundles["warn"], app)
    path = app / "cudnn" / "manifest.json"
    manifest = json.loads(path.read_text())
    recipe = find_recipe(RECIPES["cu118"], PROJECT_ROOT)
    manifest["versions"].update(cuda=recipe.cuda, min_driver=recipe.min_driver,
                                min_driver_compat=recipe.min_driver_compat)
    path.write_text(json.dumps(manifest))
    return app


@pytest.mark.parametrize("driver, cuda, file_version, expect", [
    # CUDA 11.0's own driver: cuDriverGetVersion 11000, as every CUDA 11 driver would
    # report, but below the CUDA 11.x minimum (452.39).
    ("451.48", 11000, (27, 21, 14, 5148), {"cu101": "", "cu118": "problem", "cu129": "problem"}),
    ("516.01", 11070, (31, 0, 15, 1601), {"cu101": "", "cu118": "note", "cu129": "problem"}),
    ("531.14", 12010, (31, 0, 15, 3114), {"cu101": "", "cu118": "", "cu129": "note"}),
])
def test_the_driver_check_uses_the_recipes_minimum(
        win_python, cuda118_bundle: Path, tmp_path: Path, driver: str, cuda: int,
        file_version: tuple[int, int, int, int], expect: dict[str, str]) -> None:
    from bundler.recipe.load import find_recipe

    folder = build_dll(nvcuda_spec(cuda, version=file_version), tmp_path).parent
    args: list = [cuda118_bundle]
    for key, name in RECIPES.items():
        recipe = find_recipe(name, PROJECT_ROOT)
        args += [key, json.dumps({"cuda": recipe.cuda, "min_driver": recipe.min_driver,
                                  "min_driver_compat": recipe.min_driver_compat})]
    result = win_python.run_code(CHECK_DRIVERS, args, path_dirs=[folder])
    assert result.returncode == 0, result.stderr
    checks_line, *doctor_lines = result.stdout.splitlines()
    checks = json.loads(checks_line)
    for key, kind in expect.items():
        found = checks[key]
        assert found["driver_version"] == driver, found
        assert [k for k in ("problem", "note") if found[k]] == ([kind] if kind else []), found
    doctor = json.loads("\n".join(doctor_lines))
    [finding] = [f for f in doctor["findings"] if f["about"] == "driver"]
    level = {"problem": "problem", "note": "note", "": "ok"}[expect["cu118"]]
    assert finding["level"] == level, finding
