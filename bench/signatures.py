"""Benchmark: what the Authenticode checks cost in a pack of the full cuDNN 8.9.4.25 set.

Run on demand (not a test):
    python bench/signatures.py --wheels DIR [--runs N]

DIR holds the three wheels of cudnn-8.9.4.25-cuda11-win-x64 as pip names them (1.16 GB;
`pip download --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.11
nvidia-cudnn-cu11==8.9.4.25 nvidia-cublas-cu11==11.11.3.6 nvidia-cuda-runtime-cu11==11.8.89
-d DIR`). Each run packs the full set in this process (its seven cuDNN DLLs are checked;
cuBLAS and cudart are not signed), then checks the bundle's signed DLLs again, alone,
from the same warm page cache, and prints that time as a share of the pack's. Goal: < 10%.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bundler.formats.manifest import SIGNATURE_VERIFIED  # noqa: E402
from bundler.pack.pipeline import pack  # noqa: E402
from bundler.pack.spec import load_spec  # noqa: E402
from bundler.recipe.load import find_recipe  # noqa: E402
from bundler.windows.authenticode import check_signature  # noqa: E402

RECIPE = "cudnn-8.9.4.25-cuda11-win-x64"


def one_run(wheels: Path, work: Path) -> tuple[float, float, int]:
    recipe = find_recipe(RECIPE, REPO)
    (work / "app").mkdir(parents=True, exist_ok=True)
    spec_path = work / "app.spec"
    spec_path.write_text(f'[app]\nname = "bench"\npath = "app"\n[runtime]\nrecipe = "{RECIPE}"\n')
    sources = {sid: str(wheels / s.file_name) for sid, s in recipe.sources.items()}
    start = time.perf_counter()
    # A store of its own, empty: the user's would hold earlier verdicts and files.
    environ = {**os.environ, "BUNDLER_STORE": str(work / "store")}
    result = pack(load_spec(spec_path), overrides=sources, update_lock=True, offline=True,
                  environ=environ)
    packed = time.perf_counter() - start
    root = result.out
    signed = [e for e in result.manifest.files if e.signature == SIGNATURE_VERIFIED]
    start = time.perf_counter()
    for entry in signed:
        trust = recipe.trust_for(recipe.files[entry.name])
        assert trust is not None and check_signature(root / entry.path, trust).ok
    return packed, time.perf_counter() - start, len(signed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    packs, checks = [], []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-sig-") as tmp:
            packed, checked, count = one_run(args.wheels.resolve(), Path(tmp))
        packs.append(packed)
        checks.append(checked)
        print(f"run {run + 1}: pack {packed:.2f} s, {count} signature checks {checked:.3f} s "
              f"({checked / packed:.1%} of the pack)", flush=True)
    pack_s, check_s = statistics.median(packs), statistics.median(checks)
    print(f"median: pack {pack_s:.2f} s, signature checks {check_s:.3f} s = "
          f"{check_s / pack_s:.1%} of pack time (goal < 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
