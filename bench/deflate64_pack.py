"""Benchmark: a cold pack of NVIDIA's legacy cuDNN zip, Deflate64, against `unzip` of it
and against a cold pack of the same zip written as plain deflate.

Run on demand (not a test; 7-Zip and Info-ZIP's unzip needed):
    python bench/deflate64_pack.py [--wheels DIR] [--zips DIR] [--runs N]

NVIDIA's legacy cuDNN zips store their DLLs as Deflate64. This builds that layout
(`cuda/bin/*.dll`, `cuda/NVIDIA_SLA_cuDNN_Support.txt`) from the seven DLLs of the cuDNN
8.9.4.25 wheel (1.15 GB; the wheel from DIR, else the wheel cache, fetched with pip on
first use) twice with 7-Zip, once `-mm=Deflate64` and once `-mm=Deflate`, into the zips
folder (kept there: 7-Zip takes minutes). A recipe file beside the spec is the shipped
`cudnn-8.9.4.25-cuda11-win-x64` with its cuDNN source read from the zip
(`kind = "archive"`, `root = "cuda"`); cuBLAS and cudart come from their wheels, as the
default components need them. Signature checks stay on (the DLLs are NVIDIA's).

Each run measures, in the same run, each step after `sync`, from a warm page cache:
`unzip` of the Deflate64 zip, `unzip` of the deflate zip, a cold pack (an empty store)
of each, and a cold pack of the Deflate64 zip in one pass as before 2026-12-06 (on a
machine of 2 or 3 cores a Deflate64 archive is now inflated in parts: see
DEFLATE64_PARALLEL_CORES in bundler/pack/sources/archive_source.py). It prints the
medians, each pack as a ratio of `unzip` of the same zip, the Deflate64 pack as a ratio
of the deflate one, and the packs' peak memory.
Goals (issue 30): the Deflate64 pack <= 1.2x the deflate one and <= 0.6x `unzip`.

With --decoders it first times bundler's zip reader alone on the largest member
(cudnn_cnn_infer64_8.dll, 624 MB), CPU seconds, best of 3: Deflate64 in inflate64
slices of 512 bytes, 2 KiB and 32 KiB (bundler's; each call bounded to 8 MiB out), and
the deflate zip's member by the deflate engine (bundler/support/zip_decoders.py).
"""

from __future__ import annotations

import argparse
import os
import re
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

from pack_wheels import _CHILD, RECIPE, warm, wheels_for  # noqa: E402
from repack import pack  # noqa: E402

from bundler.recipe.load import find_recipe  # noqa: E402
from bundler.support import deflate  # noqa: E402

DLLS = ["cudnn64_8.dll", "cudnn_adv_infer64_8.dll", "cudnn_adv_train64_8.dll",
        "cudnn_cnn_infer64_8.dll", "cudnn_cnn_train64_8.dll", "cudnn_ops_infer64_8.dll",
        "cudnn_ops_train64_8.dll"]
LICENCE = "NVIDIA_SLA_cuDNN_Support.txt"   # where NVIDIA's cuDNN 8 zips keep it
WHEEL_LICENCE = "nvidia_cudnn_cu11-8.9.4.25.dist-info/License.txt"
METHODS = {"Deflate64": "Deflate64", "deflate": "Deflate"}   # label -> 7-Zip's -mm=
# The pack as it was before Deflate64 archives were cut into parts on 2 cores.
ONE_PASS = "Deflate64, one pass"
_ONE_PASS_CHILD = ("import bundler.pack.sources.archive_source as one\n"
                   "one.DEFLATE64_PARALLEL_CORES = one.PARALLEL_CORES\n" + _CHILD)


def build_zips(wheel: Path, folder: Path) -> dict[str, Path]:
    """The legacy-layout zips, built once per wheel (named by the wheel's file)."""
    folder.mkdir(parents=True, exist_ok=True)
    zips = {label: folder / f"{wheel.stem}-legacy-{label}.zip" for label in METHODS}
    if all(path.is_file() for path in zips.values()):
        return zips
    with tempfile.TemporaryDirectory(prefix="bundler-bench-layout-") as temporary:
        cuda = Path(temporary) / "cuda"
        (cuda / "bin").mkdir(parents=True)
        subprocess.run(["unzip", "-q", "-o", "-j", str(wheel),
                        *(f"nvidia/cudnn/bin/{dll}" for dll in DLLS), "-d", str(cuda / "bin")],
                       check=True)
        subprocess.run(["unzip", "-q", "-o", "-j", str(wheel), WHEEL_LICENCE, "-d",
                        temporary], check=True)
        os.replace(Path(temporary) / "License.txt", cuda / LICENCE)
        for label, method in METHODS.items():
            if zips[label].is_file():
                continue
            print(f"building {zips[label].name} with 7-Zip (minutes)", flush=True)
            partial = zips[label].with_suffix(".partial.zip")
            partial.unlink(missing_ok=True)
            subprocess.run(["7z", "a", "-tzip", f"-mm={method}", "-mtc=off", "-bd", "-bso0",
                            "-bsp0", str(partial), "cuda"], cwd=temporary, check=True)
            os.replace(partial, zips[label])
    return zips


def legacy_recipe(shipped: Path) -> str:
    """The shipped recipe with its cuDNN source read from NVIDIA's legacy zip layout."""
    text = shipped.read_text(encoding="utf-8")
    table = re.search(r"\[sources\.cudnn\]\n.*?\n\n", text, re.DOTALL)
    assert table, "the shipped recipe has no [sources.cudnn] table"
    members = ", ".join(f'"bin/{dll}"' for dll in DLLS)
    text = text.replace(table.group(0),
                        '[sources.cudnn]\nsigned_by = "NVIDIA Corporation"\nkind = "archive"\n'
                        f'root = "cuda"\ncontents = [{members}, "{LICENCE}"]\n\n')
    text = text.replace("cudnn:nvidia/cudnn/bin/", "cudnn:bin/")
    text = text.replace(f'source = "cudnn", member = "{WHEEL_LICENCE}"',
                        f'source = "cudnn", member = "{LICENCE}"')
    return re.sub(r'^name = ".*"$', f'name = "{RECIPE}-legacy-zip"', text, count=1,
                  flags=re.MULTILINE)


def write_spec(work: Path, recipe_text: str, zip_path: Path, wheels: dict[str, Path]) -> Path:
    work.mkdir()
    (work / "app").mkdir()
    (work / "app" / "main.py").write_text("print('bench')\n")
    (work / "legacy.toml").write_text(recipe_text, encoding="utf-8")
    sources = "".join(f'{sid} = "{path}"\n' for sid, path in
                      {**wheels, "cudnn": zip_path}.items())
    spec = work / "app.spec"
    spec.write_text('[app]\nname = "bench"\npath = "app"\nentry = "main.py"\n'
                    f'[runtime]\nrecipe = "legacy.toml"\n[sources]\n{sources}')
    return spec


def time_decoders(zips: dict[str, Path]) -> None:
    from bundler.support import zip_decoders, zip_reader
    largest = "cuda/bin/cudnn_cnn_infer64_8.dll"
    cases = [("Deflate64", 512), ("Deflate64", 2048), ("Deflate64", 32768), ("deflate", 0)]
    for label, slice_bytes in cases:
        if slice_bytes:
            zip_decoders._DEFLATE64_SLICE = slice_bytes
        best = float("inf")
        with zip_reader.ZipArchive(zips[label]) as archive:
            size = archive.members[largest].size
            for _ in range(3):
                start = time.process_time()
                archive.check_member(largest)
                best = min(best, time.process_time() - start)
        how = f"slices of {slice_bytes} bytes" if slice_bytes else f"by {deflate.ENGINE}"
        print(f"  reader, {label} {how}: {best:.2f} s CPU, {size / best / 1e6:.0f} MB/s",
              flush=True)
    zip_decoders._DEFLATE64_SLICE = 32768


def children_cpu() -> float:
    """CPU seconds (user + system) of the children waited for so far: unlike wall time,
    not inflated by other work on a busy machine."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def time_unzip(zip_path: Path, out: Path) -> tuple[float, float]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    cpu, start = children_cpu(), time.perf_counter()
    subprocess.run(["unzip", "-q", "-o", str(zip_path), "-d", str(out)], check=True)
    return time.perf_counter() - start, children_cpu() - cpu


def cold_pack(spec: Path, out: Path, store: Path, child: str = _CHILD
              ) -> tuple[float, float, int]:
    for stale in (out, store):
        shutil.rmtree(stale, ignore_errors=True)
    spec.with_name(spec.name + ".lock").unlink(missing_ok=True)
    cpu = children_cpu()
    elapsed, peak = pack(spec, out, store, child)
    return elapsed, children_cpu() - cpu, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheels", type=Path, help="folder holding the wheels")
    parser.add_argument("--zips", type=Path,
                        default=Path(tempfile.gettempdir()) / "bundler-bench-deflate64",
                        help="where the legacy zips are built and kept")
    parser.add_argument("--runs", type=int, default=3, help="pack runs (0: none)")
    parser.add_argument("--decoders", action="store_true",
                        help="first time the zip reader alone on the largest member")
    args = parser.parse_args()
    for tool in ("7z", "unzip"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is needed (apt-get install p7zip-full unzip)")
    recipe = find_recipe(RECIPE, Path.cwd())
    wheels = wheels_for(recipe, args.wheels)
    zips = build_zips(wheels.pop("cudnn"), args.zips)
    recipe_text = legacy_recipe(recipe.path)
    if args.decoders:
        time_decoders(zips)
    times: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    peaks: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bundler-bench-") as temporary:
        work = Path(temporary)
        specs = {label: write_spec(work / label, recipe_text, path, wheels)
                 for label, path in zips.items()}
        warm([*zips.values(), *wheels.values()])
        for run in range(args.runs):
            for label, path in zips.items():
                os.sync()
                elapsed, cpu = time_unzip(path, work / "unzipped")
                times.setdefault(f"unzip {label}", []).append(elapsed)
                cpus.setdefault(f"unzip {label}", []).append(cpu)
            shutil.rmtree(work / "unzipped")
            packs = [*((label, spec, _CHILD) for label, spec in specs.items()),
                     (ONE_PASS, specs["Deflate64"], _ONE_PASS_CHILD)]
            for label, spec, child in packs:
                os.sync()
                elapsed, cpu, peaks[label] = cold_pack(spec, work / "bundle", work / "store",
                                                       child)
                times.setdefault(f"pack {label}", []).append(elapsed)
                cpus.setdefault(f"pack {label}", []).append(cpu)
            print(f"run {run + 1}: " + ", ".join(f"{key} {values[-1]:.2f} s "
                                                  f"({cpus[key][-1]:.2f} s CPU)"
                                                  for key, values in times.items()), flush=True)
    if not args.runs:
        return
    median = {key: statistics.median(values) for key, values in times.items()}
    cpu_median = {key: statistics.median(values) for key, values in cpus.items()}
    sizes = {label: path.stat().st_size for label, path in zips.items()}
    print(f"{RECIPE}, cuDNN from NVIDIA's legacy zip layout, 7 DLLs (1.15 GB); "
          f"{args.runs} runs (median), {os.cpu_count()} cores, deflate by {deflate.ENGINE}")
    for label in zips:
        unzip_s, pack_s = median[f"unzip {label}"], median[f"pack {label}"]
        print(f"  {label:9} zip {sizes[label] / 1e6:5.0f} MB: unzip {unzip_s:6.2f} s, "
              f"cold pack {pack_s:6.2f} s = {pack_s / unzip_s:.2f}x unzip, "
              f"peak {peaks[label] / 1024:.0f} MiB; CPU: unzip "
              f"{cpu_median[f'unzip {label}']:.2f} s, pack {cpu_median[f'pack {label}']:.2f} s")
    one_pass = median[f"pack {ONE_PASS}"]
    print(f"  {ONE_PASS}: cold pack {one_pass:6.2f} s = "
          f"{one_pass / median['unzip Deflate64']:.2f}x unzip, peak "
          f"{peaks[ONE_PASS] / 1024:.0f} MiB; CPU {cpu_median[f'pack {ONE_PASS}']:.2f} s; "
          f"in parts / one pass: {median['pack Deflate64'] / one_pass:.2f}x")
    ratio = median["pack Deflate64"] / median["pack deflate"]
    print(f"  Deflate64 pack / deflate pack: {ratio:.2f}x (goal <= 1.2x); CPU "
          f"{cpu_median['pack Deflate64'] / cpu_median['pack deflate']:.2f}x")


if __name__ == "__main__":
    main()
