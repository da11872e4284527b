"""PE Authenticode signatures, checked offline against pinned roots.

`check_signature(path, trust)` answers, for one DLL or EXE, what Windows' own check
answers (WinVerifyTrust), minus revocation, which needs the network:

- the file carries an Authenticode signature (else UNSIGNED);
- the Authenticode digest of the file matches the signed one, and the signer's
  signature over it is valid (else CHANGED: the file was changed after signing);
- the leaf certificate chains, with the code-signing usage, to a root whose SHA-256
  fingerprint `trust` pins (else UNKNOWN_CHAIN);
- each certificate is valid at the signing time: the time of a valid RFC 3161 (or
  older PKCS#9) timestamp countersignature whose own chain reaches a pinned timestamp
  root; without a timestamp, now. So an expired leaf passes when a trusted timestamp
  shows it was valid when it signed, as on Windows (else UNKNOWN_CHAIN);
- the leaf's subject common name is `trust.signer` (else UNEXPECTED_SIGNER).

The library is signify (pure Python: asn1crypto, certvalidator, oscrypto), chosen
because it verifies the timestamp token and the chain, where lief does neither. Its
default trust store is Microsoft's whole root list, and an *empty* store silently falls
back to it, so this module always builds both verification contexts itself, from
pinned certificates only. Nothing is fetched (no CRL, no OCSP, no AIA).

Root certificates are rarely inside a signature; bundler carries the ones recipes pin
in roots/ (listed with their sources in roots.toml). A self-signed certificate inside
the signature is a candidate too, but is trusted only when its fingerprint is pinned.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from bundler.errors import BundlerError
from bundler.platforms.api import (
    CHANGED,
    MEANING,
    OK,
    UNEXPECTED_SIGNER,
    UNKNOWN_CHAIN,
    UNSIGNED,
    SignatureCheck,
    Trust,
)
from bundler.support.toml_tables import tomllib
from bundler.windows import oscrypto_fix

# The verdicts and the trust/check shapes are the seam's (platforms/api.py): every
# platform answers in them; this module is Windows's scheme.
__all__ = ["CHANGED", "MEANING", "OK", "UNEXPECTED_SIGNER", "UNKNOWN_CHAIN", "UNSIGNED",
           "SignatureCheck", "Trust", "any_shipped_signer", "check_signature", "shipped_roots"]


@dataclass(frozen=True)
class PinnedRoot:
    name: str
    sha256: str
    pem: bytes
    source: str


def _normal(fingerprint: str) -> str:
    return fingerprint.lower().replace(":", "").strip()


@lru_cache(maxsize=1)
def shipped_roots() -> dict[str, PinnedRoot]:
    """The root certificates in roots/, by fingerprint; each is checked against the
    fingerprint roots.toml gives it, so a swapped file is refused, not trusted."""
    folder = resources.files("bundler.windows")
    data = tomllib.loads(folder.joinpath("roots.toml").read_text(encoding="utf-8"))
    roots = {}
    for name, entry in data["roots"].items():
        pem = folder.joinpath("roots", entry["file"]).read_bytes()
        found = hashlib.sha256(_pem_to_der(pem)).hexdigest()
        if found != _normal(entry["sha256"]):
            raise BundlerError(f"bundler's root certificate {entry['file']} has SHA-256 "
                               f"{found}, not the {entry['sha256']} roots.toml pins",
                               "this bundler installation is damaged or modified: "
                               "reinstall it")
        roots[found] = PinnedRoot(name, found, pem, entry["source"])
    return roots


def _pem_to_der(pem: bytes) -> bytes:
    import base64

    body = pem.split(b"-----BEGIN CERTIFICATE-----")[1].split(b"-----END CERTIFICATE-----")[0]
    return base64.b64decode(b"".join(body.split()))


def any_shipped_signer() -> Trust:
    """Any signer, any root bundler carries: what inspect and doctor report against."""
    pins = tuple(shipped_roots())
    return Trust(signer="", roots=pins, timestamp_roots=pins)


@lru_cache(maxsize=1)
def _signify() -> Any:
    """signify's modules, imported on first use (0.1 s), with oscrypto made to work."""
    oscrypto_fix.install()
    try:
        import signify.authenticode.signed_file.pe as pe
        import signify.exceptions as exceptions
        import signify.pkcs7 as pkcs7
        import signify.x509 as x509
    except ImportError as exc:
        raise BundlerError(f"cannot check Authenticode signatures: {exc}",
                           "install bundler's dependencies: pip install -e .") from None
    except Exception as exc:  # oscrypto raises its own LibraryNotFoundError
        raise BundlerError(f"cannot check Authenticode signatures: oscrypto failed to load "
                           f"({exc})", "install a fixed oscrypto: pip install "
                           '"oscrypto @ git+https://github.com/wbond/oscrypto.git"') from None
    return pe, exceptions, pkcs7, x509


def check_signature(path: Path, trust: Trust,
                    digests: Mapping[str, bytes] | None = None) -> SignatureCheck:
    """The signature of the PE file at `path`, judged against `trust` (see above).
    `digests`: the file's Authenticode digest by algorithm ("sha256"), computed from its
    bytes as they were written (authentihash.py), so signify need not read the file
    again; a signature of another algorithm is checked by signify reading it."""
    pe, _, _, _ = _signify()
    try:
        with open(path, "rb") as handle:
            signed = pe.SignedPEFile(handle)
            signatures = _signatures(signed)
            if not signatures:
                return SignatureCheck(UNSIGNED, detail="no Authenticode signature")
            # Any one signature that passes is enough (a file may carry a nested SHA-1
            # one): the first that passes, else the first one's failure. Lazily: the
            # nested one is checked only when the first fails.
            results = (_check_one(signed, sd, trust, digests or {}) for sd in signatures)
            first = next(results)
            return first if first.ok else next((r for r in results if r.ok), first)
    except OSError as exc:
        raise BundlerError(f"{path}: cannot read it ({exc.strerror})",
                           "check the file is there and readable") from None


def _signatures(signed: Any) -> list[Any]:
    _, exceptions, _, _ = _signify()
    try:
        return list(signed.iter_embedded_signatures(include_nested=True,
                                                    ignore_parse_errors=False))
    except exceptions.SignifyError:   # no certificate table, or not one we can read
        return []


def _check_one(signed: Any, sd: Any, trust: Trust, digests: Mapping[str, bytes]
               ) -> SignatureCheck:
    _, exc, _, _ = _signify()
    signer = _leaf_name(sd)
    contexts = _contexts(sd, trust)
    try:
        _, _, chains = signed.verify_signature(
            sd, expected_hashes=dict(digests), verification_context=contexts[0],
            cs_verification_context=contexts[1], countersignature_mode="strict")
        chain = next(iter(chains))
    except exc.AuthenticodeNotSignedError as error:
        return SignatureCheck(UNSIGNED, detail=str(error))
    except (exc.InvalidDigestError, exc.AuthenticodeInconsistentDigestAlgorithmError,
            exc.AuthenticodeInvalidAdditionalHashError, exc.SignerInfoVerificationError):
        return SignatureCheck(CHANGED, signer=signer)
    except exc.AuthenticodeCounterSignerError as error:
        # The timestamp signs the signer's signature: a broken primary signature shows
        # up here first. Tell it apart by checking again without the timestamp.
        if _primary_broken(signed, sd, contexts[0], digests):
            return SignatureCheck(CHANGED, signer=signer)
        return SignatureCheck(UNKNOWN_CHAIN, signer=signer,
                              detail=f"timestamp countersignature: {error}")
    except exc.VerificationError as error:
        return SignatureCheck(UNKNOWN_CHAIN, signer=signer, detail=_short(error))
    root = hashlib.sha256(chain[0].to_der).hexdigest()
    if root not in trust.roots:   # the store holds pins only; checked again regardless
        return SignatureCheck(UNKNOWN_CHAIN, signer=signer, detail=f"root {root} not pinned")
    leaf_name = _common_name(chain[-1])
    result = SignatureCheck(OK, signer=leaf_name, signed_at=_signing_time(sd), root=root)
    if trust.signer and leaf_name != trust.signer:
        return SignatureCheck(UNEXPECTED_SIGNER, signer=leaf_name, root=root,
                              signed_at=result.signed_at,
                              detail=f"expected {trust.signer!r}")
    return result


def _primary_broken(signed: Any, sd: Any, context: Any, digests: Mapping[str, bytes]
                    ) -> bool:
    _, exc, _, _ = _signify()
    try:
        signed.verify_signature(sd, expected_hashes=dict(digests), verification_context=context,
                                countersignature_mode="ignore")
    except (exc.InvalidDigestError, exc.SignerInfoVerificationError):
        return True
    except exc.VerificationError:
        return False
    return False


def _contexts(sd: Any, trust: Trust) -> tuple[Any, Any]:
    """The signer's and the timestamp's verification contexts, each trusting only the
    pinned roots (never signify's default store) and never fetching anything."""
    _, _, pkcs7, x509 = _signify()
    candidates = [*_shipped_certificates(), *_self_signed(sd)]
    common = {"key_usages": ["digital_signature"], "optional_ku": True,
              "optional_eku": False, "allow_fetching": False,
              "revocation_mode": "soft-fail"}
    signer_store = _pinned_store(candidates, trust.roots)
    context = x509.VerificationContext(signer_store, sd.certificates,
                                       extended_key_usages=["code_signing"], **common)
    countersigner = sd.signer_info.countersigner
    if countersigner is None:
        return context, None
    certificates = (countersigner.certificates if isinstance(countersigner, pkcs7.SignedData)
                    else sd.certificates)
    stamp_store = _pinned_store(candidates, trust.timestamp_roots or trust.roots)
    return context, x509.VerificationContext(stamp_store, certificates,
                                             extended_key_usages=["time_stamping"], **common)


def _pinned_store(candidates: Iterable[Any], pins: Iterable[str]) -> Any:
    _, _, _, x509 = _signify()
    wanted = {_normal(pin) for pin in pins}
    chosen = {}
    for cert in candidates:
        fingerprint = hashlib.sha256(cert.to_der).hexdigest()
        if fingerprint in wanted:
            chosen[fingerprint] = cert
    # Only pinned certificates, and this store is always passed inside our own
    # context: signify falls back to Microsoft's root list only when given none.
    return x509.CertificateStore(list(chosen.values()), trusted=True)


@lru_cache(maxsize=1)
def _shipped_certificates() -> tuple[Any, ...]:
    _, _, _, x509 = _signify()
    return tuple(cert for root in shipped_roots().values()
                 for cert in x509.Certificate.from_pems(root.pem))


def _self_signed(sd: Any) -> list[Any]:
    """Self-signed certificates the signature or its timestamp carries: candidates only."""
    _, _, pkcs7, _ = _signify()
    found = [c for c in sd.certificates if c.subject == c.issuer]
    countersigner = sd.signer_info.countersigner
    if isinstance(countersigner, pkcs7.SignedData):
        found += [c for c in countersigner.certificates if c.subject == c.issuer]
    return found


def _leaf_name(sd: Any) -> str:
    """The signer certificate's common name, read before anything is verified (for
    messages only; the verdict uses the verified chain's leaf)."""
    info = sd.signer_info
    for cert in sd.certificates:
        if cert.issuer == info.issuer and cert.serial_number == info.serial_number:
            return _common_name(cert)
    return ""


def _common_name(cert: Any) -> str:
    names = list(cert.subject.get_components("CN"))
    return str(names[0]) if len(names) == 1 else cert.subject.dn  # refuse multi-CN


def _signing_time(sd: Any) -> str:
    countersigner = sd.signer_info.countersigner
    when = getattr(countersigner, "signing_time", None) if countersigner else None
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when else ""


def _short(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:300]
