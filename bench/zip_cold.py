"""Benchmark: a cold `bundler pack --zip` (empty store) vs Info-ZIP's `zip -r -6`.

Run on demand (not a test):
    python bench/zip_cold.py [--wheels DIR] [--runs N] [--levels fast,6] [--plain]

The full cuDNN 8.9.4.25 / CUDA 11 wheel set (1.78 GB of DLLs; from DIR, else the wheel
cache, fetched with pip on first use: set BUNDLER_CACHE to keep it out of your own).
Each run, every timed step after `sync`, in the same run:

- a cold pack with `--zip` at each `--zip-level` of `--levels` (default: fast, the
  default), each from an empty store and no earlier bundle or zip;
- Info-ZIP's `zip -r -6` of the bundle folder that pack wrote (one thread; `apt-get
  install zip`): the baseline;
- with `--plain`, a cold pack without `--zip` too (the difference is the zip's part).

Printed: wall seconds, and CPU seconds (user + system of the child and its threads,
from getrusage: what a loaded machine cannot inflate), the ratios of both to `zip -r
-6`, and the zips' sizes and their ratio to Info-ZIP's. Goals (issue 41): the cold pack
with `--zip` <= 0.15x `zip -r -6`, its zip <= 1.05x the size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from pack_wheels import _CHILD, RECIPE, warm, wheels_for, write_spec  # noqa: E402

from bundler.recipe.load import find_recipe  # noqa: E402


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(command: list[str], env: dict[str, str] | None = None,
          cwd: Path | None = None) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall seconds, CPU seconds, the finished process) of `command`, after `sync`."""
    subprocess.run(["sync"], check=True)
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd,
                          check=False)
    wall, cpu = time.perf_counter() - start, _children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:4])}... failed:\n{done.stdout}\n{done.stderr}")
    return wall, cpu, done


def cold_pack(spec: Path, out: Path, store: Path, *more: str) -> tuple[float, float, dict]:
    """A cold pack in a child process: an empty store of its own, no earlier bundle or
    lock; (wall, CPU, its --json summary)."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    spec.with_name(spec.name + ".lock").unlink(missing_ok=True)
    env = {**os.environ, "BUNDLER_NO_PROGRESS": "1", "PYTHONPATH": str(REPO),
           "BUNDLER_STORE": str(store)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # as installed: bytecode compiled once
    wall, cpu, done = timed([sys.executable, "-c", _CHILD, "pack", str(spec), "--out",
                             str(out), "--json", *more], env=env)
    stats = json.loads(done.stderr.strip().splitlines()[-1])
    if stats["code"] != 0:
        sys.exit(f"pack failed:\n{done.stdout}\n{done.stderr}")
    summary = json.loads(done.stdout)
    summary["maxrss_mib"] = stats["maxrss_kib"] / 1024
    return wall, cpu, summary


def one_run(spec: Path, work: Path, levels: list[str], plain: bool) -> dict[str, float]:
    out, store = work / "dist" / "app", work / "store"
    row: dict[str, float] = {}
    if plain:
        row["cold pack s"], row["cold pack cpu"], _ = cold_pack(spec, out, store)
    for level in levels:
        zipped = work / f"app-{level}.zip"
        zipped.unlink(missing_ok=True)
        wall, cpu, summary = cold_pack(spec, out, store, "--zip", str(zipped),
                                       "--zip-level", level)
        assert summary["zip_members"]["reused"] == 0, summary["zip_members"]
        row[f"--zip {level} s"], row[f"--zip {level} cpu"] = wall, cpu
        row[f"--zip {level} MB"] = zipped.stat().st_size / 1e6
        row[f"--zip {level} peak MiB"] = summary["maxrss_mib"]
        zipped.unlink()
    infozip = work / "infozip.zip"
    infozip.unlink(missing_ok=True)
    row["zip -r -6 s"], row["zip -r -6 cpu"], _ = timed(
        ["zip", "-r", "-6", "-q", str(infozip), out.name], cwd=out.parent)
    row["zip -r -6 MB"] = infozip.stat().st_size / 1e6
    infozip.unlink()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder holding the three wheels")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--levels", default="fast",
                        help="--zip-level values to time, comma-separated (default: fast)")
    parser.add_argument("--plain", action="store_true",
                        help="also a cold pack without --zip (the zip's part of the time)")
    args = parser.parse_args()
    if not shutil.which("zip"):
        sys.exit("Info-ZIP's zip is the baseline: apt-get install zip")
    levels = args.levels.split(",")
    recipe = find_recipe(RECIPE, REPO, {})
    wheels = wheels_for(recipe, args.wheels)
    warm(list(wheels.values()))
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-zip-cold-") as folder:
        work = Path(folder)
        spec = write_spec(work, wheels, [])
        for number in range(args.runs):
            runs.append(one_run(spec, work, levels, args.plain))
            print(f"run {number + 1}: " + ", ".join(
                f"{k} {v:.2f}" for k, v in runs[-1].items()), flush=True)
    median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(f"\n{RECIPE}, {os.cpu_count()} cores; median of {len(runs)} "
          f"(load average now {os.getloadavg()[0]:.1f}):")
    for key, value in median.items():
        print(f"  {key:24} {value:9.2f}")
    for level in levels:
        for kind in ("s", "cpu"):
            ratios = [run[f"--zip {level} {kind}"] / run[f"zip -r -6 {kind}"] for run in runs]
            print(f"cold pack --zip-level {level} / zip -r -6 ({'wall' if kind == 's' else 'CPU'}"
                  f"): {statistics.median(ratios):.3f}x (runs "
                  + ", ".join(f"{r:.3f}" for r in ratios) + ")"
                  + (" (goal <= 0.15x)" if kind == "s" else ""))
        size = median[f"--zip {level} MB"] / median["zip -r -6 MB"]
        print(f"zip size at {level} / zip -r -6's: {size:.3f}x (goal <= 1.05x)")


if __name__ == "__main__":
    main()
