"""`bundler init APPDIR`: the spec it writes packs without edits.

The examples' app folders (copied without their specs, as a new user has them) get a
spec that `bundler pack` accepts as written; the entry script is guessed or left to
decide; an existing spec is never overwritten; an app holding the REAL onnxruntime-gpu
1.26.0 wheel's files (226 MB, pinned in tests/harness/winenv/pins.toml) gets the CUDA 12 recipe
and the components its DLLs import, each with the line that says why. Packing that
spec fetches NVIDIA's real wheels (GBs): opt-in, BUNDLER_REAL_CUDNN=1.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from bundler.pack.spec import load_spec
from bundler.recipe.load import find_recipe
from bundler.support.toml_tables import tomllib
from tests.harness.packing import run_cli, snapshot
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.quickstart import QUICKSTART
from tests.harness.winenv.shaped import dist_info
from tests.harness.winenv.wheels import nvidia_wheel, ort_wheel, wheel_cache

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"
CU12 = "cudnn-9.28.0.42-cuda12-win-x64"
CU11 = "cudnn-8.9.4.25-cuda11-win-x64"
EXAMPLES = QUICKSTART.parent
STANDIN_ZIP = QUICKSTART / "downloads" / "cudnn-v8.0.3.33_cuda10.1-windows10-x64.STANDIN.zip"
STANDIN_CUDA = QUICKSTART / "standin-cuda" / "v10.1"
NO_SPECS = shutil.ignore_patterns("*.spec", "*.lock", "dist", "__pycache__")


@pytest.fixture
def tmp_path(tmp_path: Path) -> Path:
    """A folder one level below pytest's own: init also searches the folder beside the
    spec's, which for a spec written in pytest's tmp_path is the base folder holding every
    other test's files (their wheels, zips and symbolic-link loops)."""
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.fixture(autouse=True)
def _no_cuda_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine's CUDA_PATH* must not decide what init finds (own_environ's rule)."""
    for name in list(os.environ):
        if name.upper().startswith("CUDA_PATH"):
            monkeypatch.delenv(name)
    # Nor the caller's wheel cache, whose releases init prefers: the session's own
    # (empty) cache, unless a test points BUNDLER_CACHE at one.
    monkeypatch.delenv("BUNDLER_CACHE", raising=False)


def init(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    return run_cli(capsys, "init", *map(str, args))


def written(spec: Path) -> dict:
    return tomllib.loads(spec.read_text(encoding="utf-8"))


def comments(text: str) -> str:
    """The spec's comments as one line of prose (init wraps them at 88 characters)."""
    return " ".join(line.strip().lstrip("#").strip() for line in text.splitlines())


def allow_standins(spec: Path) -> None:
    """What the user does for stand-ins (not NVIDIA's files, not signed): uncomment the
    allow_unsigned line init writes commented out for a cuDNN zip named by path."""
    text = spec.read_text(encoding="utf-8")
    if "\n# allow_unsigned = " in text:
        spec.write_text(text.replace("\n# allow_unsigned = ", "\nallow_unsigned = "),
                        encoding="utf-8")


def pack_ok(capsys: pytest.CaptureFixture[str], spec: Path) -> dict:
    allow_standins(spec)
    code, out, err = run_cli(capsys, "pack", str(spec), "--json")
    assert code == 0, err
    return json.loads(out)


def test_the_quickstart_app_gets_a_spec_that_packs_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, root, ignore=NO_SPECS)
    code, out, err = init(capsys, root / "app")
    assert code == 0, err
    spec = root / "app.spec"
    assert f"wrote {spec}" in out
    data = written(spec)
    assert data["app"] == {"name": "quickstart", "path": "app", "entry": "main.py"}
    assert data["runtime"]["recipe"] == SEED   # the app shows no DLL: the default
    assert "the app shows no CUDA or cuDNN DLL" in spec.read_text()
    # The stand-in zip and toolkit beside the app, found by what they hold.
    assert data["sources"] == {
        "cudnn": "downloads/cudnn-v8.0.3.33_cuda10.1-windows10-x64.STANDIN.zip",
        "cuda": "standin-cuda/v10.1"}
    # The stand-ins are not NVIDIA's: pack refuses them until the user says so on the
    # line init writes commented out, with why.
    assert "\n# allow_unsigned = [\"cudnn*.dll\"]\n" in spec.read_text()
    code, _, err = run_cli(capsys, "pack", str(spec))
    assert code == 2 and "allow_unsigned" in err
    summary = pack_ok(capsys, spec)
    assert summary["recipe"] == SEED and len(summary["files"]) == 11
    code, out, _ = run_cli(capsys, "verify", str(root / "dist" / "quickstart"))
    assert code == 0 and out.startswith("ok:"), out


def test_the_bundle_packed_from_the_written_spec_runs_on_windows(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], app_python: WindowsPython) -> None:
    root = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, root, ignore=NO_SPECS)
    assert init(capsys, root / "app")[0] == 0
    pack_ok(capsys, root / "app.spec")
    result = app_python.run([root / "dist" / "quickstart" / "main.py"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cudnnGetVersion() = 8003" in result.stdout
    assert "\\dist\\quickstart\\cudnn\\cudnn64_8.dll" in result.stdout.replace("\\\\", "\\")


@pytest.mark.parametrize("example, app, name", [
    ("pyinstaller", "src", "pyinstaller"), ("wheels-cu11", "app", "wheels-cu11")])
def test_an_example_without_inputs_beside_it_says_what_to_give_then_packs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str, app: str,
        name: str) -> None:
    root = tmp_path / example
    shutil.copytree(EXAMPLES / example, root, ignore=NO_SPECS)
    code, out, err = init(capsys, root / app)
    assert code == 0, err
    text = (root / "app.spec").read_text()
    assert ("cudnn: TO DECIDE: NVIDIA's zip cudnn-v8.0.3.33_cuda10.1-windows10-x64.zip "
            "was not found beside the app" in comments(text))
    assert '\n# cudnn = "downloads/cudnn-v8.0.3.33_cuda10.1-windows10-x64.zip"\n' in text
    assert "TO DECIDE in the spec need your answer" in out
    code, _, err = run_cli(capsys, "pack", str(root / "app.spec"))
    assert code == 2 and "is not given" in err   # pack names a missing input too

    # Told where the inputs are, init writes them: the spec packs as written.
    (root / "app.spec").unlink()
    code, out, err = init(capsys, root / app, "--source", f"cudnn={STANDIN_ZIP}",
                          "--source", f"cuda={STANDIN_CUDA}")
    assert code == 0, err
    data = written(root / "app.spec")
    assert data["app"] == {"name": name, "path": app, "entry": "main.py"}
    assert Path(root / data["sources"]["cudnn"]).resolve() == STANDIN_ZIP.resolve()
    summary = pack_ok(capsys, root / "app.spec")
    assert Path(summary["out"]) == root / "dist" / name
    assert (root / "dist" / name / "_cudnn_bootstrap.py").is_file()


def copy_examples(tmp_path: Path, *names: str) -> Path:
    """The examples named, side by side as in the repository, without specs or output."""
    root = tmp_path / "examples"
    for name in names:
        shutil.copytree(EXAMPLES / name, root / name, ignore=NO_SPECS)
    return root


def test_the_pyinstaller_example_finds_the_quickstarts_inputs_and_packs_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its own spec takes the stand-ins from ../quickstart: init finds them there (the
    folders beside the spec's), writes the same paths, and the spec packs unedited."""
    root = copy_examples(tmp_path, "pyinstaller", "quickstart")
    code, out, err = init(capsys, root / "pyinstaller" / "src")
    assert code == 0, err
    spec = root / "pyinstaller" / "app.spec"
    data = written(spec)
    own = tomllib.loads((EXAMPLES / "pyinstaller" / "app.spec").read_text())
    assert data["sources"] == own["sources"] == {
        "cudnn": "../quickstart/downloads/cudnn-v8.0.3.33_cuda10.1-windows10-x64.STANDIN.zip",
        "cuda": "../quickstart/standin-cuda/v10.1"}
    assert data["runtime"]["recipe"] == own["runtime"]["recipe"] == SEED
    assert "TO DECIDE" not in out
    # main.py loads cudnn64_8.dll by name (a string, not an import): said, and shipped.
    assert "    # core: cudnn64_8.dll: named in main.py\n" in spec.read_text()
    summary = pack_ok(capsys, spec)
    assert Path(summary["out"]) == root / "pyinstaller" / "dist" / "pyinstaller"
    assert "cudnn64_8.dll" in {Path(f["path"]).name for f in summary["files"]}
    code, out, _ = run_cli(capsys, "verify", summary["out"])
    assert code == 0 and out.startswith("ok:"), out


def standin_wheel(folder: Path, recipe: str) -> Path:
    """A stand-in of the recipe's cuDNN wheel: NVIDIA's file name, the members the recipe
    takes (a few bytes each), so init reads it as that release's input. Not the pinned
    file (pack would refuse it by its sha256): the real wheels' pack is opt-in, below."""
    source = find_recipe(recipe, PROJECT_ROOT).sources["cudnn"]
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / source.file_name, "w") as wheel:
        for member in source.contents:
            wheel.writestr(member, b"stand-in")
    return folder / source.file_name


def test_the_recipe_comes_from_a_cudnn_wheel_beside_the_app_the_scripts_decide_which(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The wheels-cu11 app shows no DLL to the scan; its main.py loads cudnn64_8.dll.
    With the cuDNN 8.9.4.25 (CUDA 11) and 9.28 (CUDA 12) wheels beside it, init takes
    the release of the one the script's DLL is in; with no script naming one, the
    newest; with none beside it, the default recipe."""
    root = copy_examples(tmp_path, "wheels-cu11") / "wheels-cu11"
    cu11 = standin_wheel(root / "wheels", CU11)
    standin_wheel(root / "wheels", CU12)
    code, _, err = init(capsys, root / "app")
    assert code == 0, err
    data, text = written(root / "app.spec"), (root / "app.spec").read_text()
    assert data["runtime"]["recipe"] == CU11
    assert data["sources"] == {"cudnn": "wheels/" + cu11.name}
    assert f"{cu11.name} (in the project) is the own input of release {CU11}" in comments(text)
    assert "(cudnn64_8.dll)" in comments(text)

    (root / "app.spec").unlink()
    main = root / "app" / "main.py"
    main.write_text(main.read_text().replace('"cudnn64_8.dll"', "NAME"))
    assert init(capsys, root / "app")[0] == 0
    assert written(root / "app.spec")["runtime"]["recipe"] == CU12

    (root / "app.spec").unlink()
    shutil.rmtree(root / "wheels")
    assert init(capsys, root / "app")[0] == 0
    assert written(root / "app.spec")["runtime"]["recipe"] == SEED


@pytest.mark.parametrize("files, entry", [
    (["main.py", "app.py", "util.py"], "main.py"),
    (["__main__.py", "app.py"], "__main__.py"),
    (["app.py", "helpers.py"], "app.py"),
    (["serve.py"], "serve.py"),
    (["serve.py", "worker.py"], ""),
    ([], ""),
])
def test_the_entry_is_guessed_or_left_to_decide(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], files: list[str],
        entry: str) -> None:
    app = tmp_path / "svc"
    (app / "pkg").mkdir(parents=True)
    (app / "pkg" / "main.py").write_text("print('not at the top')\n")
    for name in files:
        (app / name).write_text("print('hello')\n")
    code, out, err = init(capsys, app, "--source", f"cudnn={STANDIN_ZIP}",
                          "--source", f"cuda={STANDIN_CUDA}")
    assert code == 0, err
    spec = load_spec(tmp_path / "app.spec")   # pack's own reader
    assert (spec.name, spec.entry) == ("svc", entry)
    text = (tmp_path / "app.spec").read_text()
    if not entry:
        assert '# entry = "main.py"' in text and "TO DECIDE" in out
        assert "entry: TO DECIDE" in text
    pack_ok(capsys, tmp_path / "app.spec")


@pytest.mark.parametrize("folders, name", [
    ("Ocr Server/src", "Ocr-Server"), ("tools/My App (v2)", "My-App-v2"),
    ("x/CON", "app"), ("x/...", "app")])
def test_the_name_is_the_folders_made_one_the_spec_accepts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], folders: str, name: str) -> None:
    app = tmp_path / folders
    app.mkdir(parents=True)
    code, _, err = init(capsys, app)
    assert code == 0, err
    assert load_spec(app.parent / "app.spec").name == name


def test_an_existing_spec_is_never_overwritten(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hello')\n")
    (tmp_path / "app.spec").write_text("# my own spec\n")
    (tmp_path / "other.spec").write_text("# another\n")
    before = snapshot(tmp_path)
    for extra in ([], ["--out", str(tmp_path / "other.spec")]):
        code, out, err = init(capsys, tmp_path / "app", *extra)
        assert code == 2 and out == ""
        assert "exists; bundler init never overwrites a file" in err and "--out" in err
        assert snapshot(tmp_path) == before
    # Nor through a link, even one pointing at nothing yet.
    (tmp_path / "link.spec").symlink_to(tmp_path / "elsewhere.spec")
    code, _, err = init(capsys, tmp_path / "app", "--out", tmp_path / "link.spec")
    assert code == 2 and "exists" in err and not (tmp_path / "elsewhere.spec").exists()
    # --out writes elsewhere, with the app's path relative to the spec written there.
    (tmp_path / "packaging").mkdir()
    code, _, err = init(capsys, tmp_path / "app", "--out", tmp_path / "packaging" / "x.spec")
    assert code == 0, err
    assert written(tmp_path / "packaging" / "x.spec")["app"]["path"] == "../app"
    assert (tmp_path / "app.spec").read_text() == "# my own spec\n"


def test_a_missing_app_folder_is_bad_input(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = init(capsys, tmp_path / "nothing")
    assert code == 2 and "no such folder" in err and not (tmp_path / "app.spec").exists()


def test_link_loops_beside_the_spec_do_not_stop_init(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The folder beside the spec's is searched too; a link loop there (or below the
    spec's folder) is not an input and not an error."""
    (tmp_path / "proj" / "app").mkdir(parents=True)
    (tmp_path / "proj" / "app" / "main.py").write_text("print('hello')\n")
    for folder in (tmp_path / "other", tmp_path / "proj" / "notes"):
        folder.mkdir()
        (folder / "a").symlink_to(folder / "b")
        (folder / "b").symlink_to(folder / "a")
    code, _, err = init(capsys, tmp_path / "proj" / "app")
    assert code == 0, err
    assert written(tmp_path / "proj" / "app.spec")["app"]["entry"] == "main.py"


def test_a_framework_installed_in_the_app_picks_its_cuda_and_components(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TensorFlow 2.10 loads CUDA 11 and cuDNN 8 DLLs by name (the framework table): the
    newest cuDNN 8 release for CUDA 11 that bundler fetches itself (8.9.5.29's PyPI
    wheel; 8.9.7.29 for CUDA 11 is a login-only zip, named as the newer choice), with
    the math libraries it loads."""
    dist_info(tmp_path / "app" / "Lib" / "site-packages", "tensorflow", "2.10.1")
    code, _, err = init(capsys, tmp_path / "app")
    assert code == 0, err
    data = written(tmp_path / "app.spec")
    assert data["runtime"]["recipe"] == "cudnn-8.9.5.29-cuda11-win-x64"
    assert ("newer: cudnn-8.9.7.29-cuda11-win-x64, NVIDIA's zip only"
            in comments((tmp_path / "app.spec").read_text()))
    assert {"cufft", "curand", "cusolver", "cusparse"} <= set(data["runtime"]["components"])
    text = (tmp_path / "app.spec").read_text()
    assert "    # cufft: cufft64_10.dll: loaded by tensorflow 2.10.1\n" in text
    assert "`bundler recipes cudnn8-win-x64`" in comments(text)


@pytest.fixture(scope="module")
def ort_app(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every file of the real onnxruntime-gpu 1.26.0 wheel, as pip installs it."""
    app = tmp_path_factory.mktemp("ort") / "ort-service" / "app"
    with zipfile.ZipFile(ort_wheel()) as wheel:
        wheel.extractall(app)
    return app


def init_ort(ort_app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    spec = tmp_path / "app.spec"
    code, _, err = init(capsys, ort_app, "--out", spec)
    assert code == 0, err
    return spec


def test_the_real_onnxruntime_wheel_gets_the_cuda_12_recipe_and_cufft_with_why(
        ort_app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = init_ort(ort_app, tmp_path, capsys)
    data = written(spec)
    assert data["runtime"]["recipe"] == CU12
    components = data["runtime"]["components"]
    assert {"cufft", "cublas", "cudart", "core"} <= set(components)
    assert not {"curand", "cusolver", "cusparse", "nvrtc"} & set(components)
    text = spec.read_text()
    provider = "onnxruntime/capi/onnxruntime_providers_cuda.dll"
    for line in (f"# cufft: cufft64_11.dll: imported by {provider}",
                 f"# core: cudnn64_9.dll: imported by {provider}",
                 f"# cublas: cublasLt64_12.dll: imported by {provider}",
                 "# cufft: cufft64_11.dll: loaded by onnxruntime-gpu 1.26.0"):
        assert f"    {line}\n" in text
    # Nothing at the top is a script: the entry is left to decide, commented.
    assert "entry" not in data["app"] and '# entry = "main.py"' in text
    # The runtime comes from NVIDIA's pinned wheels, which pack fetches: no path needed.
    assert data["sources"] == {}
    assert "nvidia-cufft-cu12 11.4.1.4: pack fetches it with pip" in comments(text)
    assert load_spec(spec).components == components


def test_a_source_given_to_init_is_written_even_if_no_component_uses_it_yet(
        ort_app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = tmp_path / "wheels" / "nvidia_curand_cu12-10.3.10.19-py3-none-win_amd64.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"a wheel of the user's")
    spec = tmp_path / "app.spec"
    code, _, err = init(capsys, ort_app, "--out", spec, "--source", f"curand={wheel}")
    assert code == 0, err
    data = written(spec)
    assert data["sources"] == {"curand": "wheels/" + wheel.name}
    assert "curand" not in data["runtime"]["components"]
    code, _, err = init(capsys, ort_app, "--out", tmp_path / "b.spec", "--source",
                        f"curnad={wheel}")
    assert code == 2 and "has no source 'curnad'" in err
    assert not (tmp_path / "b.spec").exists()


@pytest.mark.skipif(os.environ.get("BUNDLER_REAL_CUDNN") != "1",
                    reason="opt-in: set BUNDLER_REAL_CUDNN=1 (NVIDIA's CUDA 12 wheels, "
                           "about 1.5 GB, fetched once into the test cache)")
def test_the_onnxruntime_spec_packs_with_the_real_wheels_as_written(
        ort_app: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for sid in ("cudnn", "cublas", "cudart", "cufft"):   # each checked against pins.toml
        nvidia_wheel(CU12, sid)
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))   # the harness's, not the user's
    spec = init_ort(ort_app, tmp_path, capsys)
    assert "is in the wheel cache" in comments(spec.read_text())
    summary = pack_ok(capsys, spec)
    assert summary["recipe"] == CU12
    assert summary["selected_because"] == {}   # init named every component the scan wants
    shipped = {Path(f["path"]).name for f in summary["files"]}
    assert {"cudnn64_9.dll", "cufft64_11.dll", "cublasLt64_12.dll", "cudart64_12.dll"} <= shipped


@pytest.mark.skipif(os.environ.get("BUNDLER_REAL_CUDNN") != "1",
                    reason="opt-in: set BUNDLER_REAL_CUDNN=1 (NVIDIA's cuDNN 8.9 CUDA 11 "
                           "wheels, 1.16 GB, fetched once into the test cache)")
def test_the_wheels_cu11_example_packs_from_the_wheel_cache_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user who packed it once (the wheels are in the wheel cache, with the CUDA 12
    set of another app): init takes the cached release main.py's cudnn64_8.dll is in,
    writes no path (pack takes the cache's), and the spec packs as written."""
    for recipe, sids in ((CU11, ("cudnn", "cublas", "cudart")),
                         (CU12, ("cudnn", "cublas", "cudart"))):
        for sid in sids:   # each checked against pins.toml
            nvidia_wheel(recipe, sid)
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))   # the harness's, not the user's
    root = copy_examples(tmp_path, "wheels-cu11") / "wheels-cu11"
    code, out, err = init(capsys, root / "app")
    assert code == 0, err
    data, text = written(root / "app.spec"), (root / "app.spec").read_text()
    own = tomllib.loads((EXAMPLES / "wheels-cu11" / "app.spec").read_text())
    assert data["runtime"]["recipe"] == own["runtime"]["recipe"] == CU11
    assert data["sources"] == {} and "TO DECIDE" not in out
    assert "(in the wheel cache) is the own input of release" in comments(text)
    summary = pack_ok(capsys, root / "app.spec")
    shipped = {Path(f["path"]).name for f in summary["files"]}
    assert {"cudnn64_8.dll", "cudnn_cnn_infer64_8.dll", "cublas64_11.dll",
            "cudart64_110.dll"} <= shipped

    # As the example's own comment has them downloaded: wheels/ beside the app (links
    # to the cached files), with an empty wheel cache. init writes their paths.
    monkeypatch.setenv("BUNDLER_CACHE", str(tmp_path / "empty-cache"))
    (root / "app.spec").unlink()
    (root / "app.spec.lock").unlink()
    (root / "wheels").mkdir()
    for sid in ("cudnn", "cublas", "cudart"):
        wheel = nvidia_wheel(CU11, sid)
        try:
            os.link(wheel, root / "wheels" / wheel.name)
        except OSError:   # the test cache on another file system
            shutil.copyfile(wheel, root / "wheels" / wheel.name)
    assert init(capsys, root / "app")[0] == 0
    data = written(root / "app.spec")
    assert data["runtime"]["recipe"] == CU11
    assert data["sources"] == {sid: f"wheels/{nvidia_wheel(CU11, sid).name}"
                               for sid in ("cublas", "cudart", "cudnn")}
    code, _, err = run_cli(capsys, "pack", str(root / "app.spec"), "--offline")
    assert code == 0, err
