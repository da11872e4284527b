"""Helpers for tests that pack apps: write a workspace, run the CLI, snapshot output."""

from __future__ import annotations

import builtins
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bundler.cli import main
from tests.harness.winenv.paths import PROJECT_ROOT

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"

# The app every packing test ships: it calls a stand-in framework DLL that, like
# TensorFlow, loads cudnn64_8.dll by bare name, then says what it got.
APP_MAIN = textwrap.dedent('''\
    """A stand-in GPU app: reports which cuDNN its framework loaded."""
    import ctypes
    import json
    import os
    import sys
    import time

    here = os.path.dirname(os.path.abspath(__file__))
    framework = ctypes.CDLL(os.path.join(here, "framework.dll"))
    path = ctypes.create_string_buffer(1024)
    version = framework.framework_cudnn_version()
    framework.framework_cudnn_path(path, len(path))
    print(json.dumps({"version": version, "path": path.value.decode("mbcs"),
                      "PATH": os.environ.get("PATH", "")}), flush=True)
    # With a rendezvous file, wait until the other app has loaded too: proves two
    # apps with different runtimes run at the same time.
    if len(sys.argv) > 2:
        open(sys.argv[1], "w").close()
        deadline = time.time() + 60
        while not os.path.exists(sys.argv[2]) and time.time() < deadline:
            time.sleep(0.05)
        print(json.dumps({"other_seen": os.path.exists(sys.argv[2])}), flush=True)
''')


@dataclass(frozen=True)
class Workspace:
    root: Path
    spec: Path

    @property
    def dist(self) -> Path:
        return self.root / "dist" / "app"


def make_workspace(root: Path, framework: Path, sources: dict[str, Path],
                   recipe: str = SEED, extra_runtime: str = "") -> Workspace:
    app = root / "app"
    app.mkdir(parents=True)
    (app / "main.py").write_text(APP_MAIN)
    shutil.copy(framework, app / "framework.dll")
    lines = "\n".join(f'{sid} = "{path.as_posix()}"' for sid, path in sources.items())
    if "allow_unsigned" not in extra_runtime:
        # The stand-in cuDNN DLLs are not NVIDIA-signed (tests/integration/test_signatures.py).
        extra_runtime = f'allow_unsigned = ["cudnn*.dll"]\n{extra_runtime}'

    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n\n'
                    f'[runtime]\nrecipe = "{recipe}"\n{extra_runtime}\n[sources]\n{lines}\n')
    return Workspace(root, spec)


def bundler_cli(*args: object, cwd: Path | None = None,
                capture: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m bundler ARGS` with this checkout's bundler (never the first `bundler`
    on PATH, nor an installed copy), in a child process, as a user runs it."""
    path = os.pathsep.join(filter(None, (str(PROJECT_ROOT), os.environ.get("PYTHONPATH"))))
    return subprocess.run([sys.executable, "-m", "bundler", *map(str, args)], cwd=cwd,
                          env={**os.environ, "PYTHONPATH": path}, capture_output=capture,
                          text=True, check=False)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def own_copy(folder: Path, tmp_path: Path) -> Path:
    """A copy of a bundle shared by several tests, for one test to run or change: a run
    writes __pycache__ into it, which another test's snapshot or verify would see."""
    copy = Path(tempfile.mkdtemp(prefix="own-", dir=tmp_path)) / folder.name
    shutil.copytree(folder, copy)
    return copy


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below `folder` and its sha256: to prove a failed pack changed nothing."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


# Reads of one file, counted where they reach the operating system (the raw file
# under Python's buffer), as /proc/self/io would count them, but for this one file.
class _CountingFile(io.FileIO):
    """The raw file: records (offset, length) of every read that reaches the OS."""

    def __init__(self, path: Path, reads: list[tuple[int, int]]) -> None:
        super().__init__(path, "rb")
        self._reads = reads

    def readinto(self, buffer: Any) -> int | None:
        at = self.tell()
        count = super().readinto(buffer)
        self._reads.append((at, count or 0))
        return count

    def read(self, size: int = -1) -> bytes | None:
        at = self.tell()
        data = super().read(size)
        self._reads.append((at, len(data or b"")))
        return data

    def readall(self) -> bytes:
        at = self.tell()
        data = super().readall()
        self._reads.append((at, len(data)))
        return data


@pytest.fixture
def zip_reads(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Count the reads of one file, however bundler opens it."""
    watched: dict[str, Any] = {}
    real_open = builtins.open

    def counting_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode == "rb" and isinstance(file, (str, Path)) and Path(file) == watched["path"]:
            return io.BufferedReader(_CountingFile(Path(file), watched["reads"]))
        return real_open(file, mode, *args, **kwargs)

    def watch(path: Path) -> list[tuple[int, int]]:
        watched.update(path=path, reads=[])
        monkeypatch.setattr(builtins, "open", counting_open)
        return watched["reads"]

    return watch


def times_read(reads: list[tuple[int, int]], size: int) -> list[int]:
    times = [0] * size
    for offset, length in reads:
        for at in range(offset, min(offset + length, size)):
            times[at] += 1
    return times


def central_directory_offset(path: Path) -> int:
    with zipfile.ZipFile(path) as archive:
        return archive.start_dir


def own_environ() -> dict[str, str]:
    """An environment for a pack that must not see the caller's CUDA variables: only
    what keeps bundler off the user's own folders (the test's store and key)."""
    keep = ("BUNDLER_STORE", "BUNDLER_STORE_KEY", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")
    return {name: os.environ[name] for name in keep if name in os.environ}


@pytest.fixture
def standin_workspace(tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
                      standin_framework: Path) -> Workspace:
    """An app and spec over the session's stand-in cuDNN zip and CUDA toolkit."""
    return make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": standin_zip, "cuda": standin_toolkit})


@pytest.fixture
def packed_workspace(standin_workspace: Workspace,
                     capsys: pytest.CaptureFixture[str]) -> Workspace:
    """standin_workspace, packed once (its lock and bundle written)."""
    code, _, err = run_cli(capsys, "pack", standin_workspace.spec)
    assert code == 0, err
    return standin_workspace
