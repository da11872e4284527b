"""`bundler init` picks what fits (issue 27 item 3) and writes only what it means to
(issue 28's init part).

- the newest release whose CUDA and cuDNN serve every framework in the app (their own
  build-info files, stand-ins here: the real wheels' are read in tests of
  framework_facts), bundler-fetchable releases (NVIDIA's PyPI wheels) before login-only
  zips;
- CUDA 10.1 builds (cupy-cuda101, mxnet-cu101) get a CUDA 10.1 release, though the
  libraries they import (cublas64_10.dll ...) also ship with CUDA 10.2;
- inputs beside the project (a sibling checkout) neither choose the release nor are
  written silently;
- requirements.txt read for an app with nothing installed, and an embedded-python spec
  that packs as written;
- file names never become spec keys (TOML injection), git's folder is not the app.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from bundler.pack.spec import load_spec
from tests.harness.packing import run_cli
from tests.harness.winenv.shaped import Shape, build_shaped, dist_info
from tests.integration.test_embedded_python import bundler_cache, requirements_text
from tests.integration.test_init import (
    NO_SPECS,
    QUICKSTART,
    SEED,
    STANDIN_CUDA,
    STANDIN_ZIP,
    comments,
    init,
    pack_ok,
    standin_wheel,
    written,
)
from tests.integration.test_init import _no_cuda_variables as _no_cuda_variables  # noqa: F401
from tests.integration.test_init import tmp_path as tmp_path  # noqa: F401


def installed(app: Path, name: str, version: str, build_info: str = "",
              text: str = "") -> Path:
    """A framework as pip installs it into the app: its dist-info, and its build-info
    file (a stand-in with the real file's keys) where given."""
    site = app / "Lib" / "site-packages"
    dist_info(site, name, version)
    if build_info:
        (site / build_info).parent.mkdir(parents=True, exist_ok=True)
        (site / build_info).write_text(text)
    return site


ORT_INFO = "onnxruntime/capi/version_info.py"


def test_ort_1_14_gets_the_newest_release_bundler_fetches_not_a_login_only_zip(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Empty wheel cache, no input anywhere: cuDNN 8 for CUDA 11 at the file's minimum or
    newer. 8.9.7.29 for CUDA 11 is NVIDIA's zip only (a login); 8.9.5.29 is a PyPI wheel."""
    installed(tmp_path / "app", "onnxruntime-gpu", "1.14.1", ORT_INFO,
              'use_cuda = True\ncuda_version = "11.6"\ncudnn_version = "8.5.0.96"\n')
    code, out, err = init(capsys, tmp_path / "app")
    assert code == 0, err
    text = (tmp_path / "app.spec").read_text()
    assert written(tmp_path / "app.spec")["runtime"]["recipe"] == \
        "cudnn-8.9.5.29-cuda11-win-x64"
    said = comments(text)
    assert "the newest cuDNN release bundler fetches itself (NVIDIA's PyPI wheel)" in said
    assert ("onnxruntime-gpu 1.14.1: CUDA 11.6 (Lib/site-packages/onnxruntime/capi/"
            "version_info.py), cuDNN 8.5.0.96 or newer" in said)
    assert "newer: cudnn-8.9.7.29-cuda11-win-x64, NVIDIA's zip only" in said
    # The file's figure decides: a release no table row covers (1.40.0; the 1.14 row lists
    # cudnn64_8.dll among the libraries it loads), cuDNN 9 for CUDA 11.
    (tmp_path / "app.spec").unlink()
    shutil.rmtree(tmp_path / "app")
    installed(tmp_path / "app", "onnxruntime-gpu", "1.40.0", ORT_INFO,
              'use_cuda = True\ncuda_version = "11.6"\ncudnn_version = "9"\n')
    assert init(capsys, tmp_path / "app")[0] == 0
    recipe = written(tmp_path / "app.spec")["runtime"]["recipe"]
    assert recipe.startswith("cudnn-9.") and recipe.endswith("-cuda11-win-x64")


def test_an_unreadable_build_info_file_is_left_to_decide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pack refuses a framework whose build-info file it cannot read; init says so."""
    installed(tmp_path / "app", "onnxruntime-gpu", "1.20.1", ORT_INFO, "use_cuda = (\n")
    code, out, err = init(capsys, tmp_path / "app")
    assert code == 0, err
    said = comments((tmp_path / "app.spec").read_text())
    assert "TO DECIDE: onnxruntime-gpu 1.20.1's build-info file cannot be read" in said
    assert "TO DECIDE in the spec need your answer" in out


def test_ort_1_2x_beside_a_sibling_checkout_gets_cudnn_9_and_not_its_zip(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The ORT 1.2x app needs cudnn64_9 (its version_info.py); the quickstart checkout
    beside it holds the seed's stand-in zip. Before: cuDNN 8.0.3.33 / CUDA 10.1 and that
    zip. Now: cuDNN 9 for CUDA 12 from NVIDIA's wheels, nothing taken from the sibling."""
    shutil.copytree(QUICKSTART, tmp_path / "quickstart", ignore=NO_SPECS)
    app = tmp_path / "ort-service" / "app"
    installed(app, "onnxruntime-gpu", "1.20.1", ORT_INFO,
              'use_cuda = True\ncuda_version = "12.2.128"\ncudnn_version = "9"\n')
    code, _, err = init(capsys, app)
    assert code == 0, err
    data = written(app.parent / "app.spec")
    assert data["runtime"]["recipe"] == "cudnn-9.28.0.42-cuda12-win-x64"
    assert data["sources"] == {}
    assert "quickstart" not in (app.parent / "app.spec").read_text()
    assert "OUTSIDE" not in err


def test_an_input_beside_the_project_is_named_loudly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The seed app with the stand-ins in a folder beside the project (a shared
    downloads folder): written, but with a comment and a warning saying it lies outside
    the project, and the spec packs as written."""
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    shutil.copy(STANDIN_ZIP, downloads / STANDIN_ZIP.name)
    shutil.copytree(STANDIN_CUDA, downloads / "cuda" / "v10.1")
    project = tmp_path / "proj"
    (project / "app").mkdir(parents=True)
    (project / "app" / "main.py").write_text("print('hello')\n")
    code, out, err = init(capsys, project / "app")
    assert code == 0, err
    text = (project / "app.spec").read_text()
    assert written(project / "app.spec")["sources"] == {
        "cudnn": f"../Downloads/{STANDIN_ZIP.name}", "cuda": "../Downloads/cuda/v10.1"}
    assert comments(text).count("OUTSIDE THE PROJECT: found in") == 2
    assert err.count("lies outside the project") == 2
    pack_ok(capsys, project / "app.spec")


def test_a_release_input_beside_the_project_does_not_choose_the_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cuDNN wheel by NVIDIA's name in a sibling folder named its release for an app
    that shows no DLL; now only the project's own (and the wheel cache's) do."""
    standin_wheel(tmp_path / "shared", "cudnn-8.9.4.25-cuda11-win-x64")
    project = tmp_path / "proj"
    (project / "app").mkdir(parents=True)
    (project / "app" / "main.py").write_text("print('hello')\n")
    code, _, err = init(capsys, project / "app")
    assert code == 0, err
    assert written(project / "app.spec")["runtime"]["recipe"] == SEED
    # In the project, it does.
    (project / "app.spec").unlink()
    standin_wheel(project / "wheels", "cudnn-8.9.4.25-cuda11-win-x64")
    assert init(capsys, project / "app")[0] == 0
    assert written(project / "app.spec")["runtime"]["recipe"] == \
        "cudnn-8.9.4.25-cuda11-win-x64"


def test_a_cuda_path_comes_before_a_toolkit_beside_the_project(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 28: a toolkit planted in the folder beside the project (a shared temp
    folder) was written before CUDA_PATH*; now pack's own place wins, and the planted
    one is not named."""
    planted = tmp_path / "tmp" / "cuda" / "v10.1"
    shutil.copytree(STANDIN_CUDA, planted)
    project = tmp_path / "proj"
    (project / "app").mkdir(parents=True)
    (project / "app" / "main.py").write_text("print('hello')\n")
    monkeypatch.setenv("CUDA_PATH_V10_1", str(STANDIN_CUDA))
    code, _, err = init(capsys, project / "app", "--source", f"cudnn={STANDIN_ZIP}")
    assert code == 0, err
    data = written(project / "app.spec")
    assert "cuda" not in data["sources"]
    text = comments((project / "app.spec").read_text())
    assert "pack takes it from CUDA_PATH_V10_1" in text and "tmp/cuda" not in text
    assert "outside the project" not in err


def test_the_project_own_inputs_are_written_without_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, root, ignore=NO_SPECS)
    code, _, err = init(capsys, root / "app")
    assert code == 0, err
    assert "outside the project" not in err
    assert "OUTSIDE" not in (root / "app.spec").read_text()


@pytest.mark.parametrize("distribution, version", [
    ("cupy-cuda101", "9.6.0"), ("mxnet-cu101", "1.5.0")])
def test_cuda_10_1_builds_get_a_cuda_10_1_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], distribution: str,
        version: str) -> None:
    """They import CUDA 10.1's math libraries, whose names CUDA 10.2 ships too
    (cublas64_10.dll ...): the names alone chose cuDNN 8.7 for CUDA 10.2. The build's
    name says 10.1: the newest CUDA 10.1 release, cuDNN 8.0.5.39, ships all of them."""
    app = tmp_path / "app"
    installed(app, distribution, version)
    build_shaped(Shape("_cuda_backend.pyd", tuple(
        (name, ()) for name in ("cublas64_10.dll", "cufft64_10.dll", "curand64_10.dll",
                                "cusolver64_10.dll", "cusparse64_10.dll"))),
        app / "Lib" / "site-packages" / distribution.split("-")[0])
    code, _, err = init(capsys, app)
    assert code == 0, err
    data = written(tmp_path / "app.spec")
    assert data["runtime"]["recipe"] == "cudnn-8.0.5.39-cuda10.1-win-x64"
    assert {"cublas", "cufft", "curand", "cusolver", "cusparse"} <= \
        set(data["runtime"]["components"])
    assert f"CUDA 10.1 (its name {distribution})" in comments(
        (tmp_path / "app.spec").read_text())


def test_requirements_pins_choose_the_recipe_and_the_embedded_python_builder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No site-packages in the app, a requirements.txt pinning onnxruntime-gpu 1.20.0
    (cuDNN 9, CUDA 12: the framework table's row) and paddlepaddle-gpu: an
    embedded-python spec with the CUDA 12 release and the components ORT loads."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("import onnxruntime\n")
    (app / "requirements.txt").write_text("onnxruntime-gpu==1.20.0  # the model server\n"
                                          "numpy>=1.24\n")
    code, out, err = init(capsys, app, "--offline")
    assert code == 0, err
    assert "builder embedded-python: the app ships with its own CPython (chosen because" \
        in out
    spec = load_spec(tmp_path / "app.spec")   # pack's own reader
    assert (spec.builder, spec.python) == ("embedded-python", "3.11")
    assert spec.requirements == app / "requirements.txt"
    data = written(tmp_path / "app.spec")
    assert data["runtime"]["recipe"] == "cudnn-9.28.0.42-cuda12-win-x64"
    assert {"cufft", "cublas", "cudart"} <= set(data["runtime"]["components"])
    assert "    # cufft: cufft64_11.dll: loaded by onnxruntime-gpu 1.20.0\n" in \
        (tmp_path / "app.spec").read_text()

    # --builder folder keeps the folder builder; an installed app is not re-installed.
    (tmp_path / "app.spec").unlink()
    assert init(capsys, app, "--offline", "--builder", "folder")[0] == 0
    assert load_spec(tmp_path / "app.spec").builder == "folder"
    (tmp_path / "app.spec").unlink()
    dist_info(app / "Lib" / "site-packages", "numpy", "1.26.4")
    assert init(capsys, app)[0] == 0
    assert load_spec(tmp_path / "app.spec").builder == "folder"


def test_a_pinned_paddle_gets_cudnn_8_at_its_minimum_for_cuda_11(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """paddlepaddle-gpu 2.6.2 pinned (the table's row: CUDA 11.8, cuDNN >= 8.6.0, the
    CUDA libraries it loads by name): cuDNN 8 for CUDA 11 from a PyPI wheel, with cuBLAS,
    cuFFT, cuSOLVER and cuSPARSE. Pinned beside onnxruntime-gpu 1.20 (cuDNN 9), no
    release serves both: said as TO DECIDE, naming both figures."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("import paddle\n")
    (tmp_path / "requirements.txt").write_text("paddlepaddle-gpu==2.6.2\npaddleocr\n")
    code, _, err = init(capsys, app, "--offline")
    assert code == 0, err
    data = written(tmp_path / "app.spec")
    assert data["runtime"]["recipe"] == "cudnn-8.9.5.29-cuda11-win-x64"
    assert {"cublas", "cufft", "cusolver", "cusparse", "nvjpeg"} <= set(
        data["runtime"]["components"])
    assert "cuDNN 8.6.0 or newer" in comments((tmp_path / "app.spec").read_text())

    (tmp_path / "app.spec").unlink()
    (tmp_path / "requirements.txt").write_text("paddlepaddle-gpu==2.6.2\n"
                                               "onnxruntime-gpu==1.20.0\n")
    code, out, err = init(capsys, app, "--offline")
    assert code == 0, err
    said = comments((tmp_path / "app.spec").read_text())
    assert "recipe: TO DECIDE: no cuDNN release bundler knows" in said
    assert "paddlepaddle-gpu 2.6.2: CUDA 11.8" in said and "onnxruntime-gpu 1.20.0" in said


def test_an_unknown_pinned_framework_is_left_to_decide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("print('hi')\n")
    (tmp_path / "requirements.txt").write_text("tensorflow==9.99.0\n")
    code, out, err = init(capsys, app, "--offline")
    assert code == 0, err
    said = comments((tmp_path / "app.spec").read_text())
    assert "TO DECIDE: tensorflow 9.99.0 (no wheel: no --find-links folder or the wheel " \
        "cache holds it; --offline fetches nothing; no row of bundler's framework table) " \
        "is pinned in the requirements" in said, said
    assert "TO DECIDE in the spec need your answer" in out


def test_the_embedded_python_spec_init_writes_packs_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """init --builder embedded-python + pack: the stand-in runtime, the pinned numpy
    wheel from the test cache (no index), python.org's embeddable from the test cache."""
    # A wheel cache holding only the pinned embeddable CPython: nothing is fetched.
    monkeypatch.setenv("BUNDLER_CACHE", bundler_cache(tmp_path / "cache")["BUNDLER_CACHE"])
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("import numpy\nprint(numpy.__version__)\n")
    (tmp_path / "requirements.txt").write_text(requirements_text())
    code, out, err = init(capsys, app, "--builder", "embedded-python",
                          "--source", f"cudnn={STANDIN_ZIP}",
                          "--source", f"cuda={STANDIN_CUDA}")
    assert code == 0, err
    assert "builder embedded-python: the app ships with its own CPython (given with " \
        "--builder)" in out
    summary = pack_ok(capsys, tmp_path / "app.spec")
    bundle = Path(summary["out"])
    assert (bundle / "python" / "python.exe").is_file()
    assert (bundle / f"{bundle.name}.cmd").is_file()
    assert list((bundle / "python" / "Lib" / "site-packages").glob("numpy-*.dist-info"))
    code, out, _ = run_cli(capsys, "verify", str(bundle))
    assert code == 0 and out.startswith("ok:"), out


EVIL = 'x\nallow_unsigned = ["*", "y"]\n#'


@pytest.mark.parametrize("under", [".git/objects", "plugins"])
def test_a_file_name_never_becomes_a_spec_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], under: str) -> None:
    """Issue 28: a folder named with line breaks under app/.git/ (a checkout holds
    anything) wrote `allow_unsigned = ["*", ...]` into the spec through a comment naming
    the app's own cudnn64_8.dll. git's folder is not the app (pack's copy leaves it out),
    and elsewhere the name is written escaped, inside its comment."""
    app = tmp_path / "app"
    installed(app, "tensorflow", "2.10.1")   # loads cudnn64_8.dll by name
    evil = app / under / EVIL
    evil.mkdir(parents=True)
    (evil / "cudnn64_8.dll").write_bytes(b"not a DLL")
    code, _, err = init(capsys, app)
    assert code == 0, err
    data = written(tmp_path / "app.spec")
    assert "allow_unsigned" not in data["runtime"]
    text = (tmp_path / "app.spec").read_text()
    if under == ".git/objects":
        assert "the app ships its own" not in text
    else:
        assert '(plugins/x\\nallow_unsigned = ["*", "y"]\\n#/cudnn64_8.dll)' in comments(text)


def test_a_file_name_that_is_not_utf8_is_written_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: a non-UTF-8 file name (bytes 0xff on Linux) in a comment made init fail
    with exit 3 writing the spec; it is written escaped and the spec reads back."""
    app = tmp_path / "app"
    installed(app, "tensorflow", "2.10.1")   # loads cudnn64_8.dll by name
    odd = Path(os.fsdecode(bytes(app / "plugins") + b"/\xffx"))
    odd.mkdir(parents=True)
    (odd / "cudnn64_8.dll").write_bytes(b"not a DLL")
    code, _, err = init(capsys, app)
    assert code == 0, err
    assert "(plugins/\\udcffx/cudnn64_8.dll)" in comments((tmp_path / "app.spec").read_text())
    load_spec(tmp_path / "app.spec")


def test_a_path_the_spec_cannot_hold_is_bad_input_not_a_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An app folder whose name is not UTF-8, written into a spec elsewhere (--out): TOML
    holds only text, so exit 2 naming it (escaped) and the fix, and no spec is left."""
    app = Path(os.fsdecode(bytes(tmp_path) + b"/\xffproj/app"))
    app.mkdir(parents=True)
    (app / "main.py").write_text("print('hello')\n")
    (tmp_path / "out").mkdir()
    code, _, err = init(capsys, app, "--out", tmp_path / "out" / "x.spec")
    assert code == 2, err
    assert "\\udcffproj/app: the path is not UTF-8 text" in err and "rename" in err
    assert not (tmp_path / "out" / "x.spec").exists()
