"""Signatures: every staged file the recipe says must be signed is checked offline
(bundler.windows.authenticode) and the result goes into its manifest entry.

A file fails when it is unsigned, changed after signing, signed by someone else, or
signed through a chain that reaches no root the recipe pins. The spec's
`allow_unsigned` globs accept a named file without a valid signature (the manifest and
the pack summary then say so), except a file changed after signing: its own signature
proves it is not what its signer made, and no spec setting accepts that.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path
from typing import Protocol

from bundler.errors import CheckError
from bundler.manifest import SIGNATURE_ALLOWED_UNSIGNED, SIGNATURE_VERIFIED, FileEntry
from bundler.pack.resolve import ResolvedRuntime
from bundler.pack.stage import StagedFile
from bundler.platforms import (
    CHANGED,
    OK,
    UNSIGNED,
    Platform,
    SignatureCheck,
    SignatureDigest,
    Trust,
)
from bundler.recipe import Recipe, RuntimeFile


class Verdicts(Protocol):
    """Where passed checks are kept (the runtime store): a file's bytes are known by
    their sha256, so a check that passed for them need not run again."""

    def signature_verdict(self, sha256: str, trust_key: str) -> dict[str, str] | None: ...

    def remember_signature(self, sha256: str, trust_key: str,
                           verdict: dict[str, str]) -> None: ...


class SignatureChecker:
    """Checks each staged file's signature on a worker thread as soon as it is staged,
    so the checks overlap the unpacking of the next member (zlib and hashlib let go of
    the GIL): on the cuDNN 8.9 set they cost ~1.2 s of CPU, mostly hidden. `verdicts`:
    checks that passed before, by sha256 (only timestamped ones are kept: they do not
    expire). Use as a context manager."""

    def __init__(self, recipe: Recipe, verdicts: Verdicts | None = None) -> None:
        self._recipe = recipe
        self._verdicts = verdicts
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="signatures")
        self._started: dict[Path, Future[SignatureCheck]] = {}

    def start(self, item: StagedFile) -> None:
        trust = self._recipe.trust_for(item.file)
        if trust is not None:
            self._started[item.path] = self._pool.submit(_checked, item, trust,
                                                         self._verdicts, self._recipe.target)

    def digest_for(self, file: RuntimeFile, size: int) -> SignatureDigest | None:
        """The digest to compute as `file` is staged, where its signature is checked:
        the check then needs no second read of the file."""
        make = self._recipe.target.signature_digest
        return make(size) if make and self._recipe.trust_for(file) is not None else None

    def result(self, item: StagedFile, trust: Trust) -> SignatureCheck:
        started = self._started.get(item.path)
        return started.result() if started else _checked(item, trust, self._verdicts,
                                                         self._recipe.target)

    def __enter__(self) -> SignatureChecker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def check_signatures(recipe: Recipe, staged: list[StagedFile], resolved: ResolvedRuntime,
                     allow_unsigned: list[str], origins: Mapping[str, str],
                     checker: SignatureChecker) -> ResolvedRuntime:
    """`resolved` with each signed file's signer and signing time; CheckError naming
    every file that fails, unless the spec accepts it."""
    by_name = {item.file.name: item for item in staged}
    files: list[FileEntry] = []
    failed: dict[tuple[str, str, str], list[str]] = {}
    for entry in resolved.files:
        item = by_name[entry.name]
        trust = recipe.trust_for(item.file)
        if trust is None:
            files.append(entry)
            continue
        found = checker.result(item, trust)
        if found.ok:
            files.append(_signed(entry, found, SIGNATURE_VERIFIED))
        elif found.status != CHANGED and recipe.target.matches(entry.name, allow_unsigned):
            files.append(_signed(entry, found, SIGNATURE_ALLOWED_UNSIGNED))
        elif found.status == UNSIGNED and item.file.signature_optional:
            files.append(entry)   # an era whose signing is unknown: no signature is no claim
        else:
            key = (origins[item.file.source], trust.signer, found.describe())
            failed.setdefault(key, []).append(entry.name)
    if failed:
        raise CheckError("; ".join(_failure(*key, names) for key, names in failed.items()),
                         _hint(recipe))
    return replace(resolved, files=files)


def trust_key(trust: Trust) -> str:
    """The name a verdict is kept under: the signer and every pinned root."""
    return hashlib.sha256(json.dumps(asdict(trust), sort_keys=True).encode()).hexdigest()


def _checked(item: StagedFile, trust: Trust, verdicts: Verdicts | None, platform: Platform
             ) -> SignatureCheck:
    key = trust_key(trust)
    known = verdicts.signature_verdict(item.sha256, key) if verdicts else None
    if known is not None and known.get("status") == OK and known.get("signed_at"):
        return SignatureCheck(**known)
    if item.signature_digests:
        found = platform.check_signature(item.path, trust, dict(item.signature_digests))
    else:
        found = platform.check_signature(item.path, trust)
    if verdicts is not None and found.ok and found.signed_at:
        verdicts.remember_signature(item.sha256, key, asdict(found))
    return found


def _failure(origin: str, signer: str, found: str, names: list[str]) -> str:
    if len(names) == 1:
        return f"{origin}: {names[0]} must be signed by {signer!r}, but is {found}"
    return (f"{origin}: {', '.join(names)} must be signed by {signer!r}, but each is "
            f"{found}")


def _signed(entry: FileEntry, found: SignatureCheck, state: str) -> FileEntry:
    return replace(entry, signature=state, signer=found.signer if found.ok else "",
                   signed_at=found.signed_at if found.ok else "",
                   signature_root=found.root if found.ok else "")


def _hint(recipe: Recipe) -> str:
    signers = " / ".join(sorted(recipe.signers))
    return (f"the source is not the original from {signers}: download it again from "
            f"{signers}, or — only for files you know are not {signers}'s (stand-ins, "
            "your own builds) — name them in [runtime] allow_unsigned")
