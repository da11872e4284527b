"""`bundler recipes --for FRAMEWORK[==VERSION]` and `bundler init` from a requirements
line read what a framework release needs from its wheel, without installing it (issue
43 item 1): the releases that serve it, fetchable first; init's spec packs as written.

The wheels are stand-ins (tests/harness/wheelkit.py) holding the real build-info files'
text (cupy_cuda12x-13.6.0's _wheel.json, onnxruntime_gpu-1.14.1's version_info.py,
tensorflow_gpu-2.4.4's build_info.py), found through --find-links: nothing is fetched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bundler.frameworks.facts import FrameworkFacts, fits
from bundler.init.wheel_facts import pip_platforms
from tests.harness.packing import run_cli
from tests.harness.wheelkit import make_wheel
from tests.integration.test_embedded_python import bundler_cache

CUPY_JSON = ('{"cuda": "12.x", "packaging": "pip", "cudnn": {"version": "8.8.1", '
             '"min_pypi_version": "8.8.1", "filenames": ["cudnn64_8.dll"]}}')
ORT_1_14 = 'use_cuda = True\ncuda_version = "11.6"\ncudnn_version = "8.5.0.96"\n'
TF_2_4 = ("import collections\nbuild_info = collections.OrderedDict([('cuda_version', "
          "'64_110'), ('cudart_dll_name', 'cudart64_110.dll'), ('cudnn_dll_name', "
          "'cudnn64_8.dll'), ('cudnn_version', '64_8'), ('is_cuda_build', True)])\n")
WHEELS = {("cupy_cuda12x", "cupy-cuda12x", "13.6.0"): ("cupy/.data/_wheel.json", CUPY_JSON),
          ("onnxruntime_gpu", "onnxruntime-gpu", "1.14.1"):
              ("onnxruntime/capi/version_info.py", ORT_1_14),
          ("tensorflow_gpu", "tensorflow-gpu", "2.4.4"):
              ("tensorflow/python/platform/build_info.py", TF_2_4)}


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    folder = tmp_path / "wheels"
    for (stem, name, version), (member, text) in WHEELS.items():
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"
        make_wheel(folder, {member: text.encode(),
                            f"{stem}-{version}.dist-info/METADATA": metadata.encode()},
                   name=stem, version=version)
    return folder


def recipes_for(capsys: pytest.CaptureFixture[str], wheels: Path, *args: str
                ) -> tuple[int, str, str]:
    return run_cli(capsys, "recipes", *args, "--find-links", str(wheels), "--offline")


def test_the_releases_that_serve_a_framework_fetchable_first(
        capsys: pytest.CaptureFixture[str], wheels: Path) -> None:
    code, out, err = recipes_for(capsys, wheels, "--for", "onnxruntime-gpu==1.14.1")
    assert code == 0, err
    assert ("onnxruntime-gpu 1.14.1: CUDA 11.6 (onnxruntime_gpu-1.14.1-py3-none-win_amd64.whl"
            ": onnxruntime/capi/version_info.py says 11.6), cuDNN 8.5.0.96 or newer") in out
    assert "from its wheel onnxruntime_gpu-1.14.1-py3-none-win_amd64.whl (find-links" in out
    listed = re.findall(r"^  (cudnn-\S+)\s+(.*)$", out, re.M)
    # the PyPI release init picks comes first, login-only zips after every wheel
    assert listed[0] == ("cudnn-8.9.5.29-cuda11-win-x64", "NVIDIA's PyPI wheel: pack fetches it")
    hows = [how.startswith("NVIDIA's PyPI") for _, how in listed]
    assert hows == sorted(hows, reverse=True) and not all(hows)
    code, out, _ = recipes_for(capsys, wheels, "--for", "onnxruntime-gpu==1.14.1", "--json")
    view = json.loads(out)
    assert view["schema"] == 1 and view["platform"] == "win-x64"
    (framework,) = view["frameworks"]
    assert (framework["cudnn"]["minimum"], framework["cuda"]["figure"]) == ("8.5.0.96", "11.6")
    assert "cufft64_10.dll" in framework["loads"]   # the table row's: init ships cuFFT
    facts = FrameworkFacts("onnxruntime-gpu", "1.14.1", cuda="11.6", cudnn="8.5.0.96")
    assert view["releases"] and all(fits(facts, r["cuda"], r["cudnn"]) is None
                                    for r in view["releases"])   # never one that does not fit


def test_natural_forms_and_a_requirements_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], wheels: Path) -> None:
    code, out, err = recipes_for(capsys, wheels, "cupy-cuda12x==13.6.0")   # NAME as --for
    assert code == 0, err
    listed = re.findall(r"^  cudnn-(8\.[\d.]+)-cuda12-win-x64 ", out, re.M)
    assert listed and all(tuple(map(int, v.split("."))) >= (8, 8, 1) for v in listed)
    assert re.search(r"^  cudnn-8\.9\.7\.29-cuda12-win-x64 ", out, re.M)
    assert "cuda11" not in out and "cudnn-9." not in out
    code, _, err = run_cli(capsys, "recipes", "onnxruntime")
    assert code == 2 and "onnxruntime is the CPU build" in err
    assert "bundler recipes --for onnxruntime-gpu" in err
    code, _, err = recipes_for(capsys, wheels, "--for", "numpy==2.0.0")
    assert code == 2 and "no GPU framework bundler knows" in err
    # a requirements file: its own --find-links, numpy passed over; two frameworks of two
    # CUDA majors: no release serves both, and it says so
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"--no-index\n--find-links {wheels.as_posix()}\nnumpy>=1.24\n"
                            "cupy-cuda12x==13.6.0\nonnxruntime-gpu==1.14.1\n")
    code, out, err = run_cli(capsys, "recipes", "--for", str(requirements), "--offline")
    assert code == 0, err
    assert "no win-x64 release bundler knows serves all of them" in out


def test_tensorflow_2_4_has_no_release_and_an_unread_wheel_falls_back_to_the_table(
        capsys: pytest.CaptureFixture[str], wheels: Path) -> None:
    code, out, err = recipes_for(capsys, wheels, "--for", "tensorflow-gpu==2.4.4", "--json")
    assert code == 0, err
    view = json.loads(out)
    assert view["releases"] == [] and "cusolver64_10.dll" in view["frameworks"][0]["loads"]
    code, out, err = recipes_for(capsys, wheels, "--for", "tensorflow==2.10.1")   # no wheel
    assert code == 0, err
    assert "bundler's framework table; its wheel was not read" in out
    assert re.search(r"^  cudnn-8\.9\.5\.29-cuda11-win-x64 ", out, re.M)
    code, _, err = recipes_for(capsys, wheels, "--for", "tensorflow==9.99.0")
    assert code == 2 and "tensorflow 9.99.0 (no wheel" in err and "--find-links" in err


def test_init_from_a_requirements_line_packs_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], wheels: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """cupy-cuda12x 13.6.0 (cuDNN 8.8.1, CUDA 12) pinned: init picks cuDNN 8 for CUDA 12
    from its wheel (a name alone said CUDA 12, and init took cuDNN 9, which pack refused);
    pack installs it and goes past the framework check to the inputs (--offline stops
    there), where the old choice is refused."""
    monkeypatch.setenv("BUNDLER_CACHE", bundler_cache(tmp_path / "cache")["BUNDLER_CACHE"])
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("import cupy\n")
    (app / "requirements.txt").write_text(
        f"--no-index\n--find-links {wheels.as_posix()}\ncupy-cuda12x==13.6.0\n")
    code, out, err = run_cli(capsys, "init", app, "--offline")
    assert code == 0, err
    spec = (tmp_path / "app.spec").read_text()
    assert 'recipe = "cudnn-8.9.7.29-cuda12-win-x64"' in spec, spec
    assert "cupy_cuda12x-13.6.0-py3-none-win_amd64.whl:" in spec
    code, _, err = run_cli(capsys, "pack", tmp_path / "app.spec", "--offline")
    assert code == 2 and "nvidia-cudnn-cu12==8.9.7.29" in err, err   # inputs, not the fit
    assert "does not fit" not in err
    (tmp_path / "app.spec").write_text(re.sub(
        r"\ncomponents = \[.*?\n\]\n", "\n", spec.replace("8.9.7.29", "9.28.0.42"), flags=re.S))
    code, _, err = run_cli(capsys, "pack", tmp_path / "app.spec", "--offline")
    assert code == 2 and "cupy-cuda12x 13.6.0 needs cuDNN 8 at 8.8.1" in err, err
    assert "use a release that fits: cudnn-8.9.7.29-cuda12-win-x64" in err

    # onnxruntime-gpu 1.14.1: cuFFT comes along (it was left out)
    (tmp_path / "app.spec").unlink()
    (app / "requirements.txt").write_text(
        f"--no-index\n--find-links {wheels.as_posix()}\nonnxruntime-gpu==1.14.1\n")
    assert run_cli(capsys, "init", app, "--offline")[0] == 0
    spec = (tmp_path / "app.spec").read_text()
    assert 'recipe = "cudnn-8.9.5.29-cuda11-win-x64"' in spec, spec
    assert "# cufft: cufft64_10.dll: loaded by onnxruntime-gpu 1.14.1" in spec


def test_a_fetched_wheel_leaves_only_what_was_read_in_the_wheel_cache(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], wheels: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pip (here told to take the stand-ins from a folder: no index) downloads the wheel;
    the cache keeps its METADATA and build-info file, not the wheel, and the next look
    reads them offline."""
    monkeypatch.setenv("BUNDLER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    code, out, err = run_cli(capsys, "recipes", "--for", "cupy-cuda12x==13.6.0")
    assert code == 0, err
    assert "(fetched with pip; its METADATA and build-info file kept in the wheel cache)" in out
    kept = tmp_path / "cache" / "frameworks" / "cupy_cuda12x-13.6.0-py3-none-win_amd64.whl"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*") if p.is_file()) \
        == ["cupy/.data/_wheel.json", "cupy_cuda12x-13.6.0.dist-info/METADATA"]
    assert not [p for p in (tmp_path / "cache").rglob("*.whl") if p.is_file()]   # no wheel
    assert [p.name for p in (tmp_path / "cache" / "frameworks").iterdir()] == [kept.name]
    monkeypatch.delenv("PIP_FIND_LINKS")
    code, out, err = run_cli(capsys, "recipes", "--for", "cupy-cuda12x==13.6.0", "--offline")
    assert code == 0 and "(the wheel cache)" in out, err
    # bundler cache shows it (two files, in the wheel cache) and prune removes it
    code, out, err = run_cli(capsys, "cache", "--json")
    assert code == 0, err
    (wheels_cache,) = [c for c in json.loads(out)["caches"] if c["name"] == "wheels"]
    assert wheels_cache["files"] == 2 and "frameworks/" in wheels_cache["keeps"]
    assert [path for path, _ in wheels_cache["removable"]] == [str(kept)]
    assert run_cli(capsys, "cache", "prune")[0] == 0 and not kept.exists()


def test_pip_is_asked_for_every_manylinux_tag_the_target_takes() -> None:
    """pip does not widen manylinux_2_27 itself: cupy-cuda12x 13.6.0's Linux wheel is
    tagged manylinux2014 only, and was 'not found' for linux-x64."""
    tags = pip_platforms("manylinux_2_27_x86_64")
    assert tags[0] == "manylinux_2_27_x86_64" and "manylinux_2_5_x86_64" in tags
    assert {"manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"} <= set(tags)
    assert "manylinux_2_28_x86_64" not in tags
    assert pip_platforms("win_amd64") == ["win_amd64"]


def test_a_cpu_build_needs_no_release_and_an_unreadable_file_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "wheels"
    for name, version, member, text in (
            ("tensorflow", "2.16.1", "tensorflow/python/platform/build_info.py",
             "build_info = {'is_cuda_build': False}\n"),
            ("onnxruntime_gpu", "1.40.0", "onnxruntime/capi/version_info.py",
             "use_cuda = True\ncuda_version = f(5)\n")):
        metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n"
        make_wheel(folder, {member: text.encode(),
                            f"{name}-{version}.dist-info/METADATA": metadata.encode()},
                   name=name, version=version)
    code, out, err = recipes_for(capsys, folder, "--for", "tensorflow==2.16.1")
    assert code == 0, err
    assert "a CPU build" in out and "no release is needed" in out
    assert "cudnn-" not in out
    code, _, err = recipes_for(capsys, folder, "--for", "onnxruntime-gpu==1.40.0")
    assert code == 2 and "build-info file cannot be read" in err and "line 2" in err, err


def test_linux_releases_from_a_manylinux_wheel(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--platform linux-x64 reads the framework's manylinux wheel (a win_amd64 one beside
    it is not taken) and lists linux-x64 releases."""
    folder = tmp_path / "wheels"
    for platform, figure in (("manylinux2014_x86_64", "8.8.1"), ("win_amd64", "8.0.5")):
        text = CUPY_JSON.replace("8.8.1", figure)
        metadata = "Metadata-Version: 2.1\nName: cupy-cuda12x\nVersion: 13.6.0\n\n"
        make_wheel(folder, {"cupy/.data/_wheel.json": text.encode(),
                            "cupy_cuda12x-13.6.0.dist-info/METADATA": metadata.encode()},
                   name="cupy_cuda12x", version="13.6.0", platform=platform)
    code, out, err = recipes_for(capsys, folder, "--for", "cupy-cuda12x==13.6.0",
                                 "--platform", "linux-x64", "--json")
    assert code == 0, err
    view = json.loads(out)
    assert view["platform"] == "linux-x64"
    assert view["frameworks"][0]["cudnn"]["minimum"] == "8.8.1"
    assert "manylinux2014_x86_64.whl" in view["frameworks"][0]["read_from"]
    assert view["releases"] and all(r["name"].endswith("-cuda12-linux-x64")
                                    and r["cudnn"].startswith("8.") for r in view["releases"])
