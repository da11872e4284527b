"""Benchmark: what `bundler verify --run`'s tracer costs on Linux (ptrace with a seccomp
filter that stops only at an mmap of a file with PROT_EXEC: bundler/linux/process_trace.py).

Run on demand (not a test):

    python bench/trace_cost.py [--runs N] [-- COMMAND ...]

Runs COMMAND (default: this Python importing numpy, else json and ctypes) alternately
plain and traced, and prints the medians of the wall time and of the CPU time (the
command's and the tracer's), and how many files its processes mapped as code. The
judge's hashing of what counts comes on top: about 1 s per GB of cuDNN/CUDA libraries.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bundler.linux.process_trace import trace_command, tracing_unavailable  # noqa: E402


def _cpu() -> float:
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("command", nargs="*")
    args = parser.parse_args()
    why = tracing_unavailable()
    if why:
        print(f"cannot trace here: {why}", file=sys.stderr)
        return 2
    module = "numpy" if importlib.util.find_spec("numpy") else "json, ctypes"
    command = args.command or [sys.executable, "-c", f"import {module}"]
    times: dict[str, list[tuple[float, float]]] = {"plain": [], "traced": []}
    mapped = 0
    for _ in range(args.runs):
        wall, cpu = time.perf_counter(), _cpu()
        subprocess.run(command, capture_output=True, check=True)
        times["plain"].append((time.perf_counter() - wall, _cpu() - cpu))
        wall, cpu = time.perf_counter(), _cpu()
        trace = trace_command(command, os.environ, os.getcwd(), 600)
        times["traced"].append((time.perf_counter() - wall, _cpu() - cpu))
        mapped = len(trace.objects)
        trace.close()
    print(f"{' '.join(command)}: {mapped} files mapped as code; medians of {args.runs}")
    for kind, rows in times.items():
        print(f"  {kind:7} wall {statistics.median(r[0] for r in rows) * 1000:7.1f} ms   "
              f"CPU {statistics.median(r[1] for r in rows) * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
