"""Benchmark: warm re-packs of an embedded-python app (issue 30 item 1).

Run on demand (not a test):
    python bench/embedded_repack.py [--runs N] [--before REV]

The app: python.org's embeddable CPython 3.11 (the pinned sdist), numpy 1.26.4 (the
pinned cp311 win_amd64 wheel, 15 MB) named by `requirements.txt` through a nested
`-r base.txt`, and the seed's stand-in runtime (built with mingw, as the tests build
it). pip's index is an address nothing answers at; the first pack finds numpy through
`PIP_FIND_LINKS` (what an index would serve). In the same run it times:

- `cp -a` of the previous bundle folder: the baseline the re-packs are a ratio of;
- the first pack (pip resolves, downloads, installs; the lock records the wheels);
- a warm re-pack with nothing changed, as online (PIP_FIND_LINKS still set);
- the same with the index unreachable and PIP_FIND_LINKS gone (the network cut off);
- with `--zip`: `cp` of the zip a first `--zip` pack wrote (the baseline of issue 30's
  goal: a re-pack <= 2x that), a re-pack with nothing changed, and the same inside
  `unshare -n` (no network at all; where unshare is allowed);
- `--locked` after a nested `base.txt` was edited: how long until the refusal.

`--before REV` runs the same steps with bundler as of REV (`git archive` into a temp
folder), for the figures before this change; a step that fails there is said so.
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

from tests.harness.packing import SEED  # noqa: E402
from tests.harness.winenv.build import (  # noqa: E402
    build_framework,
    build_runtime,
    make_nvidia_zip,
    make_toolkit,
    nvidia_zip_name,
)
from tests.harness.winenv.pins import embedded_pin  # noqa: E402
from tests.harness.winenv.wheels import embed_sdist, numpy_wheel  # noqa: E402

NOWHERE = "http://127.0.0.1:9/simple"   # the discard port: nothing answers


def workspace(root: Path) -> tuple[Path, dict[str, str]]:
    """The spec and the environment of its packs (own cache, store, index)."""
    runtime = build_runtime(root / "runtime")
    cudnn = make_nvidia_zip(runtime.dir, root / nvidia_zip_name(), "deflate64")
    toolkit = make_toolkit(runtime.dir, root / "cuda" / "v10.1")
    app = root / "app"
    app.mkdir()
    (app / "main.py").write_text("import numpy\nprint(numpy.__version__)\n")
    shutil.copy(build_framework(root / "framework"), app / "framework.dll")
    numpy = embedded_pin("numpy")
    (root / "requirements.txt").write_text("-r base.txt\n")
    (root / "base.txt").write_text(f"numpy=={numpy.version}\n")
    spec = root / "app.spec"
    spec.write_text('[app]\nname = "demo"\nbuilder = "embedded-python"\npath = "app"\n'
                    'entry = "main.py"\npython = "3.11"\nrequirements = "requirements.txt"\n\n'
                    f'[runtime]\nrecipe = "{SEED}"\nallow_unsigned = ["cudnn*.dll"]\n\n'
                    f'[sources]\ncudnn = "{cudnn.as_posix()}"\ncuda = "{toolkit.as_posix()}"\n')
    sdist = embed_sdist()
    kept = root / "cache" / sdist.parent.name
    kept.mkdir(parents=True)
    shutil.copyfile(sdist, kept / sdist.name)
    environ = {key: value for key, value in os.environ.items()
               if not key.startswith(("PIP_", "BUNDLER_", "PYTHONPATH"))}
    environ |= {"BUNDLER_CACHE": str(root / "cache"), "BUNDLER_STORE": str(root / "store"),
                "BUNDLER_NO_PROGRESS": "1", "PIP_INDEX_URL": NOWHERE, "PIP_RETRIES": "0",
                "PIP_TIMEOUT": "2", "PIP_CONFIG_FILE": os.devnull,
                "PIP_FIND_LINKS": str(numpy_wheel().parent)}
    return spec, environ


def pack(tree: Path, spec: Path, environ: dict[str, str], *args: str,
         within: tuple[str, ...] = ()) -> tuple[float, int, str]:
    """Seconds, exit code and last error line of `bundler pack` run from `tree`
    (`within`: a command it runs under, e.g. `unshare -n`)."""
    start = time.perf_counter()
    done = subprocess.run([*within, sys.executable, "-m", "bundler", "pack", str(spec), *args],
                          env={**environ, "PYTHONPATH": str(tree)}, cwd=spec.parent,
                          capture_output=True, text=True, check=False)
    last = (done.stderr.strip().splitlines() or [""])[-1 if done.returncode else 0]
    return time.perf_counter() - start, done.returncode, last


def time_cp(bundle: Path, dest: Path) -> float:
    shutil.rmtree(dest, ignore_errors=True)
    if dest.is_file():
        dest.unlink()
    subprocess.run(["sync"], check=True)
    start = time.perf_counter()
    subprocess.run(["cp", "-a", str(bundle), str(dest)], check=True)
    return time.perf_counter() - start


def measure(tree: Path, label: str, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="embedded-repack-") as scratch:
        spec, environ = workspace(Path(scratch))
        first, code, last = pack(tree, spec, environ)
        if code:
            sys.exit(f"{label}: the first pack failed: {last}")
        bundle = spec.parent / "dist" / "demo"
        cp = statistics.median(time_cp(bundle, Path(scratch) / "copy") for _ in range(runs))
        print(f"{label}: cp -a of the bundle {cp:.2f} s (baseline); first pack {first:.1f} s")
        offline = {k: v for k, v in environ.items() if k != "PIP_FIND_LINKS"}
        rows: list[tuple[str, dict[str, str], tuple[str, ...], tuple[str, ...]]] = [
            ("warm re-pack, nothing changed", environ, (), ()),
            ("warm re-pack, index unreachable", offline, (), ())]
        for what, env, args, within in rows:
            median = _repacks(tree, spec, env, args, within, runs, label, what)
            print(f"{label}: {what}: {median:.2f} s = {median / cp:.1f}x cp")
        zipped = spec.parent / "dist" / "demo.zip"
        seconds, code, last = pack(tree, spec, environ, "--zip", str(zipped))
        if code:
            print(f"{label}: the first pack with --zip FAILED: {last[:160]}")
        else:
            cp_zip = statistics.median(time_cp(zipped, Path(scratch) / "copy.zip")
                                       for _ in range(runs))
            print(f"{label}: cp of the zip ({zipped.stat().st_size / 1e6:.0f} MB) "
                  f"{cp_zip:.2f} s (baseline); first pack with --zip {seconds:.1f} s")
            cut = ("unshare", "-n") if shutil.which("unshare") and subprocess.run(
                ["unshare", "-n", "true"], capture_output=True).returncode == 0 else ()
            zip_rows = [("re-pack --zip, nothing changed", environ, ())]
            zip_rows += [("re-pack --zip, network cut off (unshare -n)", offline, cut)] \
                if cut else []
            for what, env, within in zip_rows:
                median = _repacks(tree, spec, env, ("--zip", str(zipped)), within, runs,
                                  label, what)
                print(f"{label}: {what}: {median:.2f} s = {median / cp_zip:.1f}x cp of the "
                      "zip (goal <= 2x)")
            if not cut:
                print(f"{label}: unshare -n not allowed here: the network-cut row is left out")
        (spec.parent / "base.txt").write_text(
            (spec.parent / "base.txt").read_text() + "# edited\n")
        seconds, code, last = pack(tree, spec, environ, "--locked")
        print(f"{label}: --locked after base.txt was edited: "
              + (f"refused after {seconds:.2f} s ({last[:120]})" if code == 2
                 else f"NOT refused (exit {code}) after {seconds:.2f} s"))


def _repacks(tree: Path, spec: Path, environ: dict[str, str], args: tuple[str, ...],
             within: tuple[str, ...], runs: int, label: str, what: str) -> float:
    """The median seconds of `runs` packs, each after `sync`; a failure is said."""
    times = []
    for _ in range(runs):
        subprocess.run(["sync"], check=True)
        seconds, code, last = pack(tree, spec, environ, *args, within=within)
        times.append(seconds)
        if code:
            print(f"{label}: {what}: FAILED: {last[:160]}")
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", metavar="REV", help="also time bundler as of REV")
    parser.add_argument("--git", type=Path, default=REPO, help="the repository REV is in")
    args = parser.parse_args()
    if args.before:
        with tempfile.TemporaryDirectory(prefix="bundler-before-") as before:
            archive = subprocess.run(["git", "-C", str(args.git), "archive", args.before],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", before], input=archive, check=True)
            measure(Path(before), f"before ({args.before})", args.runs)
    measure(REPO, "now", args.runs)


if __name__ == "__main__":
    main()
