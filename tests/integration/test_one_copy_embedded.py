"""Issue 27 item 4, the embedded-python builder: `onnxruntime-gpu[cuda,cudnn]` brings
NVIDIA's nvidia-* wheels into the bundle's site-packages, and onnxruntime's
preload_dlls() would load their DLLs by full path beside the bundle's. The builder
leaves out what the bundle provides (the whole nvidia-cudnn-cu11 wheel; cuBLAS's two
DLLs of nvidia-cublas-cu11, whose nvblas64_10.dll the bundle lacks and keeps) and the
pack summary and --json say so. A Windows folder app carrying the same site-packages
is refused with the fix.

The wheels are stand-ins built here in NVIDIA's layout (nvidia/<lib>/bin/*.dll, their
dist-info named as NVIDIA's), with an onnxruntime-gpu whose extras require them; pip
resolves and installs them for win_amd64 from a local folder, as a user's requirements
file would from PyPI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.errors import SpecError
from bundler.pack.one_copy import LeftOutWheel
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from bundler.targets.registry import windows
from tests.harness.packing import make_workspace, run_cli
from tests.harness.wheelkit import make_wheel
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace

CUDNN = ("nvidia_cudnn_cu11", "nvidia-cudnn-cu11", "8.0.3.33")
CUBLAS = ("nvidia_cublas_cu11", "nvidia-cublas-cu11", "10.2.1.243")
SITE = Path("python") / "Lib" / "site-packages"
# No row of the framework table covers it (its rows start at 1.14, whose cuDNN 8.5 floor
# the seed's 8.0.3.33 stand-in runtime does not meet; no ORT release's row fits that seed).
ORT = "1.13.1"


def _metadata(name: str, version: str, *requires: str) -> bytes:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             "Provides-Extra: cuda", "Provides-Extra: cudnn", *requires]
    return ("\n".join(lines) + "\n").encode()


def _wheels(folder: Path, dll: bytes) -> Path:
    """onnxruntime-gpu (pure Python here) and the two NVIDIA wheels its extras name, at a
    release the framework table has no row for (ORT), so no framework minimum stands
    between the stand-in CUDA 10.1 runtime and the app."""
    assert windows().driver_table().framework_entry("onnxruntime-gpu", ORT) is None, (
        f"the framework table now has a row for onnxruntime-gpu {ORT}: pick a release it "
        "has none for, or a stand-in runtime that row serves")
    for (project, name, version), dlls in ((CUDNN, ["cudnn64_8.dll", "cudnn_ops_infer64_8.dll",
                                                    "cudnn_cnn_infer64_8.dll"]),
                                           (CUBLAS, ["cublas64_10.dll", "cublasLt64_10.dll",
                                                     "nvblas64_10.dll"])):
        lib = name.split("-")[1]
        members = {f"nvidia/{lib}/bin/{d}": dll for d in dlls}
        members |= {f"nvidia/{lib}/__init__.py": b"",
                    f"{project}-{version}.dist-info/METADATA": _metadata(name, version)}
        make_wheel(folder, members, name=project, version=version)
    make_wheel(folder, {
        "onnxruntime/__init__.py": b"def preload_dlls(cuda=True, cudnn=True): pass\n",
        f"onnxruntime_gpu-{ORT}.dist-info/METADATA": _metadata(
            "onnxruntime-gpu", ORT, 'Requires-Dist: nvidia-cublas-cu11; extra == "cuda"',
            'Requires-Dist: nvidia-cudnn-cu11; extra == "cudnn"')},
        name="onnxruntime_gpu", version=ORT, platform="any")
    return folder


@pytest.fixture()
def spec(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
         standin_framework: Path) -> Path:
    spec = embedded_workspace(tmp_path, standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = _wheels(tmp_path / "wheels", standin_framework.read_bytes())
    _calls_preload(tmp_path / "app" / "main.py")
    (tmp_path / "requirements.txt").write_text(
        f"--no-index\n--find-links {wheels.as_posix()}\nonnxruntime-gpu[cuda,cudnn]=={ORT}\n")
    return spec


def _calls_preload(script: Path) -> None:
    """The app calls onnxruntime.preload_dlls(), as onnxruntime's docs ask of apps that
    use the nvidia-* wheels: only then does onnxruntime load them by path."""
    script.write_text(script.read_text() + "\nimport onnxruntime\nonnxruntime.preload_dlls()\n")


def test_the_embedded_python_builder_leaves_out_what_the_bundle_provides(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))
    site = result.out / SITE
    assert (site / "onnxruntime" / "__init__.py").is_file()
    # the whole cuDNN wheel: its DLLs, its package and its dist-info
    assert not (site / "nvidia" / "cudnn").exists()
    assert not list(site.glob("nvidia_cudnn_cu11-*.dist-info"))
    # cuBLAS: the two DLLs the bundle provides; nvblas64_10.dll, which it lacks, stays
    assert sorted(p.name for p in (site / "nvidia" / "cublas" / "bin").iterdir()) == [
        "nvblas64_10.dll"]
    assert list(site.glob("nvidia_cublas_cu11-*.dist-info"))
    assert result.left_out_wheels == (
        LeftOutWheel("nvidia-cublas-cu11", CUBLAS[2], ("cublas64_10.dll", "cublasLt64_10.dll"),
                     whole=False),
        LeftOutWheel("nvidia-cudnn-cu11", CUDNN[2], ("cudnn64_8.dll", "cudnn_cnn_infer64_8.dll",
                                                     "cudnn_ops_infer64_8.dll"), whole=True))
    runtime = {Path(f.path).name for f in result.manifest.files}
    assert {"cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_cnn_infer64_8.dll",
            "cublas64_10.dll", "cublasLt64_10.dll"} <= runtime
    assert result.environment == "the app's own site-packages (python/Lib/site-packages)"
    # doctor agrees: one copy (nvblas64_10.dll, left in place, is not the bundle's)
    _, out, _ = run_cli(capsys, "doctor", result.out, "--json")
    bundle = [f for f in json.loads(out)["findings"] if "nvidia-* wheel" in f["message"]]
    assert [f["level"] for f in bundle] == ["ok"], out


def test_the_summary_and_json_say_what_was_left_out(
        spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in bundler_cache(tmp_path / "cache").items():
        monkeypatch.setenv(name, value)
    code, out, err = run_cli(capsys, "pack", spec, "--out", tmp_path / "one")
    assert code == 0, err
    assert ("  nvidia-cudnn-cu11 8.0.3.33: left out of the app; the bundle provides "
            "cudnn64_8.dll, cudnn_cnn_infer64_8.dll, cudnn_ops_infer64_8.dll, so the process "
            "maps one copy") in out
    assert ("  nvidia-cublas-cu11 10.2.1.243: cublas64_10.dll, cublasLt64_10.dll left out of "
            "the app; the bundle provides cublas64_10.dll, cublasLt64_10.dll, so the process "
            "maps one copy") in out
    code, out, err = run_cli(capsys, "pack", spec, "--out", tmp_path / "two", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["environment"] == "the app's own site-packages (python/Lib/site-packages)"
    assert {w["distribution"]: w["whole"] for w in summary["left_out_wheels"]} == {
        "nvidia-cublas-cu11": False, "nvidia-cudnn-cu11": True}


def test_allow_app_copies_keeps_the_wheels_and_doctor_names_them(
        spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The opt-out keeps them; the app then ships its own copies, which the spec allows,
    and `bundler doctor` of the bundle reports the second copies preload_dlls() maps."""
    spec.write_text(spec.read_text() + "\n[scan]\nallow_app_copies = true\n")
    result = pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))
    assert result.left_out_wheels == ()
    assert (result.out / SITE / "nvidia" / "cudnn" / "bin" / "cudnn64_8.dll").is_file()
    code, out, _ = run_cli(capsys, "doctor", result.out, "--json")
    problems = [f["message"] for f in json.loads(out)["findings"]
                if f["level"] == "problem" and f["about"] == "bundle"]
    assert code == 1 and len(problems) == 1, out
    assert problems[0].startswith(
        "the app's own site-packages (python/Lib/site-packages) holds nvidia-cublas-cu11 "
        "10.2.1.243 (cublas64_10.dll, cublasLt64_10.dll, in "), problems[0]
    assert (f"which onnxruntime-gpu {ORT} loads by path after the bootstrap ran: the process "
            "maps both those and the bundle's cublas64_10.dll, cublasLt64_10.dll, "
            "cudnn64_8.dll, cudnn_cnn_infer64_8.dll, cudnn_ops_infer64_8.dll") in problems[0]


def test_what_stands_in_for_the_left_out_wheels_is_selected(spec: Path, tmp_path: Path) -> None:
    """The bundle must provide every DLL left out: components the spec's own list lacks
    are named, as the app scan's are (exit 2), not silently missing from the app."""
    spec.write_text(spec.read_text().replace("[runtime]\n", '[runtime]\ncomponents = ["core"]\n'))
    with pytest.raises(SpecError) as refused:
        pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))
    message = refused.value.message
    assert message.startswith("[runtime] components = ['core'] leaves out what the app needs "
                              "from cudnn-8.0.3.33-cuda10.1-win-x64: "), message
    assert ("'cnn_infer' (cudnn_cnn_infer64_8.dll: in place of nvidia-cudnn-cu11 8.0.3.33, "
            "left out of the app)") in message


def test_a_windows_folder_app_carrying_them_is_refused(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The folder builder, for Windows: an app folder whose site-packages pip filled with
    onnxruntime-gpu[cuda,cudnn] for win_amd64 is refused with the fix, before the generic
    "the app ships its own" refusal, naming the wheels and onnxruntime-gpu."""
    workspace = make_workspace(tmp_path, standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = _wheels(tmp_path / "wheels", standin_framework.read_bytes())
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--find-links",
                    str(wheels), "--target", str(tmp_path / "app" / "site-packages"),
                    "--platform", "win_amd64", "--only-binary=:all:", "--no-compile",
                    "--disable-pip-version-check", f"onnxruntime-gpu[cuda,cudnn]=={ORT}"],
                   check=True, capture_output=True)
    # Without a call of preload_dlls() onnxruntime loads them by name: the modules the
    # bootstrap loaded. The app still ships its own copies, which pack refuses.
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2, err
    assert "the app ships its own cublasLt64_10.dll" in err
    _calls_preload(tmp_path / "app" / "main.py")
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2, err
    assert ("bundler: error: the app's own site-packages (site-packages) holds "
            "nvidia-cublas-cu11 10.2.1.243 (cublas64_10.dll, cublasLt64_10.dll); "
            "nvidia-cudnn-cu11 8.0.3.33 (cudnn64_8.dll, cudnn_cnn_infer64_8.dll, "
            f"cudnn_ops_infer64_8.dll), which onnxruntime-gpu {ORT} (preload_dlls() when the "
            "app calls it) loads by path after the bootstrap ran") in err
    assert "onnxruntime-gpu without [cuda,cudnn]" in err
    assert "pip uninstall nvidia-cublas-cu11 nvidia-cudnn-cu11" in err


def test_a_windows_folder_app_packed_here_says_no_environment_was_examined(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Packed on Linux, a Windows folder app without site-packages runs with a Python
    bundler cannot see: the summary says nothing was examined and how to name one."""
    workspace = make_workspace(tmp_path, standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    assert ("  environment examined for second copies: none (the app carries no "
            "site-packages, and the Python that runs it is not on this machine: name its "
            "site-packages with [scan] environment)") in out.splitlines()
