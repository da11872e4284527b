"""Benchmark: pack the full cuDNN 8.9.4.25 / CUDA 11 wheel set (~1.8 GB of DLLs).

Run on demand (not a test):
    python bench/pack_wheels.py [--wheels DIR] [--runs N] [--components NAME ...]

The wheels (1.16 GB) come from DIR if given (as pip names them), else from the
bundler wheel cache, fetched with pip on first use. Each run times, in the same
run and from a warm page cache:

- `bundler pack` of the full set (or of the given components) in a child process, and
- `unzip` extracting the same members (the DLLs and licences) from the same wheels,

and prints pack time as a ratio of unzip time. For the pack child it also prints
peak memory (ru_maxrss) and how many bytes it read and wrote (/proc/self/io
rchar/wchar): reading about the wheels' size once shows the pack streams (each
wheel byte read once: members, RECORD checks and the wheels' own sha256 for the
lock and the recipe pins all come from one pass); writing about the DLLs' size once
shows nothing is copied twice. A subset (e.g. --components cnn_infer) leaves most of
the cuDNN wheel behind: the pack still reads it once, to check its CRCs and hash it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Benchmark this checkout's bundler, whichever one is installed.
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bundler.pack.sources.fetch import cache_root, cached, fetch  # noqa: E402
from bundler.recipe.load import Recipe, find_recipe  # noqa: E402

RECIPE = "cudnn-8.9.4.25-cuda11-win-x64"

# Runs bundler's CLI, then reports what this process read, wrote and held at peak.
_CHILD = """
import json, resource, sys
from bundler.cli import main
code = main(sys.argv[1:])
io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
print(json.dumps({"code": code, "rchar": int(io["rchar"]), "wchar": int(io["wchar"]),
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}),
      file=sys.stderr)
"""


def wheels_for(recipe: Recipe, folder: Path | None, components: list[str] | None = None
               ) -> dict[str, Path]:
    """The wheels the components (default: the recipe's default ones) take files from."""
    used = {f.source for f in recipe.files_for(recipe.select(components or []))}
    found = {}
    for sid, spec in recipe.sources.items():
        if sid not in used:
            continue
        if folder is not None:
            found[sid] = folder / spec.file_name
        else:
            root = cache_root(os.environ)
            found[sid] = cached(spec, root) or fetch(spec, root)
        if not found[sid].is_file():
            sys.exit(f"missing {found[sid]}")
    return found


def write_spec(work: Path, wheels: dict[str, Path], components: list[str]) -> Path:
    (work / "app").mkdir()
    (work / "app" / "main.py").write_text("print('bench')\n")
    sources = "".join(f'{sid} = "{path}"\n' for sid, path in wheels.items())
    subset = f"components = {json.dumps(components)}\n" if components else ""
    spec = work / "app.spec"
    spec.write_text(f'[app]\nname = "bench"\npath = "app"\nentry = "main.py"\n'
                    f'[runtime]\nrecipe = "{RECIPE}"\n{subset}[sources]\n{sources}')
    return spec


def warm(paths: list[Path]) -> None:
    """Read the wheels once so both contenders start from the page cache."""
    for path in paths:
        with open(path, "rb") as handle:
            while handle.read(1 << 24):
                pass


def time_pack(spec: Path, out: Path, store: Path) -> tuple[float, dict]:
    """A cold pack: an empty store of its own (never the user's), no earlier bundle."""
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    spec.with_name(spec.name + ".lock").unlink(missing_ok=True)
    env = {**os.environ, "BUNDLER_NO_PROGRESS": "1", "PYTHONPATH": str(REPO),
           "BUNDLER_STORE": str(store)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _CHILD, "pack", str(spec), "--out", str(out)],
                          capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    stats = json.loads(done.stderr.strip().splitlines()[-1])
    if stats["code"] != 0:
        sys.exit(f"pack failed:\n{done.stderr}")
    return elapsed, stats


def time_unzip(recipe: Recipe, components: list[str], wheels: dict[str, Path], out: Path
               ) -> float:
    members: dict[str, list[str]] = {sid: [] for sid in wheels}
    for item in recipe.files_for(recipe.select(components)):
        members[item.source].append(item.member)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    start = time.perf_counter()
    for sid, wheel in wheels.items():
        subprocess.run(["unzip", "-q", "-o", "-j", str(wheel), *members[sid], "-d", str(out)],
                       check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder holding the three wheels")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--components", nargs="+", default=[],
                        help="pack only these components (default: the full set)")
    args = parser.parse_args()
    if not shutil.which("unzip"):
        sys.exit("unzip is needed for the baseline (apt-get install unzip)")
    recipe = find_recipe(RECIPE, Path.cwd())
    wheels = wheels_for(recipe, args.wheels, args.components)
    wheel_bytes = sum(p.stat().st_size for p in wheels.values())
    with tempfile.TemporaryDirectory(prefix="bundler-bench-") as temporary:
        work = Path(temporary)
        spec = write_spec(work, wheels, args.components)
        warm(list(wheels.values()))
        packs, unzips, stats = [], [], {}
        for _ in range(args.runs):
            os.sync()
            unzips.append(time_unzip(recipe, args.components, wheels, work / "unzipped"))
            os.sync()
            elapsed, stats = time_pack(spec, work / "bundle", work / "store")
            packs.append(elapsed)
        dll_bytes = sum(f.stat().st_size for f in (work / "bundle" / "cudnn").iterdir())
    pack_s, unzip_s = statistics.median(packs), statistics.median(unzips)
    which = ", ".join(args.components) if args.components else "full"
    print(f"{which} {RECIPE}: {dll_bytes / 1e9:.2f} GB out of {wheel_bytes / 1e9:.2f} GB "
          f"of wheels, {args.runs} runs (median)")
    print(f"  unzip (same members)  {unzip_s:6.2f} s")
    print(f"  bundler pack          {pack_s:6.2f} s   ratio {pack_s / unzip_s:.2f}x unzip")
    print(f"  pack read   {stats['rchar'] / 1e9:.2f} GB = {stats['rchar'] / wheel_bytes:.2f}x "
          "the wheels")
    print(f"  pack wrote  {stats['wchar'] / 1e9:.2f} GB = {stats['wchar'] / dll_bytes:.2f}x "
          "the bundle")
    print(f"  pack peak memory (ru_maxrss) {stats['maxrss_kib'] / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
