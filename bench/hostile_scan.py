"""Benchmark: what hostile app files cost the app scan (issue 42, #17 and #18).

Run on demand (not a test):

    python bench/hostile_scan.py [--names N]

Times `bundler pack` (a child process, no inputs needed: each case is refused at the
scan) of a folder app holding:

- names: one `.pyd` that calls LoadLibraryExW and names N libraries no recipe ships
  (`cudnn_fake{i}64_8.dll`, UTF-16LE, as Paddle's libpaddle.pyd holds its names): the
  refusal asks, per name, which shipped recipe has it (each recipe read once, not once
  a name: 40,000 names took over 120 s);
- sparse: a sparse 20 GB `huge.dll`: judged by its size before a byte is read (it was
  read whole: 141 s in init).

Prints the wall time of each and bundler's exit status (2: refused, as expected).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"


def loader_binary(count: int) -> bytes:
    head = b"MZ\x90\x00" + b"\x00" * 60 + b"KERNEL32.dll\x00LoadLibraryExW\x00"
    names = (f"cudnn_fake{i}64_8.dll".encode("utf-16-le") for i in range(count))
    return head + b"\x00\x00".join(names) + b"\x00\x00"


def timed_pack(root: Path) -> tuple[float, int]:
    spec = root / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n\n'
                    f'[runtime]\nrecipe = "{SEED}"\n')
    env = {**os.environ, "PYTHONPATH": str(REPO), "BUNDLER_STORE": str(root / "store"),
           "XDG_CACHE_HOME": str(root / "cache")}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bundler", "pack", str(spec)], env=env,
                          capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--names", type=int, default=40_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-scan-") as scratch:
        for case in ("names", "sparse"):
            root = Path(scratch) / case
            app = root / "app"
            app.mkdir(parents=True)
            (app / "main.py").write_text("print('hello')\n")
            if case == "names":
                binary = app / "x.pyd"
                binary.write_bytes(loader_binary(args.names))
                what = f"{args.names} names in a {binary.stat().st_size / 1e6:.1f} MB .pyd"
            else:
                with open(app / "huge.dll", "wb") as handle:
                    handle.truncate(20 << 30)   # sparse: no block written
                what = "a sparse 20 GB huge.dll"
            seconds, code = timed_pack(root)
            print(f"{what}: pack {seconds:.1f} s (exit {code})", flush=True)
            (app / "huge.dll").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
