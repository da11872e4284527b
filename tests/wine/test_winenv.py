"""Tests of the Windows test harness itself (tests/harness/winenv, tests/harness/standin).

They prove, for real under Wine, what bundler's own tests rely on: stand-in
DLLs shaped like NVIDIA's, NVIDIA's archive layout, and a Windows CPython in
which a framework's bare-name LoadLibrary picks up a decoy cuDNN from PATH.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pefile
import pytest

from tests.harness import winenv
from tests.harness.winenv import PROJECT_ROOT, WindowsPython, to_windows_path
from tests.harness.winenv.build import (
    SUBLIB_REQUIRES,
    ZIP_DLLS,
    ZIP_HEADERS,
    ZIP_LIBS,
    Import,
    StandinRuntime,
    build_dll,
    build_nvcuda,
    cudnn_spec,
    make_nvidia_zip,
    sublib_name,
)

# tests/conftest.py provides the fixtures with `from tests.harness.winenv.fixtures import *`;
# load them here only without it (registering them twice makes pytest warn).
FIXTURES = "tests.harness.winenv.fixtures"
pytest_plugins = [] if FIXTURES in sys.modules else [FIXTURES]

CUDA10_NAMES = {"cudart64_101.dll", "cublas64_10.dll", "cublasLt64_10.dll"}
CUDA11_NAMES = {"cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll"}

# Runs under Windows CPython: what a framework sees when it loads cuDNN.
# argv: framework.dll, then DLLs to preload by absolute path (the bootstrap's job).
FRAMEWORK_PROBE = r"""
import ctypes, sys
for dll in sys.argv[2:]:
    ctypes.WinDLL(dll)
fw = ctypes.CDLL(sys.argv[1], use_last_error=True)
version = fw.framework_cudnn_version()
error = ctypes.get_last_error()
buf = ctypes.create_string_buffer(1024)
fw.framework_cudnn_path(buf, len(buf))
create = fw.framework_cudnn_create() if version > 0 else None
print(version, error, create, buf.value.decode(), sep="|")
"""


def _pe(path: Path) -> pefile.PE:
    return pefile.PE(str(path), fast_load=True)


def _imports(path: Path) -> set[str]:
    pe = _pe(path)
    pe.parse_data_directories([pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"]])
    return {entry.dll.decode() for entry in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])}


def _file_version(path: Path) -> tuple[tuple[int, ...], dict[str, str]]:
    pe = _pe(path)
    pe.parse_data_directories([pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_RESOURCE"]])
    fixed = pe.VS_FIXEDFILEINFO[0]
    numbers = (fixed.FileVersionMS >> 16, fixed.FileVersionMS & 0xFFFF,
               fixed.FileVersionLS >> 16, fixed.FileVersionLS & 0xFFFF)
    strings = {k.decode(): v.decode() for info in pe.FileInfo[0] if hasattr(info, "StringTable")
               for table in info.StringTable for k, v in table.entries.items()}
    return numbers, strings


def _probe(win_python: WindowsPython, framework: Path, *, path_dirs: list[Path],
           preload: Sequence[Path] = ()) -> tuple[int, int, str, str]:
    result = win_python.run_code(FRAMEWORK_PROBE, [framework, *preload], path_dirs=path_dirs)
    assert result.returncode == 0, result.stderr
    version, error, create, path = result.stdout.strip().split("|")
    return int(version), int(error), create, path


# --------------------------------------------------------------------------
# Stand-in DLLs (pefile only, no Wine)
# --------------------------------------------------------------------------


def test_cudnn_shim_imports_only_kernel32(standin_runtime: StandinRuntime) -> None:
    assert _imports(standin_runtime["cudnn64_8.dll"]) == {"KERNEL32.dll"}


def test_sublibraries_import_cuda_and_their_siblings(standin_runtime: StandinRuntime) -> None:
    for sub, requires in SUBLIB_REQUIRES.items():
        expected = CUDA10_NAMES | {sublib_name(dep) for dep in requires}
        assert _imports(standin_runtime[sublib_name(sub)]) == expected, sub


def test_cuda11_build_imports_cuda11_names(standin_runtime_cuda11: StandinRuntime) -> None:
    assert _imports(standin_runtime_cuda11["cudnn_ops_infer64_8.dll"]) == CUDA11_NAMES
    cublas = standin_runtime_cuda11["cublas64_11.dll"]
    assert _imports(cublas) == {"cudart64_110.dll", "cublasLt64_11.dll"}


def test_version_resource(standin_runtime: StandinRuntime) -> None:
    numbers, strings = _file_version(standin_runtime["cudnn64_8.dll"])
    assert numbers == (8, 0, 3, 33)
    assert strings["FileVersion"] == strings["ProductVersion"] == "8.0.3.33"
    assert strings["CompanyName"] == "bundler test stand-in"
    assert _file_version(standin_runtime["cudart64_101.dll"])[0] == (6, 14, 11, 10010)


def test_machine_types(standin_runtime: StandinRuntime, standin_cudnn_x86: Path) -> None:
    assert _pe(standin_runtime["cudnn64_8.dll"]).FILE_HEADER.Machine == 0x8664  # AMD64
    assert _pe(standin_cudnn_x86).FILE_HEADER.Machine == 0x14C  # i386
    assert _imports(standin_cudnn_x86) == {"KERNEL32.dll"}


def test_declared_imports_are_real(tmp_path: Path) -> None:
    winenv.require_toolchain()
    spec = cudnn_spec()
    spec = replace(spec, imports=(*spec.imports, Import("zlibwapi.dll", ("zlibVersion",))))
    assert _imports(build_dll(spec, tmp_path)) == {"KERNEL32.dll", "zlibwapi.dll"}


def test_builds_are_reproducible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    winenv.require_toolchain()
    spec = cudnn_spec(arch="x64")
    builds = []
    for n in range(2):  # two empty caches force two real compilations
        monkeypatch.setenv("BUNDLER_TEST_CACHE", str(tmp_path / f"cache{n}"))
        builds.append(build_dll(spec, tmp_path / f"out{n}").read_bytes())
    assert builds[0] == builds[1]


# --------------------------------------------------------------------------
# NVIDIA layouts
# --------------------------------------------------------------------------


def test_deflate64_zip_has_nvidia_layout(standin_zip: Path) -> None:
    with zipfile.ZipFile(standin_zip) as archive:
        files = [info for info in archive.infolist() if not info.is_dir()]
    assert len(files) == 31
    assert {info.compress_type for info in files} == {9}  # Deflate64
    names = {info.filename for info in files}
    assert {f"cuda/bin/{n}" for n in ZIP_DLLS} <= names
    assert {f"cuda/include/{n}" for n in ZIP_HEADERS} <= names
    assert {f"cuda/lib/x64/{n}" for n in ZIP_LIBS} <= names
    assert "cuda/NVIDIA_SLA_cuDNN_Support.txt" in names
    assert (len(ZIP_DLLS), len(ZIP_HEADERS), len(ZIP_LIBS)) == (7, 9, 14)


@pytest.mark.parametrize(("method", "compress_type"), [("deflate", 8), ("store", 0)])
def test_other_zip_methods(standin_runtime: StandinRuntime, tmp_path: Path,
                           method: str, compress_type: int) -> None:
    out = make_nvidia_zip(standin_runtime.dir, tmp_path / "cudnn.zip", method)  # type: ignore[arg-type]
    with zipfile.ZipFile(out) as archive:
        assert archive.testzip() is None
        assert {info.compress_type for info in archive.infolist()} == {compress_type}
        dll = archive.read("cuda/bin/cudnn64_8.dll")
    assert dll == standin_runtime["cudnn64_8.dll"].read_bytes()


def test_toolkit_layout(standin_toolkit: Path) -> None:
    assert {p.name for p in (standin_toolkit / "bin").iterdir()} == CUDA10_NAMES
    assert (standin_toolkit / "include").is_dir()
    assert standin_toolkit.name == "v10.1"


# --------------------------------------------------------------------------
# Harness helpers
# --------------------------------------------------------------------------


def test_to_windows_path() -> None:
    assert to_windows_path(Path("/work/app/x.dll")) == "Z:\\work\\app\\x.dll"


def test_require_wine_skips_or_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(winenv.shutil, "which", lambda name: None)
    monkeypatch.delenv("BUNDLER_REQUIRE_WINE", raising=False)
    assert not winenv.wine_available()
    with pytest.raises(pytest.skip.Exception, match="wine"):
        winenv.require_wine()
    monkeypatch.setenv("BUNDLER_REQUIRE_WINE", "1")
    with pytest.raises(pytest.fail.Exception, match="BUNDLER_REQUIRE_WINE=1 but missing wine"):
        winenv.require_wine()


# --------------------------------------------------------------------------
# Under Wine
# --------------------------------------------------------------------------


def test_windows_python_runs(win_python: WindowsPython) -> None:
    code = "import sys; print(sys.version); print(sys.platform); print(*sys.path, sep='|')"
    result = win_python.run(["-c", code], check=True)
    version, platform, path_line = result.stdout.splitlines()
    path = path_line.split("|")
    assert version.startswith("3.11") and "MSC" in version
    assert platform == "win32"
    assert to_windows_path(PROJECT_ROOT) in path  # so Windows Python can `import bundler`
    assert to_windows_path(win_python.site_packages) in path


def test_windows_wheels_import(win_python: WindowsPython) -> None:
    code = "import PyInstaller, pefile, inflate64, tomli, tqdm; print(PyInstaller.__version__)"
    result = win_python.run(["-c", code], check=True)
    assert result.stdout.strip().startswith("6.")


def test_script_folder_first_and_utf8_output(win_python: WindowsPython, tmp_path: Path) -> None:
    # A folder app's entry imports the bootstrap beside it, as under a regular python.exe.
    (tmp_path / "sibling.py").write_text("NAME = 'sibling'\n")
    (tmp_path / "main.py").write_text("import sibling\nprint(sibling.NAME, '\u00e9\u4e2d')\n")
    result = win_python.run([tmp_path / "main.py"], check=True)
    assert result.stdout.strip() == "sibling \u00e9\u4e2d"


def test_large_output_and_stderr(win_python: WindowsPython) -> None:
    code = "import sys; print('x' * 300000); print('err', file=sys.stderr); sys.exit(3)"
    result = win_python.run(["-c", code])
    assert result.returncode == 3
    assert len(result.stdout.strip()) == 300000
    assert result.stderr.strip() == "err"


def test_timeout(win_python: WindowsPython) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        win_python.run(["-c", "import time; time.sleep(60)"], timeout=1)


def test_framework_loads_decoy_from_path(win_python: WindowsPython, standin_framework: Path,
                                         decoy_cudnn_dir: Path,
                                         standin_runtime: StandinRuntime) -> None:
    # The problem bundler solves: a stray folder on PATH wins the bare-name load.
    version, _, create, path = _probe(win_python, standin_framework,
                                      path_dirs=[decoy_cudnn_dir, standin_runtime.dir])
    assert version == 7605
    assert path.lower() == to_windows_path(decoy_cudnn_dir / "cudnn64_8.dll").lower()
    assert create == "0"  # the decoy is self-consistent: nothing warns the user


def test_preloading_by_absolute_path_wins(win_python: WindowsPython, standin_framework: Path,
                                          decoy_cudnn_dir: Path,
                                          standin_runtime: StandinRuntime) -> None:
    # The fix: every runtime DLL loaded by absolute path, in dependency order.
    version, _, create, path = _probe(win_python, standin_framework, path_dirs=[decoy_cudnn_dir],
                                      preload=list(standin_runtime.files.values()))
    assert version == 8003
    assert path.lower() == to_windows_path(standin_runtime["cudnn64_8.dll"]).lower()
    assert create == "0"


def test_shim_alone_meets_decoy_sublibrary(win_python: WindowsPython, standin_framework: Path,
                                           decoy_cudnn_dir: Path,
                                           standin_runtime: StandinRuntime) -> None:
    # Preloading only the shim is not enough: it finds ops_infer by bare name.
    version, _, create, _ = _probe(win_python, standin_framework, path_dirs=[decoy_cudnn_dir],
                                   preload=[standin_runtime["cudnn64_8.dll"]])
    assert version == 8003
    assert create == "14"  # CUDNN_STATUS_VERSION_MISMATCH


def test_missing_cudnn_reports_windows_error(win_python: WindowsPython,
                                             standin_framework: Path) -> None:
    version, error, _, _ = _probe(win_python, standin_framework, path_dirs=[])
    assert (version, error) == (-1, 126)  # ERROR_MOD_NOT_FOUND


def test_driver_version_through_cudart(win_python: WindowsPython, standin_runtime: StandinRuntime,
                                       tmp_path: Path) -> None:
    code = (
        "import ctypes, sys\n"
        "rt = ctypes.CDLL(sys.argv[1]); v = ctypes.c_int(-1)\n"
        "print(rt.cudaDriverGetVersion(ctypes.byref(v)), v.value)\n"
    )
    cudart = standin_runtime["cudart64_101.dll"]
    no_driver = win_python.run_code(code, [cudart], check=True)
    assert no_driver.stdout.split() == ["0", "0"]  # no nvcuda.dll: version 0, like CUDA's runtime
    build_nvcuda(tmp_path, driver_cuda_version=10000)
    old_driver = win_python.run_code(code, [cudart], path_dirs=[tmp_path], check=True)
    assert old_driver.stdout.split() == ["0", "10000"]


def test_32bit_dll_is_refused_by_64bit_python(win_python: WindowsPython,
                                              standin_cudnn_x86: Path) -> None:
    code = (
        "import ctypes, sys\n"
        "try:\n    ctypes.WinDLL(sys.argv[1])\n"
        "except OSError as e:\n    print(e.winerror)\n"
    )
    result = win_python.run_code(code, [standin_cudnn_x86], check=True)
    assert result.stdout.strip() == "193"  # ERROR_BAD_EXE_FORMAT
