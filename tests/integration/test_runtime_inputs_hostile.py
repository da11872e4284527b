"""What a spec's own runtime inputs claim about themselves is checked, and never hangs
or crashes bundler (issue 28, item 6): a site-packages whose CUDA runtime dist-info
names another CUDA major (or no version at all), a toolkit whose version.json is a
named pipe, a link to /dev/zero, or nested 100,000 deep. Each is refused in one line
naming the file (exit 2): never exit 0 with wrong metadata, exit 3, or a hang."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.recipe.load import find_recipe
from tests.harness.packing import PROJECT_ROOT, run_cli
from tests.integration.test_hostile_files import make_fifo, needs_fifo, run_bounded
from tests.integration.test_runtime_inputs import app_with, installer_folder, toolkit_folder

LINUX_RELEASE = "cudnn-8.9.7.29-cuda12-linux-x64"
WINDOWS_RELEASE = "cudnn-9.1.0.70-cuda12-win-x64"


def _site_packages(root: Path, dist_info: str) -> Path:
    """A site-packages holding a CUDA runtime as pip installs it, its dist-info named
    `dist_info` (libraries are placeholders: the refusals come before they are read)."""
    site = root / "site-packages"
    (site / "nvidia" / "cuda_runtime" / "lib").mkdir(parents=True)
    (site / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.12").write_bytes(b"\x7fELF")
    (site / dist_info / "licenses").mkdir(parents=True)
    (site / dist_info / "licenses" / "License.txt").write_text("licence")
    return site


def test_an_installed_runtime_of_the_release_cuda_gives_the_bundle_its_version(
        tmp_path: Path) -> None:
    site = _site_packages(tmp_path, "nvidia_cuda_runtime_cu12-12.4.127.dist-info")
    recipe = find_recipe(LINUX_RELEASE, PROJECT_ROOT, {"cudart": site})
    assert recipe.cuda == "12.4"


def test_an_installed_runtime_of_another_cuda_major_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It would have set the bundle's CUDA to 11.8 and its driver minimum to 452.39
    under a CUDA 12 release, as a CUDA 11.8 toolkit folder is refused for."""
    site = _site_packages(tmp_path, "nvidia_cuda_runtime_cu12-11.8.89.dist-info")
    with pytest.raises(SourceError, match=r"holds the CUDA 11\.8\.89 runtime, but the "
                                          r"release is built for CUDA 12"):
        find_recipe(LINUX_RELEASE, PROJECT_ROOT, {"cudart": site})
    code, _, err = run_cli(capsys, "recipes", LINUX_RELEASE)   # the plain set still shows
    assert code == 0, err


@pytest.mark.parametrize("version", ["", "abc", "12", "1" * 200],
                         ids=["empty", "letters", "no-dot", "200-digits"])
def test_a_dist_info_that_names_no_release_is_refused(tmp_path: Path, version: str) -> None:
    site = _site_packages(tmp_path, f"nvidia_cuda_runtime_cu12-{version}.dist-info")
    with pytest.raises(SourceError, match="names no release") as caught:
        find_recipe(LINUX_RELEASE, PROJECT_ROOT, {"cudart": site})
    assert len(caught.value.message) < 600


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")
@pytest.mark.parametrize("dist_info, says", [
    ("nvidia_cuda_runtime_cu12-.dist-info", "names no release"),
    ("nvidia_cuda_runtime_cu12-11.8.89.dist-info", "holds the CUDA 11.8.89 runtime")])
def test_pack_refuses_them_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       dist_info: str, says: str) -> None:
    site = _site_packages(tmp_path, dist_info)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    spec = tmp_path / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    f'recipe = "{LINUX_RELEASE}"\n[sources]\n'
                    f'cudart = "{site.as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec, "--offline")
    assert code == 2, err
    assert says in err and "\nhint: " in err and "internal error" not in err


def _toolkit(tmp_path: Path) -> Path:
    return toolkit_folder(tmp_path, "12.4.131", ["cudart64_12.dll", "cublas64_12.dll",
                                                 "cublasLt64_12.dll"])


def test_a_version_json_nested_too_deeply_is_refused(tmp_path: Path) -> None:
    toolkit = _toolkit(tmp_path)
    (toolkit / "version.json").write_text("[" * 100_000)
    with pytest.raises(SourceError, match="nested too deeply"):
        find_recipe(WINDOWS_RELEASE, PROJECT_ROOT, {"cuda": toolkit})


@pytest.mark.parametrize("text", ['{"cuda": 5}', '[1]', '"x"', '{"cuda": {"version": "'
                                  + "9" * 5000 + '"}}'],
                         ids=["cuda-number", "list", "string", "5000-digit-version"])
def test_a_version_json_of_another_shape_is_refused(tmp_path: Path, text: str) -> None:
    toolkit = _toolkit(tmp_path)
    (toolkit / "version.json").write_text(text)
    with pytest.raises(SourceError, match=str(toolkit)) as caught:
        find_recipe(WINDOWS_RELEASE, PROJECT_ROOT, {"cuda": toolkit})
    assert len(caught.value.message) < 600


@needs_fifo
@pytest.mark.parametrize("planted", ["fifo", "dev-zero", "fifo-version-txt"])
def test_a_version_file_that_is_not_a_file_is_refused_without_hanging(
        tmp_path: Path, planted: str) -> None:
    toolkit = _toolkit(tmp_path)
    version = toolkit / "version.json"
    if planted == "dev-zero":
        version.unlink()
        version.symlink_to("/dev/zero")
    elif planted == "fifo":
        make_fifo(version)
    else:
        version.unlink()
        version = make_fifo(toolkit / "version.txt")
    spec = app_with(tmp_path, {"cudnn": installer_folder(tmp_path), "cuda": toolkit})
    done = run_bounded("pack", spec)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"bundler: error: {version}: "), done.stderr
    assert "Traceback" not in done.stderr and "\nhint: " in done.stderr


def test_a_plain_version_json_still_reads(tmp_path: Path) -> None:
    toolkit = _toolkit(tmp_path)
    assert json.loads((toolkit / "version.json").read_text())["cuda"]["version"] == "12.4.131"
    assert find_recipe(WINDOWS_RELEASE, PROJECT_ROOT, {"cuda": toolkit}).cuda == "12.4.131"
    assert os.path.isfile(toolkit / "EULA.txt")
