"""Helpers for tests that pack apps: write a workspace, run the CLI, snapshot output."""

from __future__ import annotations

import hashlib
import shutil
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from bundler.cli import main

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
        # The stand-in cuDNN DLLs are not NVIDIA-signed (tests/test_signatures.py).
        extra_runtime = f'allow_unsigned = ["cudnn*.dll"]\n{extra_runtime}'

    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n\n'
                    f'[runtime]\nrecipe = "{recipe}"\n{extra_runtime}\n[sources]\n{lines}\n')
    return Workspace(root, spec)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(folder: Path) -> dict[str, str]:
    """Every file below `folder` and its sha256: to prove a failed pack changed nothing."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}
