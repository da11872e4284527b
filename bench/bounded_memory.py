"""Benchmark: peak memory of unpacking a 2 GiB zip member, stored, deflate and Deflate64,
and of refusing zip bombs (a member declaring 5 KB that inflates to 2 GiB).

Run on demand (not a test; writes ~3.5 GB of zips into a temporary folder):
    python bench/bounded_memory.py [--dir DIR] [--gib N] [--pack]

Each zip is read in a child process by bundler's zip reader, which streams the member
into a file and hashes it as bundler's stage does; the child reports its peak resident
memory (ru_maxrss) and time. The member is 1 MiB blocks of 256 KiB random bytes and
768 KiB zeros (about as compressible as a cuDNN DLL), or all zeros, which stress the
decoders most (one compressed chunk of zeros inflates a thousandfold, Deflate64's
twenty-thousandfold). The bombs are all zeros too. With --pack, `bundler pack` runs
end to end (stand-in cuDNN DLLs built with mingw-w64, as the tests do) on an NVIDIA-
layout zip whose licence member has that size, and its peak memory is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import inflate64

REPO = Path(__file__).resolve().parents[1]
BLOCK = 1 << 20

# Both children start with this: the path to bundler, and their own peak memory.
_PREAMBLE = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
def peak_mib():
    # VmHWM is this process's own high-water mark; ru_maxrss would also count the
    # parent's memory at fork time (Linux keeps it across exec).
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) >> 10
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
"""

CHILD = _PREAMBLE + """
from bundler.errors import SourceError
from bundler.support.hashing import write_hashed
from bundler.support.zip_reader import ZipArchive
start = time.perf_counter()
outcome = "ok"
with ZipArchive(__import__("pathlib").Path(sys.argv[2])) as archive, \\
        open(sys.argv[3], "wb") as out:
    try:
        size, _ = write_hashed(archive.read_chunks("big.dll"), out)
    except SourceError as exc:
        outcome = "refused: " + exc.message.split(": ", 1)[1]
        size = out.tell()
print(json.dumps({"outcome": outcome, "written": size,
                  "seconds": round(time.perf_counter() - start, 1),
                  "peak_rss_mib": peak_mib()}))
"""


def member_blocks(gib: float, zeros: bool) -> Iterator[bytes]:
    random_part = os.urandom(BLOCK // 4)
    block = bytes(BLOCK) if zeros else random_part + bytes(BLOCK - len(random_part))
    for _ in range(int(gib * 1024)):
        yield block


def _compressor(method: int) -> tuple[Callable[[bytes], bytes], Callable[[], bytes]]:
    if method == 0:
        return (lambda data: data), (lambda: b"")
    if method == 8:
        deflater = zlib.compressobj(6, zlib.DEFLATED, -15)
        return deflater.compress, deflater.flush
    deflate64 = inflate64.Deflater()
    return deflate64.deflate, deflate64.flush


def write_zip(path: Path, method: int, gib: float, bomb: bool = False,
              zeros: bool = False) -> None:
    """A one-member zip, streamed (zipfile cannot write Deflate64). A bomb is all zeros
    and declares 5 KB; `zeros` makes an honest member of zeros."""
    write_members(path, method, [("big.dll", member_blocks(gib, bomb or zeros))],
                  declare={"big.dll": 5000} if bomb else {})


def write_members(path: Path, method: int, members: list[tuple[str, Iterable[bytes]]],
                  declare: dict[str, int] | None = None) -> None:
    """A zip of `members` (name, chunks), each streamed with `method`; `declare` gives a
    member a size other than its own (a bomb)."""
    central = b""
    with open(path, "wb") as out:
        for name, chunks in members:
            encoded = name.encode()
            offset = out.tell()
            out.write(bytes(30 + len(encoded)))  # the local header, filled in below
            compress, flush = _compressor(method)
            crc, size, packed = 0, 0, 0
            for block in chunks:
                crc, size = zlib.crc32(block, crc), size + len(block)
                packed += out.write(compress(block))
            packed += out.write(flush())
            fields = (20, 0, method, 0, 0, crc, packed, (declare or {}).get(name, size),
                      len(encoded), 0)
            end = out.tell()
            out.seek(offset)
            out.write(struct.pack("<4s5H3I2H", b"PK\x03\x04", *fields) + encoded)
            out.seek(end)
            central += struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0,
                                   offset) + encoded
        start = out.tell()
        out.write(central)
        out.write(struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, len(members), len(members),
                              len(central), start, 0))


PACK_CHILD = _PREAMBLE + """
from bundler.cli import main
start = time.perf_counter()
code = main(["pack", sys.argv[2]])
with open(sys.argv[3], "w") as out:
    json.dump({"exit": code, "seconds": round(time.perf_counter() - start, 1),
               "peak_rss_mib": peak_mib()}, out)
"""


def pack_case(scratch: Path, method: int, gib: float) -> dict:
    """`bundler pack` end to end (stand-in cuDNN zip from tests/harness/winenv, mingw-w64 needed)
    with the zip's licence member grown to `gib` GiB: it is staged like any runtime file."""
    sys.path.insert(0, str(REPO))
    from tests.harness.winenv.build import (
        ZIP_LICENSE,
        build_runtime,
        make_toolkit,
        nvidia_zip_members,
    )
    runtime = scratch / "runtime"
    if not runtime.exists():
        build_runtime(runtime)
        make_toolkit(runtime, scratch / "v10.1")
    members: list[tuple[str, Iterable[bytes]]] = [
        (name, member_blocks(gib, False) if name.endswith(ZIP_LICENSE) else [data])
        for name, data in nvidia_zip_members(runtime).items()]
    write_members(scratch / "cudnn.zip", method, members)
    app = scratch / "app"
    app.mkdir(exist_ok=True)
    (app / "main.py").write_text("print('hello')\n")
    spec = scratch / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    'recipe = "cudnn-8.0.3.33-cuda10.1-win-x64"\n'
                    # the stand-ins carry no NVIDIA signature: named, as a user must
                    'allow_unsigned = ["cudnn*.dll"]\n[sources]\n'
                    f'cudnn = "{(scratch / "cudnn.zip").as_posix()}"\n'
                    f'cuda = "{(scratch / "v10.1").as_posix()}"\n')
    result = scratch / "result.json"
    packed = subprocess.run([sys.executable, "-c", PACK_CHILD, str(REPO), str(spec),
                             str(result)], check=True, capture_output=True, text=True)
    outcome = json.loads(result.read_text())
    if outcome["exit"] != 0:
        sys.exit(f"bundler pack failed (exit {outcome['exit']}):\n{packed.stderr}")
    shutil.rmtree(scratch / "dist")
    (scratch / "app.spec.lock").unlink()
    (scratch / "cudnn.zip").unlink()
    return outcome


def measure(zip_path: Path, scratch: Path) -> dict:
    out = scratch / "unpacked.dll"
    child = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(zip_path), str(out)],
                           capture_output=True, text=True, check=True)
    out.unlink(missing_ok=True)
    return json.loads(child.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="where to write the zips (default: a "
                        "temporary folder, removed after)")
    parser.add_argument("--gib", type=float, default=2.0, help="member size in GiB")
    parser.add_argument("--pack", action="store_true", help="also `bundler pack` end to end "
                        "with a zip holding a member that large (needs mingw-w64)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch_name:
        scratch = Path(scratch_name)
        cases = [("stored", 0, False, False), ("deflate", 8, False, False),
                 ("Deflate64", 9, False, False), ("deflate zeros", 8, False, True),
                 ("Deflate64 zeros", 9, False, True), ("deflate bomb", 8, True, False),
                 ("Deflate64 bomb", 9, True, False)]
        for label, method, bomb, zeros in cases:
            zip_path = scratch / "case.zip"
            started = time.perf_counter()
            write_zip(zip_path, method, args.gib, bomb, zeros)
            built = time.perf_counter() - started
            result = measure(zip_path, scratch)
            print(f"{label:15} zip {zip_path.stat().st_size / 2**20:8.1f} MiB "
                  f"(built in {built:5.1f} s): {result['outcome']}; wrote "
                  f"{result['written'] / 2**20:.1f} MiB in {result['seconds']} s, peak RSS "
                  f"{result['peak_rss_mib']} MiB", flush=True)
            zip_path.unlink()
        for label, method in [("stored", 0), ("deflate", 8), ("Deflate64", 9)] * args.pack:
            result = pack_case(scratch, method, args.gib)
            print(f"bundler pack, {label} zip: exit {result['exit']} in {result['seconds']} s, "
                  f"peak RSS {result['peak_rss_mib']} MiB", flush=True)


if __name__ == "__main__":
    main()
