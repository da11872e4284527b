"""Benchmark: a one-file edit of the embedded Paddle 2.6.2 app re-packed (issue 41).

Run on demand (not a test; PyPI is reached once, on the first run ever):
    python bench/paddle_edit.py [--runs N] [--python 3.11] [--keep]

The app: builder = "embedded-python", python.org's embeddable CPython (3.11 by
default: the CPython the test harness pins, tests/harness/winenv/pins.toml [embed]),
a requirements.txt naming `paddlepaddle-gpu==2.6.2` (resolved for Windows x64 with uv,
~20 wheels, the Paddle one 477 MB), recipe cudnn-8.9.5.29-cuda11-win-x64 (the first
release `bundler recipes --for paddlepaddle-gpu==2.6.2` names; every NVIDIA wheel it
needs is in the test wheel cache, ~/.cache/bundler-tests/wheels), with the components
the pack adds for what Paddle loads. The whole bundle is ~4.4 GB.

Everything it downloads stays in <test cache>/bench-paddle-edit (never the repo, never
~/.cache/bundler): its BUNDLER_CACHE (the embeddable CPython, hard-linked from the test
cache; the requirements' wheels) and the project with the lock the first pack wrote,
which pins the wheel set for every later run (no resolve, no index after that).
`--python 3.10` takes the cp310 Paddle wheel from the test cache's framework-wheels
folder (find-links) instead of PyPI's cp311 one.

Each run packs into a temporary folder of its own with an empty store of its own
(BUNDLER_STORE; never ~/.cache/bundler) and times, each step after `sync`, every pack
through `python -m bundler pack --json` in a child (wall time, and the children's CPU
from getrusage; the load average at the start of the step):

- cold: the first pack of the run (empty store; the wheels from the cache, as the lock
  names them);
- first_edit: main.py edited, re-packed (the objects the cold pack stored are read once
  and their stamps recorded, store/hashed.py);
- edit: a second edit, re-packed: the goal's figure (<= 3 s on 2 cores);
- edit_reading_all: the same edit with the store's `hashed/` records removed first
  (every stored object read again, as every re-pack was before they existed);
- edit_as_before: the same with `installed/` and `scans/` removed too: the wheels
  unpacked again and every binary scanned again (as every re-pack was before
  builders/installed_again.py and pack/scan_memo.py);
- up_to_date: nothing changed: `up to date`.

Figures and a JSON line at the end; medians over the runs, ratios within one run.
`--keep` leaves the last run's folder (gigabytes) for profiling and says where.
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

from bundler.pack.builders.cpython_embed import KNOWN  # noqa: E402
from bundler.pack.sources.fetch import cached  # noqa: E402
from bundler.recipe.load import find_recipe  # noqa: E402
from tests.harness.winenv._cache import cache_root  # noqa: E402
from tests.harness.winenv.wheels import wheel_cache  # noqa: E402

RECIPE = "cudnn-8.9.5.29-cuda11-win-x64"
PADDLE = "paddlepaddle-gpu==2.6.2"
PYPI = "https://pypi.org/simple"
STEPS = ("cold", "first_edit", "edit", "edit_reading_all", "edit_as_before", "up_to_date")


def bench_cache(python: str) -> Path:
    """The bench's own folder in the test cache: BUNDLER_CACHE and the project."""
    root = cache_root() / "bench-paddle-edit" / f"py{python}"
    root.mkdir(parents=True, exist_ok=True)
    embed = KNOWN[python]
    sdist = cached_sdist(embed.sha256)
    if sdist is not None:   # the test cache's copy, linked: not downloaded again
        kept = root / "wheels" / embed.sha256 / sdist.name
        if not kept.exists():
            kept.parent.mkdir(parents=True, exist_ok=True)
            os.link(sdist, kept)
    return root


def cached_sdist(sha256: str) -> Path | None:
    found = sorted((wheel_cache() / sha256).glob("*.tar.gz"))
    return found[0] if len(found) == 1 else None


def runtime_sources() -> dict[str, Path]:
    """Every source of the recipe the test wheel cache holds (the pack takes the ones
    the components need; nvrtc, which Paddle does not load, is not there)."""
    recipe = find_recipe(RECIPE, REPO)
    found = {sid: cached(spec, wheel_cache()) for sid, spec in recipe.sources.items()}
    if found.get("cudnn") is None:
        sys.exit(f"the {RECIPE} cuDNN wheel is not in {wheel_cache()}: run "
                 f"BUNDLER_CACHE={wheel_cache()} python -m bundler fetch once, or pack it")
    return {sid: path for sid, path in found.items() if path is not None}


def write_project(folder: Path, python: str, sources: dict[str, Path]) -> Path:
    """app/main.py, requirements.txt and app.spec (the lock comes from the first pack)."""
    (folder / "app").mkdir(parents=True, exist_ok=True)
    (folder / "app" / "main.py").write_text(
        "import paddle\n\npaddle.utils.run_check()\n")
    if python == "3.11":
        index = f"--index-url {PYPI}\n"
    else:   # the cp310 wheel in the test cache, the rest from PyPI
        index = (f"--index-url {PYPI}\n"
                 f"--find-links {(cache_root() / 'framework-wheels').as_posix()}\n")
    (folder / "requirements.txt").write_text(f"{index}{PADDLE}\n")
    listed = "".join(f'{sid} = "{path.as_posix()}"\n' for sid, path in sources.items())
    spec = folder / "app.spec"
    spec.write_text('[app]\nname = "paddle-app"\nbuilder = "embedded-python"\n'
                    f'path = "app"\nentry = "main.py"\npython = "{python}"\n'
                    'requirements = "requirements.txt"\n\n'
                    f'[runtime]\nrecipe = "{RECIPE}"\n\n[sources]\n{listed}')
    return spec


def environ(cache: Path, store: Path) -> dict[str, str]:
    kept = {key: value for key, value in os.environ.items()
            if not key.startswith(("BUNDLER_", "PYTHONPATH"))}
    return {**kept, "BUNDLER_CACHE": str(cache), "BUNDLER_STORE": str(store),
            "BUNDLER_NO_PROGRESS": "1", "PYTHONPATH": str(REPO)}


def pack(spec: Path, env: dict[str, str], *more: str) -> tuple[dict[str, float], dict]:
    """Wall and CPU seconds (this child's user + system) of one pack, the load average
    when it started, and its --json summary."""
    os.sync()
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bundler", "pack", str(spec), "--json",
                           "--quiet", *more], capture_output=True, text=True, env=env,
                          cwd=spec.parent, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"pack failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "load": load}, json.loads(done.stdout)


def edit(folder: Path, text: str) -> None:
    entry = folder / "app" / "main.py"
    entry.write_text(entry.read_text() + f"# {text}\n")


def first_pack(project: Path, python: str) -> None:
    """Once per cache: resolve (uv, PyPI) and download the wheels; the lock pins them."""
    if (project / "app.spec.lock").is_file():
        return
    spec = write_project(project, python, runtime_sources())
    with tempfile.TemporaryDirectory(prefix="paddle-edit-store-") as store:
        figures, _ = pack(spec, environ(project.parent / "wheels", Path(store)))
    print(f"first pack ever (resolve with uv, download from PyPI): {figures['wall']:.1f} s",
          flush=True)
    shutil.rmtree(project / "dist")


def one_run(work: Path, project: Path, python: str) -> dict[str, dict[str, float]]:
    spec = write_project(work, python, runtime_sources())
    shutil.copyfile(project / "app.spec.lock", work / "app.spec.lock")
    env = environ(project.parent / "wheels", work / "store")
    figures: dict[str, dict[str, float]] = {}
    figures["cold"], summary = pack(spec, env)
    figures["cold"]["bundle_gb"] = _size(work / "dist") / 1e9
    edit(work, "first edit")
    figures["first_edit"], _ = pack(spec, env)
    edit(work, "second edit")
    figures["edit"], summary = pack(spec, env)
    assert summary["up_to_date"] is False and summary["packed_in_full_because"] == \
        "app/main.py changed since the last pack", summary["packed_in_full_because"]
    shutil.rmtree(work / "store" / "hashed")   # as every re-pack was before the records
    edit(work, "third edit")
    figures["edit_reading_all"], _ = pack(spec, env)
    shutil.rmtree(work / "store" / "hashed")
    for records in ("installed", "scans"):
        shutil.rmtree(work / "store" / records, ignore_errors=True)
    edit(work, "fourth edit")
    figures["edit_as_before"], _ = pack(spec, env)
    figures["up_to_date"], summary = pack(spec, env)
    figures["up_to_date"]["answered_up_to_date"] = float(summary["up_to_date"] is True)
    return figures


def _size(folder: Path) -> int:
    seen: set[int] = set()
    total = 0
    for path in folder.rglob("*"):
        info = path.lstat()
        if path.is_file() and not path.is_symlink() and info.st_ino not in seen:
            seen.add(info.st_ino)
            total += info.st_size
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--python", default="3.11", choices=("3.10", "3.11"))
    parser.add_argument("--keep", action="store_true",
                        help="leave the last run's folder (for profiling)")
    args = parser.parse_args()
    root = bench_cache(args.python)
    project = root / "project"
    project.mkdir(exist_ok=True)
    first_pack(project, args.python)
    # bundler's bytecode compiled once, as pip does at install
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "bundler")],
                   check=True)
    runs = []
    for number in range(args.runs):
        work = Path(tempfile.mkdtemp(prefix="paddle-edit-", dir=root))
        try:
            runs.append(one_run(work, project, args.python))
        finally:
            if args.keep and number == args.runs - 1:
                print(f"kept: {work}")
            else:
                shutil.rmtree(work, ignore_errors=True)
        print(f"run {number + 1}: " + ", ".join(
            f"{step} {runs[-1][step]['wall']:.2f} s" for step in STEPS), flush=True)
    median = {step: {kind: statistics.median(r[step][kind] for r in runs)
                     for kind in ("wall", "cpu", "load")} for step in STEPS}
    print(f"\nembedded Paddle 2.6.2 app (CPython {KNOWN[args.python].cpython}, {RECIPE}), "
          f"{runs[0]['cold']['bundle_gb']:.2f} GB bundle, {args.runs} run(s), "
          f"{os.cpu_count()} cores; medians (each run's wall in brackets)")
    for step in STEPS:
        each = ", ".join(f"{r[step]['wall']:.2f}" for r in runs)
        print(f"  {step:17} wall {median[step]['wall']:7.2f} s  CPU {median[step]['cpu']:7.2f} s"
              f"  load {median[step]['load']:5.2f}  ({each})")
    for other in ("edit_reading_all", "edit_as_before"):
        ratio = statistics.median(r["edit"]["wall"] / r[other]["wall"] for r in runs)
        print(f"  edit / {other} (per run, median): {ratio:.2f}x")
    print(f"  up to date: {sum(r['up_to_date']['answered_up_to_date'] for r in runs):.0f} "
          f"of {len(runs)} runs; goal (edit <= 3 s): "
          f"{'met' if median['edit']['wall'] <= 3 else 'NOT met'}")
    print(json.dumps({"python": KNOWN[args.python].cpython, "recipe": RECIPE,
                      "cores": os.cpu_count(), "runs": runs, "median": median}))


if __name__ == "__main__":
    main()
