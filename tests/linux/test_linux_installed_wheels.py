"""A Linux app packed from what pip installed (issue 18, item 6: "a folder source can
read site-packages/nvidia"): a catalogue release named in the spec, its cuDNN and CUDA
runtime given as the site-packages folder NVIDIA's real wheels (pinned, tests/harness/winenv/
pins.toml) were installed into. The recipe is rendered for that layout (nvidia/cudnn/lib,
nvidia/cu13/lib; the .dist-info tells each version), the bundle runs with those
site-packages folders first on LD_LIBRARY_PATH and maps only its own copies. An
installed cuDNN of another version than the release named is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.recipe.load import SourceSpec
from bundler.releases.channels import detect
from tests.harness.packing import PROJECT_ROOT, run_cli
from tests.harness.winenv.pins import linux_pins
from tests.harness.winenv.wheels import fetched_once

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")

RELEASE = "cudnn-9.19.0.56-cuda13-linux-x64"
APP = r'''
import ctypes, json
cudnn = ctypes.CDLL("libcudnn.so.9")
cudnn.cudnnGetVersion.restype = ctypes.c_size_t
handle = ctypes.c_void_p()
# libcudnn.so.9 opens libcudnn_graph.so.9 here; without it the process aborts (exit 134).
created = cudnn.cudnnCreate(ctypes.byref(handle))
with open("/proc/self/maps") as maps:
    mapped = sorted({l.split(None, 5)[5].strip() for l in maps if len(l.split(None, 5)) == 6
                     and ("libcudnn" in l or "libcudart" in l or "libcublas" in l)})
print(json.dumps({"version": cudnn.cudnnGetVersion(), "mapped": mapped, "created": created}))
'''


def _site_packages(tmp_path: Path) -> Path:
    """What `pip install nvidia-cudnn-cu13 nvidia-cuda-runtime` leaves: the wheels'
    members (nvidia/..., <name>-<version>.dist-info/) in one folder."""
    site = tmp_path / "site-packages"
    for package, (pin, platform) in linux_pins().items():
        spec = SourceSpec(id=package, kind="wheel", contents=(), package=package,
                          version=pin.version, platform_tag=platform, sha256=pin.sha256)
        with zipfile.ZipFile(fetched_once(spec)) as wheel:
            wheel.extractall(site)
    return site


DOCS_SITE = "/opt/app/venv/lib/python3.12/site-packages"


def docs_example() -> str:
    """docs/linux.md's spec ("Packing from what pip installed"), as the page shows it."""
    page = (PROJECT_ROOT / "docs" / "linux.md").read_text(encoding="utf-8")
    section = page.split("## Packing from what pip installed", 1)[1]
    return section.split("```toml\n", 1)[1].split("```", 1)[0]


def _spec(tmp_path: Path, site: Path) -> Path:
    """The app, packed by docs/linux.md's own example with its site-packages here."""
    (tmp_path / "app").mkdir(exist_ok=True)
    (tmp_path / "app" / "main.py").write_text(APP)
    spec = tmp_path / "app.spec"
    example = docs_example()
    assert f'recipe = "{RELEASE}"' in example and DOCS_SITE in example
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n'
                    + example.replace(DOCS_SITE, site.as_posix()))
    return spec


def test_a_linux_app_packs_from_the_installed_site_packages(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/linux.md's example as written: components = ["core", "cudart"] is completed
    with graph (libcudnn.so.9 opens libcudnn_graph.so.9 at cudnnCreate) and the cuBLAS
    graph requires, the summary says why, and the app's cudnnCreate returns (1001: no
    GPU here) instead of aborting the process."""
    site = _site_packages(tmp_path)
    code, out, err = run_cli(capsys, "pack", _spec(tmp_path, site), "--json", "--offline")
    assert code == 0, err
    bundle = tmp_path / "dist" / "app"
    # Nothing else on the library path: the bundle alone (libcudnn.so.9 without
    # libcudnn_graph.so.9 aborts here with exit 134).
    alone = subprocess.run([sys.executable, str(bundle / "main.py")], capture_output=True,
                           text=True, check=False, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"})
    assert alone.returncode == 0, (alone.returncode, alone.stderr)
    summary = json.loads(out)
    assert summary["components"] == ["cudart", "cublas", "core", "graph"]
    assert summary["selected_because"] == {
        "cublas": ["required by graph"],
        "graph": ["libcudnn_graph.so.9: loaded by libcudnn.so.9 at its first call"]}
    assert {"cudnn/libcudnn.so.9", "cudnn/libcudnn_graph.so.9", "cudnn/libcudart.so.13",
            "cudnn/libcublasLt.so.13"} <= set(summary["load_order"])
    assert set(summary["inputs_trusted"]) == {"cudnn", "cudart", "cublas"}
    manifest = json.loads((bundle / "cudnn" / "manifest.json").read_text())
    # The installed runtime's release (13.0.96) is the bundle's CUDA, not the set's newest.
    assert manifest["versions"]["cuda"] == "13.0"
    assert manifest["versions"]["min_driver"] == "580.65.06"
    first = os.pathsep.join(str(site / "nvidia" / d / "lib") for d in ("cudnn", "cu13"))
    done = subprocess.run([sys.executable, str(bundle / "main.py")], capture_output=True,
                          text=True, check=False, timeout=120,
                          env={**os.environ, "LD_LIBRARY_PATH": first})
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert ran["version"] == 91900 and ran["created"] != 0   # returned: no abort, no GPU
    assert {Path(p).name for p in ran["mapped"]} >= {
        "libcudart.so.13", "libcudnn.so.9", "libcudnn_graph.so.9", "libcublasLt.so.13"}
    assert all(p.startswith(str(bundle / "cudnn")) for p in ran["mapped"]), ran["mapped"]


def test_an_installed_cudnn_of_another_version_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = _site_packages(tmp_path)
    info = next(site.glob("nvidia_cudnn_cu13-*.dist-info"))
    info.rename(site / "nvidia_cudnn_cu13-9.18.1.3.dist-info")
    code, _, err = run_cli(capsys, "pack", _spec(tmp_path, site), "--offline")
    assert code == 2
    assert f"{site}: holds cuDNN 9.18.1.3 (installed wheel), not 9.19.0.56" in err


def test_linux_layouts_are_told_apart(tmp_path: Path) -> None:
    """An unpacked NVIDIA tarball (lib/libcudnn.so.9 beside libcudnn.so.9.19.0), the folder
    of the libraries itself, and a folder holding none, which is refused naming where
    it looked."""
    tarball = tmp_path / "cudnn-linux-x86_64-9.19.0.56_cuda13-archive"
    (tarball / "lib").mkdir(parents=True)
    for name in ("libcudnn.so.9", "libcudnn.so.9.19.0"):
        (tarball / "lib" / name).write_bytes(b"\x7fELF")
    (tarball / "LICENSE").write_text("licence")
    found = detect(tarball, 9, "linux-x64")
    assert (found.kind, found.prefix, found.version, found.licence) == (
        "folder", "lib/", "9.19.0", "LICENSE")
    assert detect(tarball / "lib", 9, "linux-x64").prefix == ""
    shutil.rmtree(tarball / "lib")
    with pytest.raises(SourceError, match=r"no nvidia/cudnn/lib/libcudnn.so.9, "
                                          r"lib/libcudnn.so.9 or libcudnn.so.9"):
        detect(tarball, 9, "linux-x64")
