"""Benchmark: `bundler pack --zip`, cold and re-packed with nothing changed.

Run on demand (not a test):
    python bench/zip_repack.py [--wheels DIR] [--runs N] [--embedded]

The full cuDNN 8.9.4.25 / CUDA 11 wheel set (1.78 GB of DLLs; from DIR, else the wheel
cache, fetched with pip on first use). Each run starts from an empty store and measures,
in the same run, each timed step after `sync`:

- a cold pack without --zip, and a cold pack with --zip (empty store each): the
  difference is what writing the zip costs a cold pack;
- Info-ZIP's `zip -r -6` of the same bundle folder (one thread): the baseline of the
  cold zip;
- a re-pack with --zip, nothing changed (`--recheck`: in full, every stream kept by the
  cold one; without it the pack finds itself up to date, pack/up_to_date.py);
- `cp` of the cold pack's zip: the baseline of the re-pack.

Goals (issue 30): the re-pack <= 2x `cp` of the zip; the cold zip's part <= 0.5x
`zip -r -6` on two cores. The warm/cold ratio is printed too.

`--embedded`: the issue's own case instead, an embedded-python app (python.org's
embeddable CPython 3.11 and numpy 1.26.4 from its pinned wheel, pip's index unreachable)
with the same runtime; it times the first pack with --zip, `cp` of that zip, a re-pack
with --zip and nothing changed (up to date), the same inside `unshare -n` (no network
at all), and the same with `--recheck` (in full: no pip, every byte checked).
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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from pack_wheels import _CHILD, RECIPE, warm, wheels_for, write_spec  # noqa: E402

from bundler.recipe.load import find_recipe  # noqa: E402


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command[:4])}... failed:\n{done.stdout}\n{done.stderr}")
    return elapsed


def cp_of(zipped: Path, copy: Path) -> float:
    """The fastest of three `cp` of the zip, each to a new file after `sync`: the
    strictest baseline (a first write into memory this VM never touched took up to 3 s
    where the next took 0.8 s)."""
    times = []
    for _ in range(3):
        copy.unlink(missing_ok=True)
        times.append(timed(["cp", str(zipped), str(copy)]))
    return min(times)


def pack(spec: Path, out: Path, store: Path, *more: str, within: tuple[str, ...] = (),
         environ: dict[str, str] | None = None) -> tuple[float, dict]:
    """Seconds of `bundler pack` in a child process (under `within`, e.g. unshare -n),
    and its summary (--json)."""
    env = {**(os.environ if environ is None else environ), "BUNDLER_NO_PROGRESS": "1",
           "PYTHONPATH": str(REPO), "BUNDLER_STORE": str(store)}
    # As an installed bundler runs: pip compiles its bytecode once, at install. (This
    # project's machine sets PYTHONDONTWRITEBYTECODE, which recompiles bundler's ~140
    # modules on every run: 0.3 s.)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    command = [*within, sys.executable, "-c", _CHILD, "pack", str(spec), "--out", str(out),
               "--json", *more]
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    stats = json.loads(done.stderr.strip().splitlines()[-1])   # _CHILD's last line
    if done.returncode != 0 or stats["code"] != 0:
        sys.exit(f"pack failed:\n{done.stdout}\n{done.stderr}")
    return elapsed, json.loads(done.stdout)


def cold(spec: Path, out: Path, store: Path, *more: str) -> tuple[float, dict]:
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(store, ignore_errors=True)
    spec.with_name(spec.name + ".lock").unlink(missing_ok=True)
    return pack(spec, out, store, *more)


def one_run(spec: Path, work: Path) -> dict[str, float]:
    out, store, zipped = work / "dist" / "app", work / "store", work / "app.zip"
    zipped.unlink(missing_ok=True)
    plain, _ = cold(spec, out, store)
    with_zip, summary = cold(spec, out, store, "--zip", str(zipped))
    assert summary["zip_members"]["reused"] == 0, summary["zip_members"]
    infozip = work / "infozip.zip"
    infozip.unlink(missing_ok=True)
    info = timed(["sh", "-c", f"cd {out.parent} && zip -r -6 -q {infozip} {out.name}"])
    repack, summary = pack(spec, out, store, "--zip", str(zipped), "--recheck")
    counts = summary["zip_members"]
    assert counts["compressed"] == 0, counts   # every stream was kept by the cold pack
    copy = cp_of(zipped, work / "copy.zip")
    return {"cold pack": plain, "cold pack --zip": with_zip, "zip part": with_zip - plain,
            "zip -r -6": info, "re-pack --zip": repack, "cp of the zip": copy,
            "zip MB": zipped.stat().st_size / 1e6, "infozip MB": infozip.stat().st_size / 1e6}


def embedded_run(spec: Path, work: Path) -> dict[str, float]:
    """The embedded-python app: first pack with --zip, cp of the zip, re-packs."""
    out, store, zipped = work / "dist" / "bench", work / "store", work / "app.zip"
    zipped.unlink(missing_ok=True)
    first, summary = cold(spec, out, store, "--zip", str(zipped))
    copy = cp_of(zipped, work / "copy.zip")
    repack, summary = pack(spec, out, store, "--zip", str(zipped))
    assert summary["zip_members"]["compressed"] == 0, summary["zip_members"]
    assert summary["up_to_date"] is True, "nothing changed, yet the re-pack packed"
    full, summary = pack(spec, out, store, "--zip", str(zipped), "--recheck")
    assert summary["zip_members"]["compressed"] == 0, summary["zip_members"]
    row = {"first pack --zip": first, "cp of the zip": copy, "re-pack --zip": repack,
           "re-pack --zip --recheck": full, "zip MB": zipped.stat().st_size / 1e6}
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0:
        row["re-pack --zip, unshare -n"], summary = pack(
            spec, out, store, "--zip", str(zipped), within=("unshare", "-n"))
        assert summary["up_to_date"] is True
        offline = {k: v for k, v in os.environ.items() if k != "PIP_FIND_LINKS"}
        row["--recheck, unshare -n"], summary = pack(   # in full, no find-links: the cache
            spec, out, store, "--zip", str(zipped), "--recheck", within=("unshare", "-n"),
            environ=offline)
    return row


def embedded_spec(work: Path, wheels: dict[str, Path]) -> Path:
    """An embedded-python app of numpy beside the runtime's wheels; pip's index is an
    address nothing answers at, numpy found through PIP_FIND_LINKS by the first pack."""
    from tests.harness.winenv.pins import embedded_pin
    from tests.harness.winenv.wheels import embed_sdist, numpy_wheel

    sdist = embed_sdist()
    kept = work / "cache" / sdist.parent.name
    kept.mkdir(parents=True)
    shutil.copyfile(sdist, kept / sdist.name)
    os.environ.update({"BUNDLER_CACHE": str(work / "cache"), "PIP_RETRIES": "0",
                       "PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_TIMEOUT": "2",
                       "PIP_CONFIG_FILE": os.devnull,
                       "PIP_FIND_LINKS": str(numpy_wheel().parent)})
    (work / "app").mkdir()
    (work / "app" / "main.py").write_text("import numpy\nprint(numpy.__version__)\n")
    (work / "requirements.txt").write_text(f"numpy=={embedded_pin('numpy').version}\n")
    sources = "".join(f'{sid} = "{path}"\n' for sid, path in wheels.items())
    spec = work / "app.spec"
    spec.write_text('[app]\nname = "bench"\nbuilder = "embedded-python"\npath = "app"\n'
                    'entry = "main.py"\npython = "3.11"\nrequirements = "requirements.txt"\n'
                    f'[runtime]\nrecipe = "{RECIPE}"\n[sources]\n{sources}')
    return spec


def _runs(run: Callable[[], dict[str, float]], count: int
          ) -> tuple[dict[str, float], list[dict[str, float]]]:
    """`count` runs, each printed as it ends, and their medians printed and returned."""
    runs = []
    for number in range(count):
        runs.append(run())
        print(f"run {number + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1].items()),
              flush=True)
    median = {key: statistics.median(one[key] for one in runs) for key in runs[0]}
    print(f"\nmedian of {len(runs)} (seconds; sizes in MB):")
    for key, value in median.items():
        print(f"  {key:26} {value:8.2f}")
    return median, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--embedded", action="store_true",
                        help="an embedded-python app (issue 30's case), not a folder app")
    args = parser.parse_args()
    recipe = find_recipe(RECIPE, REPO, {})
    wheels = wheels_for(recipe, args.wheels)
    warm(list(wheels.values()))
    with tempfile.TemporaryDirectory(prefix="bench-zip-") as folder:
        work = Path(folder)
        if args.embedded:
            spec = embedded_spec(work, wheels)
            median = _runs(lambda: embedded_run(spec, work), args.runs)[0]
            for key in ("re-pack --zip", "re-pack --zip, unshare -n",
                        "re-pack --zip --recheck", "--recheck, unshare -n"):
                if key in median:
                    print(f"{key} / cp of the zip: "
                          f"{median[key] / median['cp of the zip']:.2f}x (goal <= 2x)")
            return
        spec = write_spec(work, wheels, [])
        median, runs = _runs(lambda: one_run(spec, work), args.runs)
    print(f"re-pack --zip / cp of the zip: {median['re-pack --zip'] / median['cp of the zip']:.2f}x"
          " (goal <= 2x)")
    print(f"zip part of a cold pack / zip -r -6: {median['zip part'] / median['zip -r -6']:.2f}x"
          f" (goal <= 0.5x on two cores; {os.cpu_count()} here)")
    print(f"re-pack --zip / cold pack --zip: "
          f"{median['re-pack --zip'] / median['cold pack --zip']:.3f}x")
    per_run = [run["re-pack --zip"] / run["cold pack --zip"] for run in runs]
    print("  runs: " + ", ".join(f"{ratio:.3f}x" for ratio in per_run))


if __name__ == "__main__":
    main()
