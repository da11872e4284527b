"""The Authenticode digest of a PE file, computed from its bytes as they stream past.

The signature check compares the digest a signature signs with the file's own
Authenticode digest: a sha256 of the whole file except three ranges (the optional
header's CheckSum, the Certificate Table's Data Directory entry and the certificate
table itself). signify computes it by reading the file again; a pack already has every
byte in hand once, as it inflates and writes the file, so it computes the digest there
and hands it to signify (`expected_hashes`).

The omitted ranges are found exactly as signify finds them
(`SignedPEFile._parse_pe_header_locations`), from the headers in the file's first
bytes and its size, known before the bytes arrive (a zip's directory says it). A file
whose headers lie further in, or that signify would not parse, gets no digest here:
signify then reads the file itself, so the check decides exactly as it always did.
"""

from __future__ import annotations

import hashlib
import struct

# The headers the omitted ranges are read from must lie within the file's first bytes.
HEADER_BYTES = 64 << 10


class AuthenticodeDigest:
    """Feed a PE file's bytes in order (`update`), then `digests()`: {"sha256": digest}
    when the whole file came and its headers could be read, else {}."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._head = bytearray()
        self._omitted: list[tuple[int, int]] | None = None
        self._digest = hashlib.sha256()
        self._position = 0
        self._failed = False

    def update(self, data: bytes) -> None:
        if self._failed:
            return
        if self._omitted is None:
            data = self._collect_headers(data)
            if not data:
                return
        self._feed(memoryview(data))

    def digests(self) -> dict[str, bytes]:
        if self._omitted is None and not self._failed:   # a file smaller than HEADER_BYTES
            self._feed_head()
        if self._failed or self._position != self._size:
            return {}
        return {"sha256": self._digest.digest()}

    def _collect_headers(self, data: bytes) -> bytes:
        """The bytes to hash now: none until the headers are in, then all held so far."""
        if not self._head and len(data) >= min(HEADER_BYTES, self._size):
            self._omitted = omitted_ranges(data, self._size)   # the usual case: no copy
            self._failed = self._omitted is None
            return b"" if self._failed else data
        self._head += data
        if len(self._head) < min(HEADER_BYTES, self._size):
            return b""
        return self._feed_head()

    def _feed_head(self) -> bytes:
        head, self._head = bytes(self._head), bytearray()
        self._omitted = omitted_ranges(head, self._size)
        self._failed = self._omitted is None
        if self._failed:
            return b""
        if self._position == 0 and len(head) == self._size:   # digests() of a small file
            self._feed(memoryview(head))
            return b""
        return head

    def _feed(self, view: memoryview) -> None:
        start = self._position
        end = start + len(view)
        cursor = start
        for skip_start, skip_end in self._omitted or ():
            if skip_end <= cursor or skip_start >= end:
                continue
            if skip_start > cursor:
                self._digest.update(view[cursor - start:skip_start - start])
            cursor = min(skip_end, end)
        if cursor < end:
            self._digest.update(view[cursor - start:])
        self._position = end


def omitted_ranges(head: bytes, size: int) -> list[tuple[int, int]] | None:
    """(start, end) of each range the digest leaves out, in file order, as signify
    finds them; None where signify would find none or `head` lacks a byte it reads."""
    try:
        return _ranges(head, size)
    except (_Beyond, struct.error):
        return None


class _Beyond(Exception):
    """A header field lies past the bytes at hand (or signify would refuse the file)."""


def _read(head: bytes, offset: int, fmt: str) -> int:
    width = struct.calcsize(fmt)
    if offset + width > len(head):
        raise _Beyond
    return int(struct.unpack_from(fmt, head, offset)[0])


def _ranges(head: bytes, size: int) -> list[tuple[int, int]]:
    """signify's _parse_pe_header_locations, step for step, on the bytes at hand."""
    if head[:2] != b"MZ" or len(head) < 2:
        raise _Beyond
    pe_offset = _read(head, 0x3C, "<I")
    if pe_offset >= size or head[pe_offset:pe_offset + 4] != b"PE\0\0":
        raise _Beyond
    optional_size = _read(head, pe_offset + 20, "<H")
    optional_offset = pe_offset + 24
    if optional_size + optional_offset > size or optional_size < 68:
        raise _Beyond
    magic = _read(head, optional_offset, "<H")
    if magic == 0x10B:
        rva_base, cert_base = optional_offset + 92, optional_offset + 128
    elif magic == 0x20B:
        rva_base, cert_base = optional_offset + 108, optional_offset + 144
    else:
        raise _Beyond
    ranges = [(optional_offset + 64, optional_offset + 68)]   # CheckSum
    if optional_offset + optional_size < rva_base + 4:
        return ranges
    if _read(head, rva_base, "<I") < 5:   # no Certificate Table entry
        return ranges
    if optional_offset + optional_size < cert_base + 8:
        return ranges
    ranges.append((cert_base, cert_base + 8))
    address, length = _read(head, cert_base, "<I"), _read(head, cert_base + 4, "<I")
    if not length or address < optional_size + optional_offset or address + length > size:
        return ranges
    ranges.append((address, address + length))
    return sorted(ranges)
