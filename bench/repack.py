"""Benchmark: re-packs and many apps with one runtime, through the runtime store.

Run on demand (not a test):
    python bench/repack.py [--wheels DIR] [--runs N]

The full cuDNN 8.9.4.25 / CUDA 11 wheel set (1.16 GB of wheels, 1.78 GB of DLLs; from
DIR, else the wheel cache, fetched with pip on first use), from a warm page cache.
Each run starts with an empty store and measures, in the same run (each timed step
after `sync`, so none pays for writing back the one before's output):

- `unzip` extracting the same members: the baseline every time is a ratio of;
- cold pack of app A (empty store): time, peak memory (ru_maxrss);
- warm re-pack of app A after a change to its script;
- first pack of app B, another app with the same recipe and components;
- app C likewise, then the disk the three bundles take together (`du`, which counts a
  hard-linked file once) against one runtime plus the three apps;
- the floor: reading the wheels once and writing files of the DLLs' sizes, no inflating
  or hashing (what no pack of these inputs can beat on this machine's disk and memory).

Goals: warm <= 0.1x unzip, second app <= 0.15x, three apps <= 1.1x one runtime plus
the apps; cold <= 0.5x unzip with a peak of <= 150 MB, on two cores, signatures checked.
"""

from __future__ import annotations

import argparse
import os
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

from pack_wheels import _CHILD, RECIPE, time_unzip, warm, wheels_for, write_spec  # noqa: E402

from bundler.recipe.load import find_recipe  # noqa: E402
from bundler.support import deflate  # noqa: E402


def pack(spec: Path, out: Path, store: Path, child: str = _CHILD) -> tuple[float, int]:
    """Seconds and peak memory (KiB) of `bundler pack` in a child process (`child`: the
    code it runs, bench/pack_wheels.py's by default)."""
    env = {**os.environ, "BUNDLER_NO_PROGRESS": "1", "PYTHONPATH": str(REPO),
           "BUNDLER_STORE": str(store)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", child, "pack", str(spec), "--out", str(out)],
                          capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    stats = __import__("json").loads(done.stderr.strip().splitlines()[-1])
    if stats["code"] != 0:
        sys.exit(f"pack failed:\n{done.stderr}")
    return elapsed, stats["maxrss_kib"]


def time_floor(wheels: dict[str, Path], sizes: list[int], out: Path) -> float:
    """Seconds to read every wheel once (1 MiB reads, like the pack's) and write one file
    per DLL of its size (the same bytes over and over: nothing to compute)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    block = os.urandom(1 << 20)
    start = time.perf_counter()
    for wheel in wheels.values():
        with open(wheel, "rb") as handle:
            while handle.read(1 << 20):
                pass
    for number, size in enumerate(sizes):
        with open(out / f"{number}.dll", "wb") as handle:
            for _ in range(size >> 20):
                handle.write(block)
            handle.write(block[:size & ((1 << 20) - 1)])
    return time.perf_counter() - start


def disk_use(*folders: Path) -> int:
    """Bytes on disk of the folders together, each hard-linked file counted once."""
    done = subprocess.run(["du", "-s", "-c", "--block-size=1", *map(str, folders)],
                          capture_output=True, text=True, check=True)
    return int(done.stdout.splitlines()[-1].split()[0])


def one_run(work: Path, wheels: dict[str, Path]) -> dict[str, float]:
    recipe = find_recipe(RECIPE, REPO)
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    specs = {}
    for name in "ABC":
        folder = work / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        specs[name] = write_spec(folder, wheels, [])
    os.sync()
    figures: dict[str, float] = {"unzip": time_unzip(recipe, [], wheels, work / "unzipped")}
    os.sync()
    figures["cold"], figures["cold_rss_kib"] = pack(specs["A"], work / "A" / "out", store)
    (work / "A" / "app" / "main.py").write_text("print('bench, changed')\n")
    os.sync()
    figures["warm"], _ = pack(specs["A"], work / "A" / "out", store)
    os.sync()
    figures["second"], _ = pack(specs["B"], work / "B" / "out", store)
    pack(specs["C"], work / "C" / "out", store)
    bundles = [work / name / "out" for name in "ABC"]
    sizes = [p.stat().st_size for p in (work / "unzipped").iterdir()]   # the DLLs'
    apps = sum(disk_use(work / name / "app") for name in "ABC")
    figures["three_apps_disk"] = disk_use(*bundles) / (sum(sizes) + apps)
    os.sync()
    figures["floor"] = time_floor(wheels, sizes, work / "floor")
    shutil.rmtree(work / "floor")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder holding the three wheels")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if not shutil.which("unzip"):
        sys.exit("unzip is needed for the baseline (apt-get install unzip)")
    wheels = wheels_for(find_recipe(RECIPE, REPO), args.wheels)
    warm(list(wheels.values()))
    with tempfile.TemporaryDirectory(prefix="bundler-bench-") as temporary:
        runs = [one_run(Path(temporary), wheels) for _ in range(args.runs)]
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    each = ", ".join(f"{r['cold'] / r['unzip']:.3f}x" for r in runs)
    unzip = median["unzip"]
    print(f"{RECIPE}, full set, {args.runs} runs (median), each from an empty store")
    print(f"  unzip (same members)        {unzip:6.2f} s")
    for key, label, goal in (("cold", "cold pack", 0.5), ("warm", "warm re-pack", 0.1),
                             ("second", "second app, first pack", 0.15)):
        print(f"  {label:27} {median[key]:6.2f} s   {median[key] / unzip:.3f}x unzip "
              f"(goal <= {goal}x)")
    print(f"  cold pack, each run         {each}")
    print(f"  cold pack peak memory       {median['cold_rss_kib'] / 1024:.0f} MiB (goal <= 150)")
    floor = median["floor"]
    print(f"  floor (read + write)        {floor:6.2f} s   {floor / unzip:.3f}x unzip; "
          f"cold pack {median['cold'] / floor:.2f}x the floor")
    print(f"  cores {os.cpu_count()}, engine {deflate.ENGINE}")
    print(f"  three apps on disk          {median['three_apps_disk']:.3f}x one runtime plus "
          "the apps (goal <= 1.1x)")


if __name__ == "__main__":
    main()
