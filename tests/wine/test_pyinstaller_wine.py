"""Issue 3, end to end under Wine: the Windows CPython 3.11 runs
`python -m bundler pack` with builder = "pyinstaller", PyInstaller's Windows wheels
build a real onedir exe, and the exe runs with a decoy cuDNN on PATH.

Each mode is built once per module and its assertions share the build:
- script mode: bundler writes the PyInstaller spec; PyInstaller 6's _internal layout;
- own-spec mode: the app's PyInstaller spec with its own runtime hook, datas,
  hiddenimports, EXE/COLLECT names and the flat layout (contents_directory=".").

Both builds run with the decoy cuDNN folder and the CUDA toolkit's bin on PATH
and CUDA_PATH set: the app loads "cudnn64_8.dll" by bare name through ctypes,
which PyInstaller's scan resolves on PATH - so a bundle that took the decoy (or
a second copy of any runtime DLL) from the build machine fails these tests.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from bundler.formats.manifest import read_manifest
from tests.harness.packing import SEED, run_cli, snapshot
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.winpython import to_windows_path

APP_MAIN = textwrap.dedent('''\
    """A stand-in GPU app, frozen: reports which cuDNN its framework loaded."""
    import ctypes
    import json
    import os
    import sys

    import _cudnn_bootstrap

    # Bare names, as an app's frameworks use them: PyInstaller's ctypes scan
    # collects framework.dll from the build PATH (and would collect cudnn64_8.dll
    # from there too, if bundler let it see a CUDA folder).
    framework = ctypes.CDLL("framework.dll")
    cudnn = ctypes.WinDLL("cudnn64_8.dll")
    path = ctypes.create_string_buffer(1024)
    version = framework.framework_cudnn_version()
    framework.framework_cudnn_path(path, len(path))
    try:
        import helper_mod  # only there through the own spec's hiddenimports
        hidden = helper_mod.VALUE
    except ImportError:
        hidden = None
    labels = os.path.join(sys._MEIPASS, "labels", "labels.txt")
    print(json.dumps({
        "version": version, "path": path.value.decode("mbcs"),
        "direct_version": cudnn.cudnnGetVersion(), "PATH": os.environ.get("PATH", ""),
        "meipass": sys._MEIPASS, "hidden": hidden,
        "labels": open(labels).read() if os.path.exists(labels) else None,
        "user_hook_saw_bootstrap": globals().get("USER_HOOK_SAW_BOOTSTRAP"),
        "loaded_from": {d["file"]: d["loaded_from"]
                        for d in _cudnn_bootstrap.report()["libraries"]},
    }), flush=True)
''')

# The app's own runtime hook: bundler's must have run before it.
USER_HOOK = 'import sys\nUSER_HOOK_SAW_BOOTSTRAP = "_cudnn_bootstrap" in sys.modules\n'

OWN_PYINSTALLER_SPEC = textwrap.dedent('''\
    # The app's own PyInstaller spec. It also writes down the environment
    # PyInstaller runs in, for the test to check.
    import json
    import os

    with open(os.path.join(SPECPATH, "build-env.json"), "w") as handle:
        json.dump({"PATH": os.environ.get("PATH", ""),
                   "cuda_vars": [k for k in os.environ if k.upper().startswith("CUDA_PATH")]},
                  handle)

    a = Analysis(["src/main.py"], pathex=["lib"], hiddenimports=["helper_mod"],
                 datas=[("data/labels.txt", "labels")], runtime_hooks=["user_hook.py"])
    pyz = PYZ(a.pure)
    exe = EXE(pyz, a.scripts, [], exclude_binaries=True, name="ocr", console=True,
              contents_directory=".")
    coll = COLLECT(exe, a.binaries, a.datas, name="ocr-collect")
''')


@dataclass(frozen=True)
class Project:
    root: Path
    build_path: tuple[Path, ...]  # PATH while packing: framework, decoy, toolkit bin
    toolkit: Path


@dataclass(frozen=True)
class Frozen:
    spec: Path
    dist: Path
    exe: Path
    meipass: Path  # the folder sys._MEIPASS names: the runtime folder is inside it
    log: Path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
            standin_toolkit: Path, standin_framework: Path, decoy_cudnn_dir: Path) -> Project:
    root = tmp_path_factory.mktemp("frozen")
    for relpath, text in {"src/main.py": APP_MAIN, "lib/helper_mod.py": "VALUE = 42\n",
                          "data/labels.txt": "cat\ndog\n", "user_hook.py": USER_HOOK,
                          "ocr.spec": OWN_PYINSTALLER_SPEC}.items():
        (root / relpath).parent.mkdir(parents=True, exist_ok=True)
        (root / relpath).write_text(text)
    sources = (f'[sources]\ncudnn = "{windows(standin_zip)}"\n'
               f'cuda = "{windows(standin_toolkit)}"\n')
    for name, key in (("script", 'script = "src/main.py"'),
                      ("own", 'pyinstaller_spec = "ocr.spec"')):
        (root / f"{name}.spec").write_text(
            f'[app]\nname = "frozen-{name}"\nbuilder = "pyinstaller"\n{key}\n\n'
            f'[runtime]\nrecipe = "{SEED}"\nallow_unsigned = ["cudnn*.dll"]\n\n{sources}')
    return Project(root, (standin_framework.parent, decoy_cudnn_dir, standin_toolkit / "bin"),
                   standin_toolkit)


def windows(path: Path) -> str:
    return to_windows_path(path).replace("\\", "/")


# Wine 8 now and then refuses to start a process (CreateProcess: [WinError 1359]
# "Internal error"), in bundler's start of PyInstaller or in PyInstaller's own helper
# process: seen in 2 of 10 whole runs on 2026-12-07, both from README's venv (Windows
# itself not tried). Such a pack is run once more (a failed pack leaves nothing
# behind); any other failure, or the same twice, fails the test.
_WINE_START_FAILED = ("[WinError 1359]", "could not be started (")


def pack_under_wine(python: WindowsPython, project: Project, spec: str, *args: str):
    def run():
        return python.run(["-m", "bundler", "pack", spec, *args], cwd=project.root,
                          path_dirs=project.build_path,
                          env={"CUDA_PATH": to_windows_path(project.toolkit),
                               "CUDA_PATH_V10_1": to_windows_path(project.toolkit)},
                          timeout=900)
    result = run()
    said = result.stdout + result.stderr + _log_of(project, spec)
    if result.returncode != 0 and any(text in said for text in _WINE_START_FAILED):
        print(f"Wine failed to start a process; packing {spec} once more", file=sys.stderr)
        result = run()
    return result


def _log_of(project: Project, spec: str) -> str:
    log = project.root / "build" / f"bundler-frozen-{Path(spec).stem}" / "pyinstaller.log"
    return log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""


def frozen(python: WindowsPython, project: Project, mode: str, exe: str,
           contents: str) -> Frozen:
    result = pack_under_wine(python, project, f"{mode}.spec")
    assert result.returncode == 0, result.stdout + result.stderr
    dist = project.root / "dist" / f"frozen-{mode}"
    return Frozen(project.root / f"{mode}.spec", dist, dist / exe, dist / contents,
                  project.root / "build" / f"bundler-frozen-{mode}" / "pyinstaller.log")


@pytest.fixture(scope="module")
def script_app(win_python: WindowsPython, project: Project) -> Frozen:
    return frozen(win_python, project, "script", "frozen-script.exe", "_internal")


@pytest.fixture(scope="module")
def own_spec_app(win_python: WindowsPython, project: Project) -> Frozen:
    spec_before = (project.root / "ocr.spec").read_bytes()
    app = frozen(win_python, project, "own", "ocr.exe", ".")
    assert (project.root / "ocr.spec").read_bytes() == spec_before  # never modified
    return app


@pytest.fixture(params=["script", "own"])
def app(request: pytest.FixtureRequest) -> Frozen:
    return request.getfixturevalue({"script": "script_app", "own": "own_spec_app"}[request.param])


def run_frozen(python: WindowsPython, app: Frozen, decoy: Path) -> dict:
    result = python.run_exe(app.exe, path_dirs=[decoy], timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))


def test_frozen_app_loads_its_bundled_cudnn_despite_a_decoy_on_path(
        app: Frozen, win_python: WindowsPython, decoy_cudnn_dir: Path) -> None:
    seen = run_frozen(win_python, app, decoy_cudnn_dir)
    bundled = to_windows_path(app.meipass / "cudnn" / "cudnn64_8.dll").lower()
    assert seen["meipass"].lower() == to_windows_path(app.meipass).lower()
    # The framework's bare-name LoadLibraryA (PATH has the 7605 decoy) got ours.
    assert (seen["version"], seen["path"].lower()) == (8003, bundled)
    assert seen["direct_version"] == 8003
    assert seen["loaded_from"]["cudnn/cudnn64_8.dll"].lower() == bundled
    assert len(seen["loaded_from"]) == 10
    # PATH inside the app is exactly what a plain Windows process gets.
    plain = win_python.run_code("import os; print(os.environ['PATH'])",
                                path_dirs=[decoy_cudnn_dir], check=True)
    assert seen["PATH"] == plain.stdout.strip()
    assert to_windows_path(decoy_cudnn_dir).lower() in seen["PATH"].lower()


def test_each_runtime_dll_is_in_the_bundle_once(app: Frozen) -> None:
    manifest = read_manifest(app.meipass / "cudnn" / "manifest.json")
    names = [Path(f.path).name.lower() for f in manifest.files]
    everywhere = [p.name.lower() for p in app.dist.rglob("*") if p.is_file()]
    assert {name: everywhere.count(name) for name in names} == {name: 1 for name in names}
    # PyInstaller did look cudnn64_8.dll up on PATH (the decoy was there): it found nothing.
    log = app.log.read_text(encoding="utf-8", errors="replace")
    assert any("cudnn64_8.dll" in line and "ctypes" in line for line in log.splitlines())
    assert "PATH entries hidden from PyInstaller: none" not in log


def test_verify_checks_the_frozen_app(app: Frozen, project: Project,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "verify", app.dist)
    assert code == 0 and out.startswith("ok: 11 files match"), out
    manifest = read_manifest(app.meipass / "cudnn" / "manifest.json")
    bootstrap = manifest.bootstrap
    assert bootstrap.path == ""  # compiled into the exe: no file on disk to check
    assert bootstrap.module == "_cudnn_bootstrap"
    source = project.root / "build" / f"bundler-{app.dist.name}" / "hook" / "_cudnn_bootstrap.py"
    assert bootstrap.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()


def test_own_spec_is_used_as_it_is(own_spec_app: Frozen, win_python: WindowsPython,
                                   project: Project, decoy_cudnn_dir: Path) -> None:
    seen = run_frozen(win_python, own_spec_app, decoy_cudnn_dir)
    assert seen["user_hook_saw_bootstrap"] is True  # bundler's runtime hook ran first
    assert (seen["hidden"], seen["labels"]) == (42, "cat\ndog\n")
    assert sorted(p.name for p in own_spec_app.dist.glob("*.exe")) == ["ocr.exe"]
    # PyInstaller ran without the CUDA folders on PATH and without CUDA_PATH*.
    build_env = json.loads((project.root / "build-env.json").read_text())
    build_path = build_env["PATH"].lower().split(";")
    assert to_windows_path(project.build_path[0]).lower() in build_path  # framework: kept
    for hidden in project.build_path[1:]:
        assert to_windows_path(hidden).lower() not in build_path
    assert build_env["cuda_vars"] == []


def test_frozen_app_with_a_deleted_dll_names_it(script_app: Frozen, win_python: WindowsPython,
                                                tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(script_app.dist, broken)
    (broken / "_internal" / "cudnn" / "cudnn_ops_infer64_8.dll").unlink()  # "quarantined"
    result = win_python.run_exe(broken / script_app.exe.name, timeout=120)
    assert result.returncode != 0
    assert "cudnn/cudnn_ops_infer64_8.dll is missing" in result.stderr
    assert "bundler pack" in result.stderr


def test_failed_build_reports_pyinstaller_and_keeps_the_previous_bundle(
        own_spec_app: Frozen, win_python: WindowsPython, project: Project,
        tmp_path: Path) -> None:
    # Its own copy of the project: the failed build writes build/bundler-frozen-own/,
    # whose pyinstaller.log another test reads.
    mine = replace(project, root=tmp_path / "project")
    shutil.copytree(project.root, mine.root, ignore=shutil.ignore_patterns("build"))
    dist = mine.root / own_spec_app.dist.relative_to(project.root)
    (mine.root / "broken-pyi.spec").write_text("a = Analysis(['src/no_such_script.py'])\n")
    (mine.root / "broken.spec").write_text(
        own_spec_app.spec.read_text().replace('"ocr.spec"', '"broken-pyi.spec"'))
    before = snapshot(dist)
    result = pack_under_wine(win_python, mine, "broken.spec", "--out", to_windows_path(dist))
    assert result.returncode == 2
    assert "bundler: error:" in result.stderr and "PyInstaller failed" in result.stderr
    assert "no_such_script.py' not found" in result.stderr  # PyInstaller's own words
    assert "pyinstaller.log" in result.stderr
    assert snapshot(dist) == before
    assert not list(dist.parent.glob(".*staging*"))


def test_example_packs_and_runs(win_python: WindowsPython, tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    ignore = shutil.ignore_patterns("dist", "build", "*.lock", "app")
    for name in ("pyinstaller", "quickstart"):  # the example uses the quickstart's stand-ins
        shutil.copytree(examples / name, tmp_path / name, ignore=ignore)
    example = tmp_path / "pyinstaller"
    packed = win_python.run(["-m", "bundler", "pack", "app.spec"], cwd=example, timeout=900)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    exe = example / "dist" / "ocr-server" / "ocr-server.exe"
    assert f"run: {to_windows_path(exe)}".lower() in packed.stdout.lower()  # says what to run
    result = win_python.run_exe(exe, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("cuDNN 8003")
    assert to_windows_path(example / "dist" / "ocr-server" / "_internal" / "cudnn"
                           / "cudnn64_8.dll") in result.stdout.replace("\\\\", "\\")


def test_doctor_examines_the_frozen_app(app: Frozen, win_python: WindowsPython) -> None:
    result = win_python.run(["-m", "bundler", "doctor", app.dist, "--json"])
    report = json.loads(result.stdout)
    assert report["verify"]["ok"] is True, result.stdout
    findings = [(f["level"], f["message"]) for f in report["findings"]]
    loads = [m for level, m in findings if level == "ok" and "would load" in m]
    assert len(loads) == 10, findings
    # Wine has no NVIDIA driver: the only problem doctor may find here is that one.
    problems = [m for level, m in findings if level == "problem"]
    assert len(problems) == 1 and "no NVIDIA driver found" in problems[0], problems
