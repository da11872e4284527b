"""doctor of a Linux bundle on Linux: the driver found as the CUDA runtime finds it
(libcuda.so.1 by SONAME) judged against the manifest's figures from the Linux driver
table, by the bootstrap's own rule. The driver is a gcc-built stand-in (this machine
has no GPU): a real libcuda.so.1 SONAME behind a file named like the driver's release,
answering cuDriverGetVersion."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.recipe.load import load_recipe_file
from tests.harness.packing import PROJECT_ROOT, own_environ, run_cli
from tests.harness.winenv.wheels import fetched_once

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("gcc"),
                                reason="Linux with gcc")

RECIPE = PROJECT_ROOT / "recipes" / "cudnn-9.19.0.56-cuda13-linux-x64.toml"
LIBCUDA = "int cuDriverGetVersion(int *v) { *v = VALUE; return 0; }\n"


def _driver(folder: Path, release: str, cuda: int) -> Path:
    """A stand-in libcuda.so.<release> (SONAME libcuda.so.1) and its link, as the
    driver installs them."""
    folder.mkdir(parents=True)
    (folder / "cuda.c").write_text(LIBCUDA.replace("VALUE", str(cuda)))
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o",
                    str(folder / f"libcuda.so.{release}"), str(folder / "cuda.c")], check=True)
    (folder / "libcuda.so.1").symlink_to(f"libcuda.so.{release}")
    return folder


def _doctor(app: Path, drivers: Path | None) -> dict:
    env = {**own_environ(), "PATH": os.environ.get("PATH", ""),
           **({"LD_LIBRARY_PATH": str(drivers)} if drivers else {})}
    done = subprocess.run([sys.executable, "-m", "bundler", "doctor", str(app), "--json"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_doctor_judges_the_linux_driver_by_the_linux_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = load_recipe_file(RECIPE)
    assert (recipe.min_driver, recipe.min_driver_compat) == ("580.65.06", "580")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('ok')\n")
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    f'recipe = "{RECIPE.as_posix()}"\ncomponents = ["core"]\n'
                    f'[sources]\ncudnn = "{fetched_once(recipe.sources["cudnn"]).as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    app = tmp_path / "dist" / "app"
    old = _doctor(app, _driver(tmp_path / "r550", "550.54.14", 12040))
    assert not old["ok"] and old["driver"]["driver_version"] == "550.54.14"
    assert old["driver"]["driver_library"] == "libcuda.so.1" and "nvcuda" not in old["driver"]
    assert old["driver"]["path"].endswith("libcuda.so.550.54.14")
    assert "supports CUDA 12.4" in old["driver"]["problem"]
    assert "needs an NVIDIA driver >= 580" in old["driver"]["problem"]
    new = _doctor(app, _driver(tmp_path / "r580", "580.65.06", 13000))
    assert new["driver"]["problem"] == "" and new["driver"]["driver_cuda"] == "13.0"
    assert any(f["about"] == "driver" and f["level"] == "ok" for f in new["findings"])
    if not Path("/proc/driver/nvidia").exists():   # no driver here: said so, with the file
        none = _doctor(app, None)
        assert none["driver"]["problem"].startswith("no NVIDIA driver found (libcuda.so.1 ")
