"""write_hashed hashes and writes on a second thread: same bytes, same digest, and a
write that fails (a full disk) still fails the caller."""

from __future__ import annotations

import errno
import hashlib
import io
import os

import pytest

from bundler.support.hashing import write_hashed


def test_many_chunks_are_written_and_hashed_in_order() -> None:
    chunks = [os.urandom(n) for n in (1, 5000, 1 << 20, 3 << 20, 7, 1 << 16)] * 5
    out = io.BytesIO()
    size, digest = write_hashed(iter(chunks), out)
    data = b"".join(chunks)
    assert (size, digest, out.getvalue()) == (len(data), hashlib.sha256(data).hexdigest(),
                                              data)


class _FullDisk(io.BytesIO):
    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_write_fails_the_caller() -> None:
    with pytest.raises(OSError) as raised:
        write_hashed(iter([b"x" * (1 << 20)] * 20), _FullDisk())
    assert raised.value.errno == errno.ENOSPC


def test_a_failing_producer_stops_the_writer() -> None:
    def chunks():  # a member found corrupt half-way
        yield b"a" * 1000
        raise ValueError("CRC mismatch")

    with pytest.raises(ValueError, match="CRC"):
        write_hashed(chunks(), io.BytesIO())
