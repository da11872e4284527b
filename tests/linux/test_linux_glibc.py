"""The glibc a Linux bundle needs: read from each library's .gnu.version_r at pack time,
recorded as the manifest's versions.min_glibc, refused by the bootstrap and reported by
doctor on an older glibc."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bundler.diagnose.doctor import examine_bundle
from bundler.recipe.load import load_recipe_file
from bundler.runtime.rules import glibc_problem
from bundler.targets.registry import platform_for
from tests.harness.packing import PROJECT_ROOT, run_cli
from tests.harness.winenv.wheels import fetched_once, wheel_cache

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")

LINUX = platform_for("linux-x86_64")
RECIPE = PROJECT_ROOT / "recipes" / "cudnn-9.19.0.56-cuda13-linux-x64.toml"


def _cudnn_wheel(source: str = "cudnn") -> Path:
    return fetched_once(load_recipe_file(RECIPE).sources[source])


def _versions_in(data: bytes) -> str:
    """The newest GLIBC_x.y named anywhere in the file's bytes (its version strings)."""
    found = {m.decode() for m in re.findall(rb"GLIBC_(\d+\.\d+(?:\.\d+)?)\x00", data)}
    return max(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def test_the_glibc_is_read_from_nvidias_real_libcudnn(tmp_path: Path) -> None:
    with zipfile.ZipFile(_cudnn_wheel()) as wheel:
        data = wheel.read("nvidia/cudnn/lib/libcudnn.so.9")
    (tmp_path / "libcudnn.so.9").write_bytes(data)
    needed = LINUX.read_library(tmp_path / "libcudnn.so.9").glibc
    assert re.fullmatch(r"2\.\d+(\.\d+)?", needed) and needed == _versions_in(data)


@pytest.mark.skipif(not shutil.which("gcc"), reason="gcc")
@pytest.mark.parametrize(("code", "needed"), [
    ("#include <stdlib.h>\nvoid *f(size_t n) { return malloc(n); }\n", "2.2.5"),
    # getrandom came with glibc 2.25: the newest version wins, compared as numbers.
    ("#include <stdlib.h>\n#include <sys/random.h>\n"
     "long f(void *b) { free(malloc(1)); return getrandom(b, 4, 0); }\n", "2.25"),
])
def test_the_newest_glibc_symbol_version_is_the_minimum(tmp_path: Path, code: str,
                                                         needed: str) -> None:
    (tmp_path / "lib.c").write_text(code)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libx.so.1"),
                    str(tmp_path / "lib.c")], check=True)
    assert LINUX.read_library(tmp_path / "libx.so.1").glibc == needed


APP = '''import ctypes, json
cudnn = ctypes.CDLL("libcudnn.so.9")
print(json.dumps({"loaded": True}))
'''


def test_a_linux_pack_records_its_glibc_and_an_older_one_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Packed from NVIDIA's real wheels, the manifest says the newest glibc a bundled
    library needs (cuDNN 9.19's engines' 2.27, which core brings along with graph:
    libcudnn.so.9 opens graph at cudnnCreate; libcudart.so.13 and graph need 2.17, the
    shim only 2.2.5); this machine runs it, and doctor and the bootstrap refuse an older glibc."""
    # graph requires cuBLAS: the pack takes its pinned wheel from the harness's cache.
    _cudnn_wheel("cublas")
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(APP)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    f'recipe = "{RECIPE.as_posix()}"\ncomponents = ["core", "cudart"]\n'
                    f'[sources]\ncudnn = "{_cudnn_wheel().as_posix()}"\n'
                    f'cudart = "{_cudnn_wheel("cudart").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    app = tmp_path / "dist" / "app"
    manifest_path = app / "cudnn" / "manifest.json"
    recorded = json.loads(manifest_path.read_text())["versions"]["min_glibc"]
    each = {p.name: LINUX.read_library(p).glibc for p in (app / "cudnn").glob("lib*.so*")}
    assert (each["libcudnn.so.9"], each["libcudart.so.13"], each["libcudnn_graph.so.9"],
            each["libcudnn_engines_precompiled.so.9"]) == ("2.2.5", "2.17", "2.17", "2.27")
    assert recorded == "2.27" == max(each.values(), key=lambda v: [int(p) for p in v.split(".")])
    # This machine runs it (the suite's glibc is newer than NVIDIA's manylinux floor).
    assert glibc_problem(recorded) == ""
    ran = subprocess.run([sys.executable, str(app / "main.py")], capture_output=True,
                         text=True, check=False, timeout=120)
    assert ran.returncode == 0 and json.loads(ran.stdout) == {"loaded": True}, ran.stderr
    glibc = {f.about: f for f in examine_bundle(app).findings}["glibc"]
    assert glibc.level == "ok" and recorded in glibc.message
    # A machine with glibc 2.12 (CentOS 6): the recorded figure against it.
    old = glibc_problem(recorded, "2.12")
    assert f"needs glibc >= {recorded}" in old and "this machine has glibc 2.12" in old
    assert glibc_problem(recorded, "2.27") == "" and glibc_problem(recorded, "2.17")
    report = examine_bundle(app, glibc="2.12")
    assert not report.ok and any(f.about == "glibc" and f.message.startswith(old)
                                 for f in report.findings)
    # The bootstrap's own refusal, before any library is loaded: a manifest asking more
    # than this machine has.
    data = json.loads(manifest_path.read_text())
    data["versions"]["min_glibc"] = "2.999"
    manifest_path.write_text(json.dumps(data))
    ran = subprocess.run([sys.executable, str(app / "main.py")], capture_output=True,
                         text=True, check=False, timeout=120)
    assert ran.returncode != 0 and "needs glibc >= 2.999" in ran.stderr
    assert "this machine has glibc" in ran.stderr
