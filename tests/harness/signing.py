"""Test PKI and Authenticode tampering, made at test time with openssl and osslsigncode
(Debian packages; tests/setup.sh installs them). Nothing here is committed: keys and
certificates live in the test's tmp_path."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.harness.winenv.wheels import (
    SIGNED_CUDART_MEMBER,
    SIGNED_CUDART_SHA256,
    signed_cudart_wheel,
)

TEST_SIGNER = "Bundler Test Signer"


def require_signing_tools() -> None:
    missing = [tool for tool in ("openssl", "osslsigncode") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run `bash tests/setup.sh` (as root)")


def _run(*args: str | Path) -> None:
    subprocess.run([str(a) for a in args], check=True, capture_output=True)


def nvidia_signed_dll(folder: Path) -> Path:
    """The real NVIDIA-signed cudart64_13.dll, copied out of its pinned wheel."""
    with zipfile.ZipFile(signed_cudart_wheel()) as wheel:
        data = wheel.read(SIGNED_CUDART_MEMBER)
    assert hashlib.sha256(data).hexdigest() == SIGNED_CUDART_SHA256
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cudart64_13.dll"
    path.write_bytes(data)
    return path


def flip_byte(source: Path, target: Path, at: int = 0x1000) -> Path:
    """A copy with one byte of code changed (inside the signed range)."""
    data = bytearray(source.read_bytes())
    data[at] ^= 0xFF
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(bytes(data))
    return target


def strip_signature(source: Path, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    _run("osslsigncode", "remove-signature", "-in", source, "-out", target)
    return target


@dataclass(frozen=True)
class Signer:
    """A certificate chain (leaf first; the root is included, so it travels inside the
    signature) and the leaf's key."""

    chain: Path
    key: Path
    root_sha256: str

    def sign(self, source: Path, target: Path) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)
        _run("osslsigncode", "sign", "-certs", self.chain, "-key", self.key, "-h", "sha256",
             "-in", source, "-out", target)
        return target


def _fingerprint(pem: Path) -> str:
    out = subprocess.run(["openssl", "x509", "-in", str(pem), "-noout", "-fingerprint",
                          "-sha256"], check=True, capture_output=True, text=True).stdout
    return out.split("=", 1)[1].strip().replace(":", "").lower()


def self_signed(folder: Path, common_name: str = "NVIDIA Corporation") -> Signer:
    """A self-made code-signing certificate whose subject copies NVIDIA's."""
    folder.mkdir(parents=True, exist_ok=True)
    key, cert = folder / "self.key", folder / "self.pem"
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
         "-out", cert, "-days", "30", "-subj", f"/O={common_name}/CN={common_name}",
         "-addext", "extendedKeyUsage=codeSigning", "-addext", "keyUsage=digitalSignature")
    return Signer(cert, key, _fingerprint(cert))


def make_test_ca(folder: Path) -> Signer:
    """A test root CA and a code-signing leaf "Bundler Test Signer" it issued."""
    folder.mkdir(parents=True, exist_ok=True)
    root_key, root = folder / "root.key", folder / "root.pem"
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", root_key,
         "-out", root, "-days", "3650", "-subj", "/O=Bundler Tests/CN=Bundler Test Root",
         "-addext", "basicConstraints=critical,CA:true",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    key, csr, leaf = folder / "leaf.key", folder / "leaf.csr", folder / "leaf.pem"
    _run("openssl", "req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
         "-out", csr, "-subj", f"/O={TEST_SIGNER}/CN={TEST_SIGNER}")
    ext = folder / "leaf.ext"
    ext.write_text("basicConstraints=CA:false\nkeyUsage=critical,digitalSignature\n"
                   "extendedKeyUsage=codeSigning\n")
    _run("openssl", "x509", "-req", "-in", csr, "-CA", root, "-CAkey", root_key,
         "-CAcreateserial", "-out", leaf, "-days", "365", "-extfile", ext)
    chain = folder / "chain.pem"
    chain.write_bytes(leaf.read_bytes() + root.read_bytes())
    return Signer(chain, key, _fingerprint(root))
