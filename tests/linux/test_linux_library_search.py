"""doctor's Linux search (bundler/linux/library_search.py) against glibc itself: the copy
it says a bare-name load picks is the one a real dlopen maps, with two stand-in
libcudnn.so.9 (gcc-built ELF) in folders on LD_LIBRARY_PATH, and this machine's real
`ldconfig -p` parsed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bundler.linux.library_search import bare_name_search, ldconfig_cache, read_ldconfig
from tests.harness.packing import own_environ
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.linux.test_linux_bundle import SHIM, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc
from tests.linux.test_linux_doctor import _driver

pytestmark = linux_with_gcc

MAPPED = ("import ctypes, sys; ctypes.CDLL('libcudnn.so.9'); "
          "print(next(l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn.so.9' in l))")


def _mapped(ld_library_path: str) -> str:
    env = {**os.environ, "LD_LIBRARY_PATH": ld_library_path}
    done = subprocess.run([sys.executable, "-c", MAPPED], env=env, capture_output=True,
                          text=True, check=True)
    return done.stdout.strip()


def test_the_copy_doctor_says_is_picked_is_the_one_glibc_maps(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        _library(folder, "libcudnn.so.9", SHIM, "-ldl")
    for order in ((first, second), (second, first)):
        path = f"{tmp_path / 'missing'}:{order[0]}:{order[1]}"
        found = bare_name_search(["libcudnn*.so*"], path, read_ldconfig())
        cudnn = [f for f in found if f.name == "libcudnn.so.9"]
        assert [(f.path, f.reached_as, f.role) for f in cudnn] == [
            (str(order[0] / "libcudnn.so.9"), "LD_LIBRARY_PATH[2]", "picked"),
            (str(order[1] / "libcudnn.so.9"), "LD_LIBRARY_PATH[3]", "shadowed")]
        assert _mapped(path) == cudnn[0].path


def test_this_machines_ldconfig_cache_is_read() -> None:
    text = read_ldconfig()
    found = bare_name_search(["libc.so.6"], "", text)
    assert found and found[0].reached_as == "ldconfig cache" and found[0].role == "picked"
    assert os.path.realpath(found[0].path) == os.path.realpath(
        next(line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines()
             if Path(line.split()[-1]).name.startswith("libc.so")))
    # 32-bit entries are not a 64-bit process's; an entry with an OS ABI note is read.
    assert ldconfig_cache("\tlibfoo.so.1 (libc6) => /usr/lib32/libfoo.so.1\n") == []
    assert ldconfig_cache("\tlibfoo.so.1 (libc6,x86-64, OS ABI: Linux 3.2.0) => /l/libfoo.so.1"
                          ) == [("libfoo.so.1", "/l/libfoo.so.1")]


def test_machine_doctor_on_linux_names_the_picked_and_shadowed_copies_and_the_driver(
        tmp_path: Path) -> None:
    """`bundler doctor` (no APPDIR) on this Linux machine, as a process: LD_LIBRARY_PATH
    holds two stand-in cuDNNs and a gcc-built libcuda.so.1 answering cuDriverGetVersion."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        _library(folder, "libcudnn.so.9", SHIM, "-ldl")
    driver = _driver(tmp_path / "driver", "580.65.06", 13000)
    env = {**own_environ(), "PATH": os.environ.get("PATH", ""),
           "LD_LIBRARY_PATH": f"{first}:{second}:{driver}"}
    done = subprocess.run([sys.executable, "-m", "bundler", "doctor", "--json"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    messages = [f["message"] for f in json.loads(done.stdout)["findings"]]
    [copies] = [m for m in messages if m.startswith("libcudnn.so.9: 2 ")]
    assert (f"a bare-name load picks {first / 'libcudnn.so.9'} (LD_LIBRARY_PATH[1]"
            in copies)
    assert f"it shadows: {second / 'libcudnn.so.9'} (LD_LIBRARY_PATH[2]" in copies
    assert (f"NVIDIA driver at {driver / 'libcuda.so.580.65.06'}: supports CUDA 13.0 "
            "(cuDriverGetVersion 13000); driver 580.65.06 (its file name)") in messages
