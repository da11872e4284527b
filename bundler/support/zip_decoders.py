"""The decoders of zip members: stored, deflate (ISA-L or zlib) and Deflate64
(inflate64), each taking the member's compressed bytes in chunks and handing on its
output in pieces of at most OUT bytes, so that no member sits in memory whole and a
zip bomb is caught at its first piece past the declared size (zip_reader.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import inflate64

from bundler.support import deflate
from bundler.support.hashing import CHUNK

STORED, DEFLATED, DEFLATE64 = 0, 8, 9


class Decoder(Protocol):
    def feed(self, data: bytes) -> Iterator[bytes]: ...

    def finish(self) -> Iterator[bytes]:
        """What the decoder still holds once the member's last input is fed."""
        ...


# Decoded output is taken in pieces of at most this size, however well the input packs:
# a zip bomb's member declaring 5 KB must not grow to gigabytes before it is caught.
OUT = CHUNK
# Deflate64 (inflate64) bounds its output per call only by dropping the input that call
# did not read (it keeps it in a field it does not expose). So input goes in slices of
# _DEFLATE64_SLICE with at most _DEFLATE64_BOUND out per call: a call returning less read
# its whole slice. Real DLLs give at most 1.4 MiB out of a 32 KiB slice (cuDNN 8.9.4.25's,
# docs/performance.md). A call that reaches the bound (a run of zeros, a bomb) lost the
# rest of its slice, so the member is decoded again from its first byte in careful
# slices with no bound: one 64 KiB match takes as few as 18 bits (a 1-bit code, 16 extra
# bits, a 1-bit distance), so at most ~15 MB comes out of any 512-byte slice, however
# hostile the stream, and inflate64 holds that twice while it returns it. Careful slices
# alone decode 20% slower (and their Python overhead keeps two decoding threads from
# running at once: docs/performance.md).
_DEFLATE64_SLICE = 1 << 15
_DEFLATE64_BOUND = 8 << 20
_DEFLATE64_CAREFUL_SLICE = 1 << 9


class BoundReached(Exception):
    """A Deflate64 call gave _DEFLATE64_BOUND bytes: the rest of its slice is lost."""


class Stored:
    def feed(self, data: bytes) -> Iterator[bytes]:
        yield data

    def finish(self) -> Iterator[bytes]:
        return iter(())


class Deflate:
    def __init__(self) -> None:
        self._inflater = deflate.raw_inflater()

    def feed(self, data: bytes) -> Iterator[bytes]:
        # A full piece may leave output behind with no input left over (ISA-L takes
        # all the input it is given), so ask again until a piece comes back short.
        while True:
            out = self._inflater.decompress(data, OUT)
            data = self._inflater.unconsumed_tail
            yield out
            if not data and len(out) < OUT:
                return

    def finish(self) -> Iterator[bytes]:
        return iter(())


class Deflate64:
    """inflate64 (1.0.4) never releases the buffer it is handed, so every input object
    would stay in memory for good (a 2 GiB member's whole compressed stream). Its input
    therefore goes through one reused bytearray: one object held, however long the
    member.

    Handed on one by one, each call's output (a few KB of a 512-byte slice) made a pack
    of a Deflate64 zip 7-8x `unzip`'s time: every piece crossed the CRC, the lane's
    hashing and writing threads and their queues. So the output is gathered and handed
    on in pieces of `OUT` bytes, like the other decoders'.

    Bounded (the first try at a member), a call that reaches the bound raises
    BoundReached; careful (the second), slices are small and calls unbounded."""

    def __init__(self, careful: bool = False) -> None:
        self._inflater = inflate64.Inflater()
        self._size = _DEFLATE64_CAREFUL_SLICE if careful else _DEFLATE64_SLICE
        self._bound = 0 if careful else _DEFLATE64_BOUND   # 0: no bound (inflate64's)
        self._slice = bytearray(self._size)
        self._gathered: list[bytes | memoryview] = []   # less than OUT bytes in all
        self._held = 0

    def feed(self, data: bytes) -> Iterator[bytes]:
        view, size, bound = memoryview(data), self._size, self._bound
        for start in range(0, len(view), size):
            piece = view[start:start + size]
            if len(piece) == size:
                self._slice[:] = piece  # same length: allowed while inflate64 holds it
                out = self._inflater.inflate(self._slice, bound)
            else:  # a member's last piece: one small object per member
                out = self._inflater.inflate(bytes(piece), bound)
            if bound and len(out) >= bound:
                raise BoundReached
            if self._held + len(out) < OUT:
                self._gathered.append(out)
                self._held += len(out)
            else:
                yield from self._pieces(out)

    def _pieces(self, out: bytes) -> Iterator[bytes]:
        """Whole pieces of what is gathered and `out`, each byte copied once (the join);
        what is left over stays gathered. A run's long output is cut without copies."""
        rest = memoryview(out)
        while self._held + len(rest) >= OUT:
            need = OUT - self._held
            self._gathered.append(rest[:need])
            rest = rest[need:]
            yield b"".join(self._gathered)
            self._gathered.clear()
            self._held = 0
        if rest:   # a copy, so that a run's long output is not held past this call
            self._gathered.append(rest.tobytes())
            self._held = len(rest)

    def finish(self) -> Iterator[bytes]:
        if self._held:
            yield b"".join(self._gathered)
            self._gathered.clear()
            self._held = 0


DECODERS: dict[int, type[Decoder]] = {STORED: Stored, DEFLATED: Deflate,
                                         DEFLATE64: Deflate64}


def decoded(decoder: Decoder, raw_chunks: Iterator[bytes]) -> Iterator[bytes]:
    for raw in raw_chunks:
        yield from decoder.feed(raw)
    yield from decoder.finish()


def skipped(chunks: Iterator[bytes], count: int) -> Iterator[bytes]:
    """`chunks` without their first `count` bytes."""
    for chunk in chunks:
        if count >= len(chunk):
            count -= len(chunk)
            continue
        yield chunk[count:] if count else chunk
        count = 0
