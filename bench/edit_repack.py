"""Benchmark: a one-file edit re-packed in time proportional to what changed (issue 41).

Run on demand (not a test):
    python bench/edit_repack.py [--wheels DIR] [--runs N] [--zip]

The full cuDNN 8.9.4.25 / CUDA 11 wheel set (1.78 GB of DLLs; from DIR, else the wheel
cache). Each run starts with an empty store and measures, in the same run, each timed
step after `sync`, every pack through `python -m bundler pack --json` in a child:

- `unzip` extracting the runtime's members: the baseline;
- the cold pack of app A;
- a first edit of app A's script, re-packed (the objects a cold pack added are read once
  and their stamps recorded, store/hashed.py);
- a second edit, re-packed: no stored object read again (the issue's goal: <= 0.03x
  `unzip`);
- the same edit with the store's `hashed/` records removed first: every stored object
  read again, as every re-pack did before (the ratio against it is this run's);
- app B, sharing the runtime through the store, packed and deleted; then A re-packed
  with nothing changed: "up to date" (before: a full pack, the links had changed every
  shared file's change time).

With --zip every pack of A also writes a zip (and the edit "reading every object" also
loses the records of the kept streams' last hash, zip-streams/*/*.hashed: every stream is
read again, as before). bundler's bytecode is compiled first, as pip does at install.
Each step's CPU time (its children's user + system) is printed beside its wall time: on
a machine other work loads, wall time moves with the load, CPU time much less.
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

from pack_wheels import RECIPE, time_unzip, warm, wheels_for, write_spec  # noqa: E402

from bundler.recipe.load import find_recipe  # noqa: E402

_CPU: dict[str, float] = {}   # the CPU seconds of the last pack (children's user + system)


def children_cpu() -> float:
    """User + system seconds of every child process that has ended so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def pack(spec: Path, store: Path, *more: str) -> tuple[float, dict[str, object]]:
    """Seconds of `bundler pack --json` in a child process, and its summary; its CPU
    seconds in _CPU["last"]."""
    cpu = children_cpu()
    env = {**os.environ, "BUNDLER_NO_PROGRESS": "1", "PYTHONPATH": str(REPO),
           "BUNDLER_STORE": str(store)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bundler", "pack", str(spec), "--json",
                           "--quiet", *more], capture_output=True, text=True, env=env,
                          check=False)
    elapsed = time.perf_counter() - start
    _CPU["last"] = children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"pack failed:\n{done.stderr}")
    summary: dict[str, object] = json.loads(done.stdout)
    return elapsed, summary


def edit(folder: Path, text: str) -> None:
    entry = folder / "app" / "main.py"
    entry.write_text(entry.read_text() + f"# {text}\n")
    os.sync()


def one_run(work: Path, wheels: dict[str, Path], zipped: bool) -> dict[str, float]:
    recipe = find_recipe(RECIPE, REPO)
    store = work / "store"
    shutil.rmtree(store, ignore_errors=True)
    specs = {}
    for name in "AB":
        folder = work / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        specs[name] = write_spec(folder, wheels, [])
    more = ("--zip", str(work / "A" / "app.zip")) if zipped else ()
    os.sync()
    cpu = children_cpu()
    figures = {"unzip": time_unzip(recipe, [], wheels, work / "unzipped")}
    figures["unzip_cpu"] = children_cpu() - cpu
    shutil.rmtree(work / "unzipped")
    os.sync()
    figures["cold"], _ = pack(specs["A"], store, *more)
    figures["cold_cpu"] = _CPU["last"]
    edit(work / "A", "first edit")
    figures["first_edit"], _ = pack(specs["A"], store, *more)
    figures["first_edit_cpu"] = _CPU["last"]
    edit(work / "A", "second edit")
    figures["edit"], summary = pack(specs["A"], store, *more)
    figures["edit_cpu"] = _CPU["last"]
    if zipped:
        print(f"  the edit's zip members: {summary['zip_members']}", flush=True)
    assert summary["up_to_date"] is False and \
        summary["packed_in_full_because"] == "app/main.py changed since the last pack", summary
    shutil.rmtree(store / "hashed")   # what every re-pack did before: read every object
    for record in (store / "zip-streams").glob("*/*.hashed"):   # and every kept stream
        record.unlink()
    edit(work / "A", "third edit")
    figures["edit_reading_all"], _ = pack(specs["A"], store, *more)
    figures["edit_reading_all_cpu"] = _CPU["last"]
    pack(specs["A"], store, *more)   # records the stamps again
    pack(specs["B"], store)
    shutil.rmtree(work / "B")
    os.sync()
    figures["after_b"], summary = pack(specs["A"], store, *more)
    figures["after_b_cpu"] = _CPU["last"]
    figures["after_b_up_to_date"] = float(summary["up_to_date"] is True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder holding the wheels")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--zip", action="store_true", help="every pack of A writes a zip")
    args = parser.parse_args()
    if not shutil.which("unzip"):
        sys.exit("unzip is needed for the baseline (apt-get install unzip)")
    wheels = wheels_for(find_recipe(RECIPE, REPO), args.wheels)
    warm(list(wheels.values()))
    # bundler's bytecode compiled once, as pip does at install (a machine that sets
    # PYTHONDONTWRITEBYTECODE would otherwise compile its ~150 modules on every pack)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "bundler")],
                   check=True)
    with tempfile.TemporaryDirectory(prefix="bundler-bench-") as temporary:
        runs = [one_run(Path(temporary), wheels, args.zip) for _ in range(args.runs)]
    median = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    unzip = median["unzip"]
    print(f"{RECIPE}, full set{' with --zip' if args.zip else ''}, {args.runs} runs "
          f"(median; each run from an empty store), {os.cpu_count()} cores")
    print(f"  unzip (the runtime's members)      {unzip:6.2f} s  "
          f"(CPU {median['unzip_cpu']:.2f} s)")
    for key, label in (("cold", "cold pack"), ("first_edit", "first edit after it"),
                       ("edit", "an edit (objects not read)"),
                       ("edit_reading_all", "an edit, every object read"),
                       ("after_b", "after app B packed and deleted")):
        each = ", ".join(f"{r[key]:.2f}" for r in runs)
        cpu = ", ".join(f"{r[key + '_cpu']:.2f}" for r in runs)
        print(f"  {label:34} {median[key]:6.2f} s  {median[key] / unzip:.3f}x unzip  ({each})"
              f"  CPU {median[key + '_cpu']:6.2f} s ({cpu})")
    print(f"  an edit against one reading every object: "
          f"{median['edit'] / median['edit_reading_all']:.2f}x wall, "
          f"{median['edit_cpu'] / median['edit_reading_all_cpu']:.2f}x CPU")
    print(f"  load average at the end: {os.getloadavg()}")
    print(f"  up to date after app B: {sum(r['after_b_up_to_date'] for r in runs):.0f} of "
          f"{len(runs)} runs")


if __name__ == "__main__":
    main()
