"""Benchmark: peak memory of unpacking a 2 GiB zip member, stored, deflate and Deflate64,
and of refusing zip bombs (a member declaring 5 KB that inflates to 2 GiB).

Run on demand (not a test; writes ~3.5 GB of zips into a temporary folder):
    python bench/bounded_memory.py [--dir DIR] [--gib N]

Each zip is read in a child process by bundler's zip reader, which streams the member
into a file and hashes it as bundler's stage does; the child reports its peak resident
memory (ru_maxrss) and time. The member is 1 MiB blocks of 256 KiB random bytes and
768 KiB zeros (about as compressible as a cuDNN DLL), or all zeros, which stress the
decoders most (one compressed chunk of zeros inflates a thousandfold, Deflate64's
twenty-thousandfold). The bombs are all zeros too.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import inflate64

REPO = Path(__file__).resolve().parents[1]
BLOCK = 1 << 20

CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
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
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10}))
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
    name = b"big.dll"
    compress, flush = _compressor(method)
    crc, size, packed = 0, 0, 0
    with open(path, "wb") as out:
        out.write(bytes(30 + len(name)))  # the local header, filled in below
        for block in member_blocks(gib, bomb or zeros):
            crc, size = zlib.crc32(block, crc), size + len(block)
            packed += out.write(compress(block))
        packed += out.write(flush())
        declared = 5000 if bomb else size
        fields = (20, 0, method, 0, 0, crc, packed, declared, len(name), 0)
        central = out.tell()
        out.write(struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0)
                  + name)
        end = out.tell()
        out.write(struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, end - central,
                              central, 0))
        out.seek(0)
        out.write(struct.pack("<4s5H3I2H", b"PK\x03\x04", *fields) + name)


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


if __name__ == "__main__":
    main()
