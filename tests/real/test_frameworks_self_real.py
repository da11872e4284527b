"""Opt-in (BUNDLER_REAL_FRAMEWORKS=1): real Windows framework wheels describe themselves.

Sixteen wheels nobody on the project wrote (tests/harness/winenv/pins.toml [framework_wheels],
4.1 GB fetched once into the test cache, each checked against its sha256) are installed as pip
installs them into an app's `Lib/site-packages`. For each:

- the app scan, from the framework's own files only (its build-info file, its binaries'
  import tables and the library names beside their loaders), finds every CUDA/cuDNN
  library the framework loads and its CUDA and cuDNN figures. EXPECTED below was read
  independently of bundler (pefile import tables, the DLL-name strings of each binary,
  the frameworks' loader sources and build-info files) and is what the framework really
  loads — not the table's rows, which test_the_table_agrees_with_the_wheels checks
  against it;
- `bundler init APP` writes a spec whose release serves it (its CUDA family, its cuDNN
  major, at or above its cuDNN minimum) and whose components ship every library in
  EXPECTED;
- `bundler pack` of a release older than the framework's cuDNN minimum, and of another
  cuDNN major, is refused (exit 2) before any input is read, naming the framework and
  its figure;
- `bundler recipes --for NAME==VERSION` (the wheel read, not installed) names releases,
  fetchable first, each serving it and shipping every library in EXPECTED, or none
  (TensorFlow 2.4: cusolver64_10.dll is in no CUDA 11 release);
- `bundler init` from a requirements line writes such a spec too, and `pack --offline` of
  the installed app's spec as init wrote it passes the framework checks (stopping at the
  inputs), or refuses naming what no release has (TF 2.4) or the wheel's own copy
  (mxnet-cu100 ships cudnn64_7.dll).

`test_init_and_pack_ship_every_library` then packs three of them for real as init wrote
the spec (no edit), from NVIDIA's real wheels (the test world's pinned CUDA 11 and 13
sets, fetched once): the bundle holds every library the framework loads.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from bundler.pack.app_scan import scan_app
from bundler.recipe.load import Recipe, find_recipe
from bundler.targets.registry import windows
from tests.harness.packing import run_cli
from tests.harness.winenv._cache import build_once, cache_root, locked
from tests.harness.winenv.pins import Pin, _table, check_download
from tests.harness.winenv.wheels import wheel_cache

pytestmark = pytest.mark.skipif(os.environ.get("BUNDLER_REAL_FRAMEWORKS") != "1",
                                reason="opt-in: set BUNDLER_REAL_FRAMEWORKS=1 (4.1 GB of "
                                       "framework wheels fetched once)")

CU11 = ("cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll",
        "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll", "cudnn64_8.dll")


@dataclass(frozen=True)
class Expected:
    cuda: str            # the CUDA family the framework is built for ("11", "10.2")
    cudnn_major: str
    cudnn_minimum: str   # the framework's own figure (or the documented one)
    said_by: str         # the file (inside site-packages) or "table" that says the minimum
    loads: tuple[str, ...]
    too_old: str = ""    # a release of the right CUDA and major below the minimum
    wrong_major: str = ""
    no_release: str = ""   # a library no release bundler knows ships (TF 2.4's cusolver64_10)
    own_copy: str = ""     # a library the wheel ships itself (mxnet's cudnn64_7.dll)


CU100 = ("cudart64_100.dll", "cublas64_100.dll", "cufft64_100.dll", "curand64_100.dll",
         "cusolver64_100.dll", "cusparse64_100.dll", "cudnn64_7.dll")
EXPECTED = {
    # Issue 43's list. TensorFlow 2.0: CUDA 10.0's seven (names built from "64_100"), cuDNN
    # 7.4 (tensorflow.org's tested configuration); 7.3 is too old.
    "tensorflow_gpu-2.0.4-cp37-cp37m-win_amd64.whl": Expected(
        "10.0", "7", "7.4", "table", CU100, too_old="cudnn-7.3.1.20-cuda10.0-win-x64",
        wrong_major="cudnn-8.0.3.33-cuda10.1-win-x64"),
    # TensorFlow 2.4: CUDA 11.0's eight; cusolver64_10.dll is in no CUDA 11 release bundler
    # knows (their runtime set is 11.8's: cusolver64_11.dll): refused, naming it.
    "tensorflow_gpu-2.4.4-cp38-cp38-win_amd64.whl": Expected(
        "11", "8", "8.0", "table",
        ("cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll",
         "curand64_10.dll", "cusolver64_10.dll", "cusparse64_11.dll", "cudnn64_8.dll"),
        wrong_major="cudnn-9.28.0.42-cuda12-win-x64", no_release="cusolver64_10.dll"),
    # onnxruntime_providers_cuda.dll's imports (cuFFT among them); cuDNN 8.5 (ORT's table).
    "onnxruntime_gpu-1.14.1-cp310-cp310-win_amd64.whl": Expected(
        "11", "8", "8.5", "table",
        ("cublasLt64_11.dll", "cublas64_11.dll", "cudnn64_8.dll", "cufft64_10.dll",
         "cudart64_110.dll"), too_old="cudnn-8.0.5.39-cuda11-win-x64",
        wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    "onnxruntime_gpu-1.22.0-cp311-cp311-win_amd64.whl": Expected(
        "12", "9", "9", "onnxruntime/capi/version_info.py",
        ("cublasLt64_12.dll", "cublas64_12.dll", "cufft64_11.dll", "cudart64_12.dll",
         "cudnn64_9.dll"), wrong_major="cudnn-8.9.7.29-cuda12-win-x64"),
    # cupy/.data/_wheel.json: "cuda": "11.x", cuDNN 8.8.1; the CUDA 11 libraries it loads.
    "cupy_cuda11x-13.6.0-cp310-cp310-win_amd64.whl": Expected(
        "11", "8", "8.8.1", "cupy/.data/_wheel.json",
        ("cudnn64_8.dll", "cublas64_11.dll", "cufft64_10.dll", "curand64_10.dll",
         "cusolver64_11.dll", "cusparse64_11.dll", "cudart64_110.dll"),
        too_old="cudnn-8.0.5.39-cuda11-win-x64", wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    # mxnet/libmxnet.dll imports these CUDA 10.0 libraries and cudnn64_7.dll, which the
    # wheel ships beside it (mxnet/cudnn64_7.dll: the app's own copy).
    "mxnet_cu100-1.5.0-py2.py3-none-win_amd64.whl": Expected(
        "10.0", "7", "7", "table",
        ("cublas64_100.dll", "cufft64_100.dll", "cusolver64_100.dll", "curand64_100.dll",
         "nvrtc64_100_0.dll"), wrong_major="cudnn-8.0.3.33-cuda10.1-win-x64",
        own_copy="cudnn64_7.dll"),
    # paddle/version/__init__.py: cuda_version '11.8', cudnn_version '8.6.0'; libpaddle.pyd
    # imports no CUDA DLL and loads these by name (nvjpeg64_11: the CUDA 11 set's nvjpeg).
    "paddlepaddle_gpu-2.6.2-cp310-cp310-win_amd64.whl": Expected(
        "11", "8", "8.6.0", "paddle/version/__init__.py",
        ("cudnn64_8.dll", "cublas64_11.dll", "cusolver64_11.dll", "cusparse64_11.dll",
         "cufft64_10.dll", "nvjpeg64_11.dll"),
        too_old="cudnn-8.0.5.39-cuda11-win-x64", wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    # A CUDA 10.2 build (cudart linked in): cuDNN 7, cuBLAS/cuSOLVER 10, cuFFT 10, and
    # nvJPEG 10 (the CUDA 10.x toolkit's, the runtime set's nvjpeg component).
    "paddlepaddle_gpu-2.2.2-cp39-cp39-win_amd64.whl": Expected(
        "10.2", "7", "7.6", "paddle/version/__init__.py",
        ("cudnn64_7.dll", "cublas64_10.dll", "cusolver64_10.dll", "cufft64_10.dll",
         "nvjpeg64_10.dll"),
        wrong_major="cudnn-8.0.3.33-cuda10.1-win-x64"),
    # TensorFlow's GPU check needs all eight (else it runs on the CPU); cuDNN >= 8.1.
    "tensorflow_gpu-2.5.3-cp39-cp39-win_amd64.whl": Expected(
        "11", "8", "8.1", "table", CU11, too_old="cudnn-8.0.5.39-cuda11-win-x64",
        wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    "tensorflow_gpu-2.9.3-cp310-cp310-win_amd64.whl": Expected(
        "11", "8", "8.1", "table", CU11, too_old="cudnn-8.0.5.39-cuda11-win-x64",
        wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    "tensorflow-2.10.1-cp310-cp310-win_amd64.whl": Expected(
        "11", "8", "8.1", "table", CU11, too_old="cudnn-8.0.5.39-cuda11-win-x64",
        wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    # onnxruntime/capi/version_info.py: cuda_version 11.8 / 12.2 / 13.x, cudnn_version 8 / 9.
    # 1.16.3's version_info.py says "8"; ORT's CUDA EP page says 8.5 for 1.14-1.17 (the table).
    "onnxruntime_gpu-1.16.3-cp310-cp310-win_amd64.whl": Expected(
        "11", "8", "8.5", "table",
        ("cublasLt64_11.dll", "cublas64_11.dll", "cudnn64_8.dll", "cufft64_10.dll",
         "cudart64_110.dll"), too_old="cudnn-8.0.5.39-cuda11-win-x64",
        wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    "onnxruntime_gpu-1.19.2-cp310-cp310-win_amd64.whl": Expected(
        "12", "9", "9", "onnxruntime/capi/version_info.py",
        ("cublasLt64_12.dll", "cublas64_12.dll", "cufft64_11.dll", "cudart64_12.dll",
         "cudnn64_9.dll"), wrong_major="cudnn-8.9.7.29-cuda12-win-x64"),
    "onnxruntime_gpu-1.31.1-cp311-cp311-win_amd64.whl": Expected(
        "13", "9", "9", "onnxruntime/capi/version_info.py",
        ("cublas64_13.dll", "cublasLt64_13.dll", "cudnn64_9.dll", "cufft64_12.dll"),
        wrong_major="cudnn-8.9.7.29-cuda12-win-x64"),
    # cupy/.data/_wheel.json: "cuda": "12.x", cuDNN 8.8.1 (its cudnn module imports
    # cudnn64_8, not 9); the CUDA 12 math libraries and NVRTC by import and by name.
    "cupy_cuda12x-13.6.0-cp310-cp310-win_amd64.whl": Expected(
        "12", "8", "8.8.1", "cupy/.data/_wheel.json",
        ("cudnn64_8.dll", "cublas64_12.dll", "cufft64_11.dll", "curand64_10.dll",
         "cusolver64_11.dll", "cusparse64_12.dll", "cudart64_12.dll"),
        too_old="cudnn-8.0.5.39-cuda11-win-x64", wrong_major="cudnn-9.28.0.42-cuda12-win-x64"),
    # Every CUDA 10.1 name plus cudnn64_8.
    "cupy_cuda101-9.6.0-cp39-cp39-win_amd64.whl": Expected(
        "10.1", "8", "8", "cupy/.data/_wheel.json",
        ("cudart64_101.dll", "cublas64_10.dll", "cufft64_10.dll", "curand64_10.dll",
         "cusolver64_10.dll", "cusparse64_10.dll", "nvrtc64_101_0.dll", "cudnn64_8.dll"),
        wrong_major="cudnn-7.6.5.32-cuda10.1-win-x64"),
}


def framework_wheel(file_name: str) -> Path:
    """The pinned wheel in <test cache>/framework-wheels, downloaded with pip on first
    use (for its own Python and platform) and checked against its sha256."""
    entry = _table()["framework_wheels"][file_name]
    pin = Pin(entry["package"], entry["version"], entry["sha256"])
    folder = cache_root() / "framework-wheels"
    path = folder / file_name
    with locked(f"framework-wheel-{pin.sha256[:16]}"):
        if not path.is_file():
            python = re.search(r"-cp(\d)(\d+)-", file_name) or re.search(
                r"-py(\d)()", file_name.replace("py2.py3", "py3"))
            assert python, file_name
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                            "--only-binary=:all:", "--platform", "win_amd64",
                            "--implementation", "cp", "--python-version",
                            f"{python.group(1)}.{python.group(2) or 7}", "--dest", str(folder),
                            pin.requirement], check=True)
        check_download(path, pin)
    return path


@cache
def installed(file_name: str) -> Path:
    """The wheel installed as pip installs it (purelib and platlib at the top of
    site-packages) into an app folder in the test cache: <cache>/<app>/app."""
    wheel = framework_wheel(file_name)

    def install(dest: Path) -> None:
        site = dest / "app" / "Lib" / "site-packages"
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                top, _, rest = info.filename.partition("/")
                name = info.filename
                if top.endswith(".data"):
                    kind, _, name = rest.partition("/")
                    if kind not in ("purelib", "platlib"):
                        continue
                if not name or name.endswith("/"):
                    continue
                target = site / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as source, open(target, "wb") as out:
                    while piece := source.read(1 << 20):
                        out.write(piece)
        (dest / "app" / "main.py").write_text("import sys\n")

    return build_once(cache_root() / "framework-apps" / file_name.removesuffix(".whl"),
                      install) / "app"


def app_copy(file_name: str, tmp_path: Path) -> Path:
    """The installed app, linked into a folder of the test's own (init writes beside it)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "app").symlink_to(installed(file_name), target_is_directory=True)
    return root / "app"


WHEELS = sorted(EXPECTED)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


@pytest.mark.parametrize("file_name", WHEELS)
def test_each_framework_says_what_it_loads_and_needs(file_name: str) -> None:
    expected = EXPECTED[file_name]
    scan = scan_app(installed(file_name), platform=windows())
    needed = {n.dll.lower() for n in scan.needs}
    assert {n.lower() for n in expected.loads} <= needed, sorted(needed)
    (facts,) = [f for f in scan.framework_facts if f.gpu_build]
    minimum, said_by = facts.cudnn_minimum()
    assert _version(minimum)[:len(_version(expected.cudnn_minimum))] == \
        _version(expected.cudnn_minimum), (minimum, said_by)
    if expected.said_by != "table":
        assert said_by.endswith(expected.said_by), said_by
    assert not facts.unreadable


@pytest.mark.parametrize("file_name", WHEELS)
def test_init_picks_a_release_that_serves_it_and_ships_every_library(
        file_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    expected = EXPECTED[file_name]
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))
    app = app_copy(file_name, tmp_path)
    code, out, err = run_cli(capsys, "init", app, "--out", app.parent / "app.spec")
    assert code == 0, err
    _check_spec((app.parent / "app.spec").read_text(), expected, app.parent)


def _check_spec(spec_text: str, expected: Expected, folder: Path) -> None:
    """The spec's release serves the framework and its components ship every library
    it loads; where no release can, the spec says TO DECIDE naming the library."""
    if expected.no_release:
        assert f"TO DECIDE: {expected.no_release}" in spec_text, spec_text
        return
    recipe_name = re.search(r'^recipe = "([^"]+)"', spec_text, re.M)
    assert recipe_name, spec_text
    recipe = find_recipe(recipe_name.group(1), folder)
    _serves(recipe, expected)
    components = json.loads(re.sub(r"#[^\n]*", "", re.search(
        r"^components = (\[.*?\])", spec_text, re.M | re.S).group(1)).replace(",\n]", "]")
        .replace(",]", "]"))
    shipped = {name.lower() for c in recipe.select(components) for name in c.files}
    assert {n.lower() for n in expected.loads} <= shipped, (recipe.name, sorted(shipped))


def _serves(recipe: Recipe, expected: Expected) -> None:
    cuda_family = recipe.cuda.split(".")[:len(expected.cuda.split("."))]
    assert cuda_family == expected.cuda.split("."), (recipe.name, recipe.cuda)
    assert recipe.cudnn.split(".")[0] == expected.cudnn_major, recipe.name
    assert _version(recipe.cudnn) >= _version(expected.cudnn_minimum), recipe.name


def _requirement(file_name: str) -> str:
    entry = _table()["framework_wheels"][file_name]
    return f"{entry['package']}=={entry['version']}"


@pytest.mark.parametrize("file_name", WHEELS)
def test_recipes_for_names_releases_that_ship_every_library(
        file_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """recipes --for, from the wheel alone (not installed): each release it names (the
    first three checked by rendering them) serves the framework and ships every library
    it loads, fetchable ones first; none where no release can (TF 2.4)."""
    expected = EXPECTED[file_name]
    wheel = framework_wheel(file_name)
    code, out, err = run_cli(capsys, "recipes", "--for", _requirement(file_name),
                             "--find-links", wheel.parent, "--offline", "--json")
    assert code == 0, err
    view = json.loads(out)
    releases = view["releases"]
    with capsys.disabled():
        print(f"\n[figure] recipes --for {_requirement(file_name)}: {len(releases)} releases"
              f", first {releases[0]['name'] if releases else 'none'}; "
              f"{view['frameworks'][0]['needs']}")
    if expected.no_release:
        assert releases == [] and expected.no_release in view["frameworks"][0]["loads"]
        return
    fetchable = [r["fetchable"] for r in releases]
    assert releases and fetchable == sorted(fetchable, reverse=True)
    for release in releases[:3]:
        recipe = find_recipe(release["name"], wheel.parent)
        _serves(recipe, expected)
        assert all(recipe.supplier_of(name) for name in expected.loads), recipe.name


@pytest.mark.parametrize("file_name", WHEELS)
def test_init_from_a_requirements_line_and_pack_as_written(
        file_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """init from a requirements line (the wheel read, not installed) writes a spec that
    serves the framework; pack of the installed app's spec, as init wrote it, passes the
    framework checks (--offline then stops at the inputs), or refuses naming what no
    release has (TF 2.4's cusolver64_10.dll) or the wheel's own copy (mxnet's cuDNN)."""
    expected = EXPECTED[file_name]
    monkeypatch.setenv("BUNDLER_CACHE", str(tmp_path / "cache"))
    wheel = framework_wheel(file_name)
    app = tmp_path / "line" / "app"
    app.mkdir(parents=True)
    (app / "main.py").write_text("import sys\n")
    (app / "requirements.txt").write_text(
        f"--no-index\n--find-links {wheel.parent.as_posix()}\n{_requirement(file_name)}\n")
    code, _, err = run_cli(capsys, "init", app, "--offline")
    assert code == 0, err
    _check_spec((app.parent / "app.spec").read_text(), expected, app.parent)
    installed_app = app_copy(file_name, tmp_path)
    assert run_cli(capsys, "init", installed_app, "--out", installed_app.parent / "app.spec",
                   "--offline")[0] == 0
    code, _, err = run_cli(capsys, "pack", installed_app.parent / "app.spec", "--offline")
    assert code == 2, err
    assert "does not fit" not in err, err
    if expected.no_release:
        assert f"loads {expected.no_release}" in err and "CUDA 11.0" in err, err
    elif expected.own_copy:
        assert f"ships its own {expected.own_copy}" in err, err
    else:
        assert "no release bundler knows" not in err and "ships its own" not in err, err


@pytest.mark.parametrize("file_name", WHEELS)
def test_a_too_old_release_and_a_wrong_major_are_refused(
        file_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = EXPECTED[file_name]
    app = app_copy(file_name, tmp_path)
    distribution = _table()["framework_wheels"][file_name]["package"]
    for release in filter(None, (expected.too_old, expected.wrong_major)):
        spec = app.parent / f"{release}.spec"
        spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n\n'
                        f'[runtime]\nrecipe = "{release}"\n')
        code, _, err = run_cli(capsys, "pack", spec, "--offline")
        assert code == 2, (release, err)
        assert distribution in err, err
        figure = expected.cudnn_minimum if release == expected.too_old else ""
        assert figure in err, (release, err)
        assert "wheel cache" not in err and "not found" not in err, err   # no input read


REAL_PACKS = ["paddlepaddle_gpu-2.6.2-cp310-cp310-win_amd64.whl",
              "tensorflow_gpu-2.9.3-cp310-cp310-win_amd64.whl",
              "onnxruntime_gpu-1.31.1-cp311-cp311-win_amd64.whl"]


@pytest.mark.parametrize("file_name", REAL_PACKS)
def test_init_and_pack_ship_every_library(
        file_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user runs them: init, then pack of the spec init wrote, from NVIDIA's real
    wheels (the harness's wheel cache: the test world's pinned CUDA 11 and 13 sets)."""
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))
    app = app_copy(file_name, tmp_path)
    assert run_cli(capsys, "init", app, "--out", app.parent / "app.spec")[0] == 0
    code, out, err = run_cli(capsys, "pack", app.parent / "app.spec", "--json")
    assert code == 0, err
    summary = json.loads(out)
    bundled = {Path(f["name"]).name.lower() for f in summary["files"]}
    assert {n.lower() for n in EXPECTED[file_name].loads} <= bundled, sorted(bundled)
    with capsys.disabled():
        print(f"\n[figure] {file_name}: {summary['recipe']}, "
              f"{summary['total_size'] / 2**20:.0f} MiB in {len(summary['files'])} files")


@pytest.mark.parametrize("file_name", WHEELS)
def test_the_table_agrees_with_the_wheels(file_name: str) -> None:
    """compat.toml keeps what no file says (TensorFlow's GPU check needs all eight): where
    it has a row for the release, the row says what the wheel really loads and needs."""
    expected = EXPECTED[file_name]
    entry = _table()["framework_wheels"][file_name]
    row = windows().driver_table().framework_entry(entry["package"], entry["version"])
    if row is None:
        return   # no row: the framework's own files are all there is (CuPy)
    assert {n.lower() for n in row.loads} == {n.lower() for n in expected.loads}, row.name
    assert row.cuda.split(".")[:len(expected.cuda.split("."))] == expected.cuda.split(".")
    assert row.cudnn.split(".")[0] == expected.cudnn_major, row.name
