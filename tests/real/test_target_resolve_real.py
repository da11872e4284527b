"""Opt-in (BUNDLER_REAL_INDEX=1, needs PyPI): issue 40's case, resolved against the real
index. paddlepaddle-gpu 2.6.2's wheels say `protobuf<=3.20.2,>=3.1.0; platform_system ==
"Windows"` and `protobuf>=3.20.2; platform_system != "Windows"`: resolved for the
bundle (Windows x64, CPython 3.11.9) it must get protobuf 3.20.2, whatever this
machine is; for a manylinux target a protobuf above 3.20.2.

For Paddle only the resolve runs (bundler's target_resolve, the code an
embedded-python pack runs): uv reads the wheels' metadata from the index, nothing of
the 400+ MB Paddle wheel is downloaded. A small real pack (click, whose colorama is
Windows-only) fetches from the index end to end. Run with -s for the figures.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from bundler.pack.builders.cpython_embed import KNOWN
from bundler.pack.builders.target_resolve import ResolveTarget, resolve
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from bundler.targets.registry import platform_for
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace

pytestmark = pytest.mark.skipif(os.environ.get("BUNDLER_REAL_INDEX") != "1",
                                reason="opt-in: set BUNDLER_REAL_INDEX=1 (resolves "
                                       "against PyPI; metadata only, a few MB)")

PYPI = "https://pypi.org/simple"


def resolved(tmp_path: Path, platform: str) -> dict[str, tuple[str, str]]:
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"--index-url {PYPI}\npaddlepaddle-gpu==2.6.2\n")
    target = ResolveTarget(platform_for(platform).python_platform, KNOWN["3.11"].cpython)
    scratch = tmp_path / f"scratch-{platform}"
    scratch.mkdir()
    started = time.monotonic()
    found = {project.name: (project.version, " ".join(w.file for w in project.wheels))
             for project in resolve(requirements, target, scratch)}
    print(f"\n{target.describe()}: {len(found)} projects in "
          f"{time.monotonic() - started:.1f} s; protobuf {found['protobuf'][0]}; "
          f"{found['paddlepaddle-gpu'][1]}")
    return found


def test_paddle_2_6_2_gets_the_windows_protobuf_for_a_windows_bundle(tmp_path: Path
                                                                     ) -> None:
    windows = resolved(tmp_path, "win-amd64")
    assert windows["protobuf"][0] == "3.20.2"
    assert windows["paddlepaddle-gpu"] == (
        "2.6.2", "paddlepaddle_gpu-2.6.2-cp311-cp311-win_amd64.whl")
    assert all("manylinux" not in file for _, file in windows.values())


def test_the_same_requirement_for_linux_gets_the_other_branch(tmp_path: Path) -> None:
    linux = resolved(tmp_path, "linux-x86_64")
    major, minor, *_ = (int(part) for part in linux["protobuf"][0].split(".")[:3])
    assert (major, minor) > (3, 20)


def test_a_pack_fetches_the_windows_only_dependency_from_the_index(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path
        ) -> None:
    """End to end through PyPI: click 8.1.7 needs `colorama; platform_system ==
    "Windows"`; the bundle ships it, fetched by URL and sha256 (pip download --no-deps
    --require-hashes), and the lock names it."""
    spec = embedded_workspace(tmp_path / "ws", standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    spec.with_name("requirements.txt").write_text(f"--index-url {PYPI}\nclick==8.1.7\n")
    started = time.monotonic()
    result = pack(load_spec(spec), environ=bundler_cache(tmp_path / "cache"))
    print(f"\nclick 8.1.7 packed for Windows in {time.monotonic() - started:.1f} s")
    site = result.out / "python" / "Lib" / "site-packages"
    assert sorted(p.name for p in site.glob("*.dist-info")) == [
        "click-8.1.7.dist-info", "colorama-0.4.6.dist-info"]
    recorded = json.loads(spec.with_name("app.spec.lock").read_text())
    assert sorted(recorded["wheels"]) == ["click", "colorama"]
    assert recorded["wheels_for"] == {"platform": "x86_64-pc-windows-msvc",
                                      "python": "3.11.9"}
