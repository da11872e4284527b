"""Frameworks describe themselves: the app scan reads what an installed framework's own
files say (bundler/frameworks/facts.py) and the library names its binaries load by name
(bundler/frameworks/loaded_names.py), and pack refuses a release that does not fit, before any input
is read.

The frameworks are stand-in wheels (tests/harness/wheelkit.py), installed as pip lays them out,
holding the real build-info files' text, read from the real win_amd64 wheels
(paddlepaddle_gpu-2.6.2, tensorflow_gpu-2.6.5, onnxruntime_gpu-1.20.0 and 1.16.3,
cupy_cuda12x-13.6.0), and small binaries carrying the name strings as Paddle's
libpaddle.pyd holds them (a loader import, then the names)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from bundler.errors import CheckError
from bundler.frameworks.facts import FrameworkFacts, fits, fitting_releases
from bundler.frameworks.loaded_names import loaded_by_name
from bundler.pack.app_needs import select_for_app
from bundler.pack.app_scan import scan_app
from bundler.recipe.load import find_recipe
from bundler.targets.registry import platform_for_release, windows
from tests.harness.packing import run_cli
from tests.harness.wheelkit import make_wheel
from tests.integration.test_app_scan import standin_setup
from tests.linux.test_linux_bundle import GRAPH, RECIPE, SHIM, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

PADDLE_VERSION = """\
# THIS FILE IS GENERATED FROM PADDLEPADDLE SETUP.PY
#
full_version     = '2.6.2'
major            = '2'
minor            = '6'
patch            = '2'
rc               = '0'
cuda_version     = '11.8'
cudnn_version    = '8.6.0'
xpu_version      = 'False'
istaged          = True
commit           = '8ce0de584c570589117e403322f3d1a0de6554e5'
with_mkl         = 'ON'

def cuda():
    return cuda_version
"""
TF_BUILD_INFO = """\
\"\"\"Auto-generated module providing information about the build.\"\"\"
from __future__ import absolute_import
import collections

build_info = collections.OrderedDict([('cpu_compiler', 'C:/Program Files (x86)/cl.exe'), \
('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), \
('cuda_version', '64_112'), ('cudart_dll_name', 'cudart64_112.dll'), \
('cudnn_dll_name', 'cudnn64_8.dll'), ('cudnn_version', '64_8'), ('is_cuda_build', True), \
('is_rocm_build', False), ('is_tensorrt_build', False), \
('msvcp_dll_names', 'msvcp140.dll,msvcp140_1.dll'), ('nvcuda_dll_name', 'nvcuda.dll')])
"""
ORT_VERSION_INFO = ('use_cuda = True\ncuda_version = "12.2.128"\ncudnn_version = "9"\n'
                    'vs2019 = False\n')
CUPY_WHEEL_JSON = ('{"cuda": "12.x", "packaging": "pip", "cudnn": {"version": "8.8.1", '
                   '"min_pypi_version": "8.8.1", "filenames": ["cudnn64_8.dll"]}}')
# What Paddle 2.6.2 loads by name (the measurement of libpaddle.pyd).
PADDLE_LOADS = ("cudnn64_8.dll", "cublas64_11.dll", "cusolver64_11.dll", "cusparse64_11.dll",
                "cufft64_10.dll", "nvjpeg64_11.dll")
LIBPADDLE = "paddle/base/libpaddle.pyd"
CU11 = "cudnn-8.9.4.25-cuda11-win-x64"
CU12 = "cudnn-9.28.0.42-cuda12-win-x64"


def loader_binary(names: tuple[str, ...], wide: bool = True, loader: bool = True) -> bytes:
    """A binary's bytes as a loader's are: the import name table's LoadLibraryExW, then
    the names, as UTF-16LE strings (L"cudnn64_8.dll", LoadLibraryW's) or ASCII."""
    head = b"MZ\x90\x00" + b"\x00" * 60 + (b"KERNEL32.dll\x00LoadLibraryExW\x00" if loader
                                            else b"KERNEL32.dll\x00GetProcAddress\x00")
    encoded = [n.encode("utf-16-le") if wide else n.encode() for n in names]
    return head + b"\x00\x00".join(encoded) + b"\x00\x00"


def install(site: Path, name: str, version: str, members: dict[str, str | bytes]) -> Path:
    """A wheel of `members`, unpacked into `site` as pip installs it (its dist-info too)."""
    data = {k: v.encode() if isinstance(v, str) else v for k, v in members.items()}
    wheel = make_wheel(site.parent / "wheels", data, name=name.replace("-", "_"),
                       version=version)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    (site / f"{name.replace('-', '_')}-{version}.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return site


def paddle_app(root: Path, version: str = "2.6.2") -> Path:
    app = root / "app"
    install(app / "Lib" / "site-packages", "paddlepaddle-gpu", version,
            {"paddle/version/__init__.py": PADDLE_VERSION,
             LIBPADDLE: loader_binary(PADDLE_LOADS)})
    return app


def write_spec(root: Path, recipe: str, sources: str = "") -> Path:
    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\n\n[runtime]\nrecipe = "{recipe}"\n'
                    f"\n[sources]\n{sources}\n")
    return spec


def test_paddle_loads_its_libraries_by_name_as_its_binary_says(tmp_path: Path) -> None:
    """A Paddle release the table has no row for (3.0.0): every library comes from the
    names libpaddle.pyd holds and the CUDA/cuDNN from paddle/version/__init__.py."""
    scan = scan_app(paddle_app(tmp_path, "3.0.0"), platform=windows())
    by_name = {n.dll: n.reason for n in scan.needs}
    # nvjpeg64_11 too: the CUDA 11 runtime set's optional nvjpeg component ships it
    assert by_name == {dll: f"loaded by name by Lib/site-packages/{LIBPADDLE}"
                       for dll in PADDLE_LOADS}
    (facts,) = scan.framework_facts
    assert (facts.distribution, facts.cuda, facts.cudnn, facts.row) == (
        "paddlepaddle-gpu", "11.8", "8.6.0", None)
    assert facts.file == "Lib/site-packages/paddle/version/__init__.py"
    selection = select_for_app(find_recipe(CU11, tmp_path), [], [], scan.needs, scan, False)
    assert {"cufft", "cusolver", "cusparse", "nvjpeg"} <= set(selection.reasons)
    assert {"cublas", "cufft", "cusolver", "cusparse", "nvjpeg"} <= {
        c.name for c in selection.components}


@pytest.mark.parametrize("recipe, said", [
    (CU12, "needs cuDNN 8 at 8.6.0 or newer (Lib/site-packages/paddle/version/__init__.py "
           "says 8.6.0); this runtime's cuDNN is 9.28.0.42"),
    ("cudnn-8.0.5.39-cuda11-win-x64",
     "needs cuDNN 8 at 8.6.0 or newer (Lib/site-packages/paddle/version/__init__.py says "
     "8.6.0); this runtime's cuDNN is 8.0.5.39"),
    ("cudnn-8.9.7.29-cuda12-win-x64",
     "is built for CUDA 11.8 (Lib/site-packages/paddle/version/__init__.py says 11.8)")])
def test_a_release_paddle_does_not_fit_is_refused_before_any_input_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], recipe: str, said: str) -> None:
    """The refusal names the framework, its file and the minimum, and releases that fit;
    the spec's input does not exist: it was never opened."""
    paddle_app(tmp_path, "3.0.0")
    spec = write_spec(tmp_path, recipe, 'cudnn = "nowhere/cudnn.zip"')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2, err
    assert f"{recipe} does not fit the app: paddlepaddle-gpu 3.0.0 {said}" in err
    assert ("use a release that fits: cudnn-8.9.5.29-cuda11-win-x64, cudnn-8.9.4.25-cuda11-"
            "win-x64 (NVIDIA's PyPI wheels: pack fetches them); cudnn-8.9.7.29-cuda11-win-x64 "
            "(NVIDIA's zip") in err, err
    assert "nowhere" not in err and not (tmp_path / "dist").exists()


def test_tensorflow_2_9_gets_all_eight_of_its_gpu_check(tmp_path: Path) -> None:
    app = tmp_path / "app"
    install(app / "Lib" / "site-packages", "tensorflow-gpu", "2.9.3",
            {"tensorflow/python/platform/build_info.py": TF_BUILD_INFO})
    scan = scan_app(app, platform=windows())
    assert {n.dll for n in scan.needs} == {
        "cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", "cufft64_10.dll",
        "curand64_10.dll", "cusolver64_11.dll", "cusparse64_11.dll", "cudnn64_8.dll"}
    named = [n.reason for n in scan.needs if n.dll == "cudnn64_8.dll"]
    assert "named in Lib/site-packages/tensorflow/python/platform/build_info.py" in named
    (facts,) = scan.framework_facts
    assert (facts.cuda, facts.cudnn, facts.loads) == ("11.2", "8", ("cudnn64_8.dll",))
    selection = select_for_app(find_recipe(CU11, tmp_path), [], [], scan.needs, scan, False)
    assert {"cufft", "curand", "cusolver", "cusparse"} <= set(selection.reasons)


def test_tensorflow_takes_the_tables_cudnn_minimum_over_its_files(tmp_path: Path) -> None:
    """build_info.py says cuDNN '64_8' (any 8); TensorFlow >= 2.5 checks for >= 8.1."""
    app = tmp_path / "app"
    install(app / "site-packages", "tensorflow-gpu", "2.6.5",
            {"tensorflow/python/platform/build_info.py": TF_BUILD_INFO})
    (facts,) = scan_app(app, platform=windows()).framework_facts
    assert fits(facts, "11", "8.1.0.77") is None
    assert fits(facts, "11", "8.0.5.39") == (
        "tensorflow-gpu 2.6.5 needs cuDNN 8 at 8.1 or newer (bundler's framework table, row "
        "'TensorFlow 2.5-2.9', says 8.1); this runtime's cuDNN is 8.0.5.39")


def test_onnxruntime_says_cudnn_9_and_a_cudnn_8_release_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A release no table row covers (1.40.0): its version_info.py alone decides."""
    install(tmp_path / "app" / "site-packages", "onnxruntime-gpu", "1.40.0",
            {"onnxruntime/capi/version_info.py": ORT_VERSION_INFO})
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU11))
    assert code == 2
    assert ("onnxruntime-gpu 1.40.0 needs cuDNN 9 at 9 or newer (site-packages/onnxruntime/"
            "capi/version_info.py says 9); this runtime's cuDNN is 8.9.4.25") in err
    assert "use a release that fits: cudnn-9." in err and "-cuda12-win-x64" in err


def test_onnxruntime_1_16_says_cudnn_8_and_the_table_says_8_5(tmp_path: Path) -> None:
    """The real 1.16.3 version_info.py says "8"; ORT's CUDA EP requirements say 8.5."""
    install(tmp_path / "app" / "site-packages", "onnxruntime-gpu", "1.16.3",
            {"onnxruntime/capi/version_info.py": 'use_cuda = True\ncuda_version = "11.8.0"\n'
                                                 'cudnn_version = "8"\nvs2019 = False\n'})
    (facts,) = scan_app(tmp_path / "app", platform=windows()).framework_facts
    assert (facts.cuda, facts.cudnn) == ("11.8.0", "8")
    assert fits(facts, "11", "8.5.0.96") is None
    assert "(bundler's framework table, row 'onnxruntime-gpu 1.16-1.17 (CUDA 11.8)', says " \
           "8.5); this runtime's cuDNN is 8.2.4.15" in (fits(facts, "11", "8.2.4.15") or "")


def test_cupy_and_torch_files_are_read(tmp_path: Path) -> None:
    site = tmp_path / "app" / "site-packages"
    install(site, "cupy-cuda12x", "13.6.0", {"cupy/.data/_wheel.json": CUPY_WHEEL_JSON})
    install(site, "torch", "2.5.1+cu121",
            {"torch/version.py": "__version__ = '2.5.1+cu121'\nfrom typing import Optional\n"
                                 "cuda: Optional[str] = '12.1'\nhip = None\n"})
    cupy, torch = scan_app(tmp_path / "app", platform=windows()).framework_facts
    assert (cupy.cuda, cupy.cudnn, torch.cuda) == ("12", "8.8.1", "12.1")
    assert fits(cupy, "12", "8.8.0.121") is not None and fits(cupy, "12", "8.9.7.29") is None
    assert fits(torch, "11", "8.0.5.39") is None   # torch ships its own cuDNN


def test_a_build_info_file_that_cannot_be_read_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    install(tmp_path / "app" / "site-packages", "onnxruntime-gpu", "1.20.0",
            {"onnxruntime/capi/version_info.py": "use_cuda = True\ncuda_version = (\n"})
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12))
    assert code == 2
    assert ("onnxruntime-gpu 1.20.0's build-info file cannot be read "
            "(site-packages/onnxruntime/capi/version_info.py: ") in err


def test_a_cpu_build_needs_nothing(tmp_path: Path) -> None:
    install(tmp_path / "app" / "site-packages", "paddlepaddle-gpu", "3.0.0",
            {"paddle/version/__init__.py": PADDLE_VERSION.replace("'11.8'", "'False'")
             .replace("'8.6.0'", "'False'")})
    (facts,) = scan_app(tmp_path / "app", platform=windows()).framework_facts
    assert not facts.gpu_build and fits(facts, "12", "9.1.0.70") is None


@pytest.mark.parametrize("built, runtime, same", [
    ("11.8", "11", True), ("11.2", "12", False), ("10.1", "10.1", True),
    ("10.1", "10.2", False), ("10.2", "10", True), ("12.2.128", "12.9", True)])
def test_cuda_families(built: str, runtime: str, same: bool) -> None:
    facts = FrameworkFacts("x", "1", "x/version.py", cuda=built)
    assert (fits(facts, runtime, "") is None) == same


def test_the_hint_suggests_the_newest_fitting_releases() -> None:
    paddle = FrameworkFacts("paddlepaddle-gpu", "2.2.2", "v.py", cuda="10.2", cudnn="7.6.5")
    assert [r.name for r in fitting_releases([paddle], "win-x64")] == [
        "cudnn-7.6.5.32-cuda10.2-win-x64"]


def test_names_are_found_in_ascii_and_utf16_and_only_beside_a_loader(tmp_path: Path) -> None:
    binary = tmp_path / "x.pyd"
    binary.write_bytes(loader_binary(("cublas64_11.dll",), wide=False)
                       + loader_binary(("cudnn64_8.dll", "cupti64_112.dll")))
    assert loaded_by_name(binary, windows()).names == ("cublas64_11.dll", "cudnn64_8.dll")
    binary.write_bytes(loader_binary(("cudnn64_8.dll",), loader=False))
    assert loaded_by_name(binary, windows()).names == ()


@pytest.mark.parametrize("loader", [b"LoadLibraryA\x00", b"LoadLibraryExW\x00", b"dlopen\x00"])
def test_a_loader_named_after_look_alikes_still_counts(tmp_path: Path, loader: bytes) -> None:
    """A loader's name is found by its literal start, then checked whole: the names that
    only start like one (LoadLibraryFoo, dlopenx) before it do not hide it."""
    binary = tmp_path / "x.pyd"
    binary.write_bytes(loader_binary(("cudnn64_8.dll",), loader=False)
                       + b"LoadLibraryFoo\x00dlopenx\x00LoadLibrary\x00" + loader)
    assert loaded_by_name(binary, windows()).names == ("cudnn64_8.dll",)
    binary.write_bytes(loader_binary(("cudnn64_8.dll",), loader=False)
                       + b"LoadLibraryFoo\x00dlopenx\x00LoadLibrary\x00")
    assert loaded_by_name(binary, windows()).names == ()


def test_several_versions_of_one_library_are_fallbacks_not_needs(tmp_path: Path) -> None:
    binary = tmp_path / "x.pyd"
    binary.write_bytes(loader_binary(("cudnn64_7.dll", "cudnn64_8.dll", "cufft64_10.dll")))
    found = loaded_by_name(binary, windows())
    assert found.names == ("cufft64_10.dll",)
    assert found.alternatives == ("cudnn64_7.dll", "cudnn64_8.dll")


def test_of_a_fallback_list_the_name_a_runtime_ships_is_demanded(tmp_path: Path) -> None:
    """Paddle's loader (dynamic_loader.cc) tries each name of such a list in turn: one of
    each is a name a CUDA 11 runtime has."""
    binary = tmp_path / "libpaddle.pyd"
    binary.write_bytes(loader_binary(("cublas64_118.dll;cublas64_11.dll",
                                      "curand64_118.dll;curand64_11.dll;curand64_10.dll"),
                                     wide=False))
    found = loaded_by_name(binary, windows())
    assert found.names == ("cublas64_11.dll", "curand64_10.dll")
    # curand64_11/118 are no CUDA library's names (windows.toml): never candidates
    assert found.alternatives == ("cublas64_118.dll",)


def test_a_name_across_two_pieces_of_a_large_binary_is_found(tmp_path: Path) -> None:
    binary = tmp_path / "big.pyd"
    name = "cusolver64_11.dll".encode("utf-16-le")
    cut = (8 << 20) - 9   # the name straddles the first 8 MiB piece's end
    binary.write_bytes(loader_binary(()) + b"\x01" * (cut - len(loader_binary(())))
                       + name + b"\x00\x00" + b"\x01" * 1000)
    assert loaded_by_name(binary, windows()).names == ("cusolver64_11.dll",)


def test_pack_without_frameworks_is_unchanged(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    scan = scan_app(tmp_path / "app", platform=windows())
    assert scan.framework_facts == () and scan.needs == ()
    with pytest.raises(CheckError):
        from bundler.frameworks.facts import refuse_unfit
        refuse_unfit([FrameworkFacts("a", "1", "f", unreadable="f: bad")], "r", "12", "9",
                     "win-x64")


@linux_with_gcc
def test_doctor_of_a_bundle_names_the_framework_its_runtime_does_not_fit(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bundle (cuDNN 9.19 / CUDA 13) whose site-packages later gains Paddle 3.0.0
    (built for CUDA 11.8 / cuDNN 8.6.0) and onnxruntime-gpu (CUDA 13 / cuDNN 9): doctor
    judges each by its own file, with pack's rule."""
    nvidia = tmp_path / "nvidia" / "cudnn" / "lib"
    _library(nvidia, "libcudnn_graph.so.9", GRAPH.replace("MARKER", "1"))
    _library(nvidia, "libcudnn.so.9", SHIM, "-ldl")
    (tmp_path / "standin.toml").write_text(RECIPE)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hello')\n")
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    f'recipe = "standin.toml"\n[sources]\nnvidia = "{tmp_path / "nvidia"}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    bundle = tmp_path / "dist" / "app"
    site = bundle / "site-packages"
    install(site, "paddlepaddle-gpu", "3.0.0", {"paddle/version/__init__.py": PADDLE_VERSION})
    install(site, "onnxruntime-gpu", "1.40.0", {"onnxruntime/capi/version_info.py":
                                                ORT_VERSION_INFO.replace("12.2.128", "13.0")})
    code, out, _ = run_cli(capsys, "doctor", str(bundle), "--json")
    findings = [f for f in json.loads(out)["findings"] if f["about"] == "framework"]
    assert code == 1
    assert [(f["level"], f["message"]) for f in findings] == [
        ("ok", "onnxruntime-gpu 1.40.0 runs on the bundle's CUDA 13.0 / cuDNN 9.19.0.56 "
               "(cuDNN >= 9, site-packages/onnxruntime/capi/version_info.py)"),
        ("problem", "standin-cudnn-linux-x64: paddlepaddle-gpu 3.0.0 needs cuDNN 8 at 8.6.0 "
                    "or newer (site-packages/paddle/version/__init__.py says 8.6.0); this "
                    "runtime's cuDNN is 9.19.0.56")]
    assert findings[1]["hint"].startswith(
        "re-pack with a release that fits: cudnn-8.9.6.50-cuda11-linux-x64")


def test_a_paddle_2_6_2_app_packs_with_what_its_binary_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end: Paddle 2.6.2 (its real version file, a libpaddle.pyd holding the names)
    packed with a CUDA 11 cuDNN 8.9 release (stand-in wheels shaped like NVIDIA's): the
    bundle holds what the binary loads by name, and the summary says so."""
    paddle_app(tmp_path)
    components = ["cudart", "cublas", "core", "ops_infer", "ops_train", "cnn_infer",
                  "cnn_train", "adv_infer", "adv_train", "cufft", "cusolver", "cusparse",
                  "nvjpeg"]
    ref, wheels = standin_setup(tmp_path, CU11, components)
    sources = "\n".join(f'{sid} = "{p.as_posix()}"' for sid, p in wheels.items())
    spec = write_spec(tmp_path, ref, sources)
    spec.write_text(spec.read_text().replace("[sources]",
                                             'allow_unsigned = ["*.dll"]\n\n[sources]'))
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    for component, dll in (("cufft", "cufft64_10.dll"), ("cusolver", "cusolver64_11.dll"),
                           ("cusparse", "cusparse64_11.dll"), ("nvjpeg", "nvjpeg64_11.dll")):
        assert (f"{component}: {dll}: loaded by name by Lib/site-packages/{LIBPADDLE}"
                in out), out
    runtime = tmp_path / "dist" / "app" / "cudnn"
    assert {"cudnn64_8.dll", "cublas64_11.dll", "cusolver64_11.dll", "cusparse64_11.dll",
            "cufft64_10.dll", "nvjpeg64_11.dll"} <= {p.name for p in runtime.iterdir()}
    # An earlier bundle left inside the app folder is output, not app: its (here altered)
    # Paddle is not the app's and does not refuse the release.
    stale = tmp_path / "app" / "A_old"
    shutil.copytree(tmp_path / "dist" / "app", stale, symlinks=True)
    version_file = stale / "Lib" / "site-packages" / "paddle" / "version" / "__init__.py"
    version_file.write_text(PADDLE_VERSION.replace("'8.6.0'", "'9.1.0'"))
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    # the first check, by a catalogue release's name, leaves it out too (the missing
    # input is what stops this pack, later)
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU11, 'cudnn = "no/x.zip"'))
    assert code == 2 and "does not fit" not in err, err


def test_sonames_a_linux_binary_dlopens_are_found(tmp_path: Path) -> None:
    linux = platform_for_release("linux-x64")
    assert linux is not None
    binary = tmp_path / "libframework.so"
    binary.write_bytes(b"\x7fELF" + b"\x00" * 60 + b"dlopen\x00libcublas.so.12\x00"
                       b"libcudnn.so.9\x00libcupti.so.12\x00libfoo.so.1\x00")
    assert loaded_by_name(binary, linux).names == ("libcublas.so.12", "libcudnn.so.9")
