"""Benchmark: what the bootstrap costs at start-up beyond the DLL loads themselves.

Run on demand (not a test), with the test prerequisites (./tests/setup.sh):

    python bench/bootstrap_overhead.py [--runs N]

Packs the offline quickstart into a temporary folder, then, under Wine with the
Windows CPython, times inside one process each:

- baseline: loading the same DLLs by absolute path with ctypes, in the same order;
- bootstrap: importing the bundled _cudnn_bootstrap (manifest, add_dll_directory,
  driver probe, preloads and their checks).

Prints the median of each and their ratio; DESIGN.md promises a few milliseconds
beyond the loads. Wine's loader is not Windows', so read the ratio, not the times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.harness.winenv import WindowsPython  # noqa: E402

MEASURE = '''\
import ctypes, importlib.util, json, os, sys, time
app = sys.argv[1]
manifest = json.load(open(os.path.join(app, "cudnn", "manifest.json")))
paths = [os.path.join(app, *p.split("/")) for p in manifest["load_order"]]
start = time.perf_counter()
if sys.argv[2] == "baseline":
    handles = [ctypes.WinDLL(p) for p in paths]
else:
    spec = importlib.util.spec_from_file_location(
        "_cudnn_bootstrap", os.path.join(app, "_cudnn_bootstrap.py"))
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
print(json.dumps({"ms": (time.perf_counter() - start) * 1000}))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    python = WindowsPython.setup(script_dir_on_path=False)
    with tempfile.TemporaryDirectory(prefix="bench-bootstrap-") as tmp:
        app = Path(tmp) / "quickstart"
        subprocess.run([sys.executable, "-m", "bundler", "pack",
                        str(REPO / "examples/quickstart/app.spec"), "--out", str(app)],
                       check=True, capture_output=True, cwd=REPO)  # this checkout
        script = Path(tmp) / "measure.py"
        script.write_text(MEASURE)
        times: dict[str, list[float]] = {"baseline": [], "bootstrap": []}
        for _ in range(args.runs):
            for mode, samples in times.items():
                result = python.run([script, app, mode], check=True, timeout=120)
                samples.append(json.loads(result.stdout.strip().splitlines()[-1])["ms"])
    base, boot = (statistics.median(times[m]) for m in ("baseline", "bootstrap"))
    print(f"DLL loads alone (ctypes, same order): {base:.2f} ms (median of {args.runs})")
    print(f"bootstrap import:                     {boot:.2f} ms")
    print(f"ratio bootstrap / loads alone:         {boot / base:.2f}x "
          f"(overhead {boot - base:.2f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
