"""The Authenticode digest computed as a DLL streams past (bundler/windows/authentihash.py)
equals signify's own, read from the file: on the real NVIDIA-signed cudart64_13.dll (the
digest its signature signs), in any chunking, and on files whose headers are changed at
random (each field signify reads), where it either agrees with signify or gives none
(signify then reads the file itself)."""

from __future__ import annotations

import hashlib
import random
import struct
from pathlib import Path

import pytest

from bundler.windows.authenticode import _signify
from bundler.windows.authentihash import HEADER_BYTES, AuthenticodeDigest, omitted_ranges
from tests.harness.signing import flip_byte, nvidia_signed_dll


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return nvidia_signed_dll(tmp_path_factory.mktemp("nvidia"))


def _signify_digest(path: Path) -> bytes | None:
    pe = _signify()[0]
    with open(path, "rb") as handle:
        signed = pe.SignedPEFile(handle)
        if signed.get_authenticode_omit_sections() is None:
            return None
        return bytes(signed.get_fingerprint(hashlib.sha256))


def _streamed(data: bytes, sizes: list[int]) -> dict[str, bytes]:
    digest = AuthenticodeDigest(len(data))
    position, turn = 0, 0
    while position < len(data):
        step = sizes[turn % len(sizes)]
        digest.update(data[position:position + step])
        position += step
        turn += 1
    return digest.digests()


@pytest.mark.parametrize("sizes", [[1 << 20], [len(b"x")] * 1 + [4093, 65536, 1 << 20],
                                   [7, 13, 100_000], [HEADER_BYTES - 1, 3], [1 << 30]])
def test_the_streamed_digest_is_the_one_the_real_signature_signs(real: Path,
                                                                 sizes: list[int]) -> None:
    data = real.read_bytes()
    signed = _signify_digest(real)
    pe = _signify()[0]
    with open(real, "rb") as handle:
        signatures = list(pe.SignedPEFile(handle).iter_embedded_signatures())
    assert signed is not None and signatures
    assert signatures[0].indirect_data.digest == signed
    assert _streamed(data, sizes) == {"sha256": signed}


def test_a_changed_byte_changes_the_streamed_digest(real: Path, tmp_path: Path) -> None:
    changed = flip_byte(real, tmp_path / "x.dll")
    found = _streamed(changed.read_bytes(), [1 << 20])
    assert found == {"sha256": _signify_digest(changed)}
    assert found != _streamed(real.read_bytes(), [1 << 20])


def test_a_short_or_long_stream_gives_no_digest(real: Path) -> None:
    data = real.read_bytes()
    short = AuthenticodeDigest(len(data))
    short.update(data[:-1])
    assert short.digests() == {}
    long = AuthenticodeDigest(len(data) - 1)
    long.update(data)
    assert long.digests() == {}


# Offsets of the fields signify reads, relative to the PE header (e_lfanew) of a PE32+.
_FIELDS = {"e_lfanew": (0x3C, "<I", False), "optional_size": (20, "<H", True),
           "magic": (24, "<H", True), "rva_count": (24 + 108, "<I", True),
           "cert_address": (24 + 144, "<I", True), "cert_size": (24 + 148, "<I", True)}


def _mutated(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    pe_offset = struct.unpack_from("<I", data, 0x3C)[0]
    for _ in range(rng.randint(1, 3)):
        offset, fmt, relative = _FIELDS[rng.choice(sorted(_FIELDS))]
        at = pe_offset + offset if relative else offset
        top = (1 << (8 * struct.calcsize(fmt))) - 1
        value = rng.choice([0, 1, 4, 5, 68, 0x10B, 0x20B, 240, len(data) - 8, len(data),
                            HEADER_BYTES, rng.randint(0, min(top, 2 * len(data))), top])
        struct.pack_into(fmt, out, at, value & top)
    if rng.random() < 0.3:
        out = out[:rng.randint(0, len(out))]
    return bytes(out)


def test_headers_changed_at_random_agree_with_signify_or_give_none(
        real: Path, tmp_path: Path) -> None:
    # A small PE keeps signify's re-reads fast: the real headers, a tail with the table.
    data = real.read_bytes()
    rng = random.Random(19)
    agreed = 0
    for case in range(300):
        mutated = _mutated(data[:HEADER_BYTES * 2], rng)
        path = tmp_path / f"{case}.dll"
        path.write_bytes(mutated)
        ours = omitted_ranges(mutated[:HEADER_BYTES], len(mutated))
        pe = _signify()[0]
        with open(path, "rb") as handle:
            theirs = pe.SignedPEFile(handle).get_authenticode_omit_sections()
        if ours is None:
            continue   # signify reads such a file itself
        assert theirs is not None
        assert ours == sorted((r.start, r.start + r.length) for r in theirs.values())
        assert _streamed(mutated, [4096, 1 << 20]) == {"sha256": _signify_digest(path)}
        agreed += 1
    assert agreed > 50


@pytest.mark.parametrize("damage, verdict", [("", "verified"), ("flip", "changed after signing")])
def test_pack_checks_the_signature_without_reading_the_file_again(
        real: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], damage: str, verdict: str) -> None:
    """The pack hands signify the digest it computed while writing the DLL: signify
    computes none itself (it would read the whole file), and decides as before."""
    from tests.harness.packing import run_cli
    from tests.harness.signing import require_signing_tools
    from tests.integration.test_signatures import G4, _manifest, _workspace

    require_signing_tools()
    dll = flip_byte(real, tmp_path / "bad.dll") if damage else real
    pe = _signify()[0]
    computed: list[object] = []
    own = pe.SignedPEFile.get_fingerprint
    monkeypatch.setattr(pe.SignedPEFile, "get_fingerprint",
                        lambda self, *a, **k: computed.append(a) or own(self, *a, **k))
    code, out, err = run_cli(capsys, "pack",
                             _workspace(tmp_path / "ws", dll, "NVIDIA Corporation", (G4,)))
    assert computed == []
    if damage:
        assert code == 2 and verdict in err
    else:
        assert code == 0, err
        assert _manifest(tmp_path / "ws")["files"][0]["signature"] == verdict
