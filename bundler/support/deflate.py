"""The fastest deflate decoder and CRC-32 at hand: ISA-L's (the `isal` package) where it
is installed, else the standard library's zlib.

Inflating is most of a cold pack's work (1.78 GB of cuDNN 8.9 DLLs out of 1.16 GB of
wheels). On NVIDIA's own cuDNN 8.9.4 wheel ISA-L inflates the same streams 2.4-2.7x
faster than zlib and computes CRC-32 3x faster (docs/performance.md). Both decode the
same bytes, both let go of the GIL, so lanes on several cores run at once. `isal` is a
dependency where it publishes wheels (x86-64 and ARM64); elsewhere zlib does the work.
"""

from __future__ import annotations

import zlib
from typing import Protocol


class Inflater(Protocol):
    """The part of zlib's decompress object bundler uses."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...


try:
    from isal import isal_zlib as _engine
except ImportError:   # no wheel for this machine: the standard library's, slower
    _engine = zlib    # type: ignore[misc]  # same functions, same meaning

ENGINE = _engine.__name__.rpartition(".")[2]   # "isal_zlib" or "zlib"
# A corrupt stream: zlib.error, or ISA-L's own error (its stubs call it an instance).
ERRORS: tuple[type[Exception], ...] = tuple({zlib.error, _engine.error})  # type: ignore[arg-type]


def raw_inflater() -> Inflater:
    """An inflater of a raw deflate stream (a zip member's, no zlib header)."""
    return _engine.decompressobj(-15)


def crc32(data: bytes, value: int = 0) -> int:
    """zlib.crc32, computed by ISA-L where installed (same result)."""
    return _engine.crc32(data, value)
