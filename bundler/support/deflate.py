"""The fastest deflate decoder, encoder and CRC-32 at hand: ISA-L's (the `isal` package)
where it is installed, else the standard library's zlib.

Inflating is most of a cold pack's work (1.78 GB of cuDNN 8.9 DLLs out of 1.16 GB of
wheels). On NVIDIA's own cuDNN 8.9.4 wheel ISA-L inflates the same streams 2.4-2.7x
faster than zlib and computes CRC-32 3x faster (docs/performance.md). Both decode the
same bytes, both let go of the GIL, so lanes on several cores run at once. `isal` is a
dependency where it publishes wheels (x86-64 and ARM64); elsewhere zlib does the work.

Compressing is --zip's work: a Compressor is one engine at one level, `zip_compressor`
reads --zip-level (fast: ISA-L's level 2, else zlib's 1; 1-9: zlib's), and its
`settings` name what decides the stream's bytes (engine, version, level).
"""

from __future__ import annotations

import functools
import hashlib
import zlib
from dataclasses import dataclass
from typing import Protocol


class Inflater(Protocol):
    """The part of zlib's decompress object bundler uses."""

    @property
    def unconsumed_tail(self) -> bytes: ...

    def decompress(self, data: bytes, max_length: int = ..., /) -> bytes: ...


try:
    import isal
    from isal import isal_zlib as _engine
except ImportError:   # no wheel for this machine: the standard library's, slower
    isal = None       # type: ignore[assignment]
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


# --zip's compressor. ISA-L level 2 deflates a cuDNN DLL ~15x faster than zlib 6 for ~2-5%
# more bytes (docs/performance.md has the measurement); level 3 is ~1.4x slower than 2
# for under 1% fewer bytes, level 1 no faster and larger. Without ISA-L: zlib 1, whose
# size is ISA-L 2's and which is zlib's fastest.
FAST = "fast"
_FAST_ISAL = 2
_FAST_ZLIB = 1


@dataclass(frozen=True)
class Compressor:
    """A deflate compressor at one level: "isal" (ISA-L, levels 0-3) or "zlib" (1-9).
    The same bytes in give the same stream out for the same `settings`."""

    engine: str
    level: int

    @property
    def settings(self) -> str:
        """Everything that decides the stream's bytes: the engine, its version, the level
        and, for ISA-L, what this processor makes of a fixed sample (a kept stream is
        reused only under the same ones)."""
        if self.engine == "isal":
            assert isal is not None
            return (f"isal {isal.__version__} (ISA-L {isal.ISAL_VERSION}) "
                    f"level {self.level}, sample {_sample_digest(self)}")
        return f"zlib {zlib.ZLIB_RUNTIME_VERSION} level {self.level}"

    def raw_deflater(self, dictionary: bytes = b"") -> zlib._Compress:
        """A compressor of a raw deflate stream (a zip member's), primed with
        `dictionary` (what the stream may refer back to) when given."""
        module = _engine if self.engine == "isal" else zlib
        if dictionary:
            return module.compressobj(self.level, zlib.DEFLATED, -15,  # type: ignore[no-any-return]
                                      zdict=dictionary)
        return module.compressobj(self.level, zlib.DEFLATED, -15)  # type: ignore[no-any-return]


def _sample() -> bytes:
    """256 KiB that deflate finds matches in at every distance: words of 3 to 40 bytes
    picked by sha256 in counter mode (the same bytes on any Python)."""
    words = [hashlib.sha256(b"word %d" % n).digest()[:3 + n % 38] for n in range(400)]
    out = bytearray()
    counter = 0
    while len(out) < 1 << 18:
        pick = hashlib.sha256(b"pick %d" % counter).digest()
        counter += 1
        out += b"".join(words[(pick[k] << 8 | pick[k + 1]) % len(words)]
                        for k in range(0, 32, 2))
    return bytes(out[:1 << 18])


@functools.cache
def _sample_digest(compressor: Compressor) -> str:
    """ISA-L picks its code by the processor's features, and some of it deflates the same
    bytes differently (level 3 differs between AVX-512, AVX2 and SSE4.2; levels 1 and 2
    only without SSE4.2): the hash of what this processor makes of a fixed sample tells
    them apart, so a stream one made is never copied into a zip another writes."""
    deflater = compressor.raw_deflater()
    made = deflater.compress(_sample()) + deflater.flush()
    return hashlib.sha256(made).hexdigest()[:16]


def zip_compressor(level: str) -> Compressor:
    """--zip-level's value: "fast" (ISA-L's level 2, zlib 1 where ISA-L is not
    installed) or 1-9 (zlib at that level, as `zip -N` and `gzip -N`: 9 smallest and
    slowest). ValueError for anything else."""
    if level == FAST:
        return Compressor("isal", _FAST_ISAL) if isal is not None \
            else Compressor("zlib", _FAST_ZLIB)
    if len(level) == 1 and level in "123456789":
        return Compressor("zlib", int(level))
    raise ValueError(f"{level!r}: expected {FAST} or a level from 1 to 9")
