"""Regenerate the quickstart's stand-in inputs in examples/quickstart/.

    python -m tests.harness.winenv.quickstart

The quickstart must pack on a fresh machine with no NVIDIA download and no
mingw, so its stand-in zip and toolkit are committed; this script rebuilds them
from tests/harness/standin/*.c, and tests/integration/test_quickstart.py checks the committed files
still match what it builds.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from . import PROJECT_ROOT
from .build import build_runtime, make_nvidia_zip, make_toolkit

QUICKSTART = PROJECT_ROOT / "examples" / "quickstart"
ZIP_NAME = "cudnn-v8.0.3.33_cuda10.1-windows10-x64.STANDIN.zip"
TOOLKIT = Path("standin-cuda") / "v10.1"


def build_inputs(dest: Path) -> tuple[Path, Path]:
    """Build the stand-in zip (Deflate64, NVIDIA's layout) and toolkit into `dest`."""
    with tempfile.TemporaryDirectory(prefix="quickstart-") as work:
        runtime = build_runtime(Path(work) / "dlls")
        zip_path = make_nvidia_zip(runtime.dir, dest / "downloads" / ZIP_NAME, "deflate64")
        toolkit = dest / TOOLKIT
        shutil.rmtree(toolkit, ignore_errors=True)
        make_toolkit(runtime.dir, toolkit)
    return zip_path, toolkit


if __name__ == "__main__":
    for path in build_inputs(QUICKSTART):
        print(f"wrote {path}")
