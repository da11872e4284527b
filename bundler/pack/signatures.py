"""Signatures and the trust ladder: how each input of a pack is vouched for.

Every input climbs the same ladder (docs/signatures.md): an input whose sha256 is a
known one for this release (the recipe's pin, or NVIDIA's archive as the release
catalogue records it: bundler/releases/archives.toml, under any file name) is verified
by hash; else every file the recipe says must be signed must carry that signature
(checked offline: bundler.windows.authenticode); else the pack is refused unless the
spec's `allow_unsigned` names the files, and then the manifest, the summary and --json
say NOT SIGNED. A recipe's `signature_optional` (an era whose signing is not known)
lets an unsigned file pass only when its input is verified by hash. A file changed after
signing is refused even then: its own signature proves it is not what its signer made.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Protocol

from bundler.errors import CheckError
from bundler.formats.manifest import SIGNATURE_ALLOWED_UNSIGNED, SIGNATURE_VERIFIED, FileEntry
from bundler.pack.resolve import ResolvedRuntime
from bundler.pack.stage import StagedFile
from bundler.recipe.load import Recipe, RuntimeFile
from bundler.releases.catalogue import ArchiveRelease, find_release
from bundler.targets.registry import (
    CHANGED,
    OK,
    UNSIGNED,
    Platform,
    SignatureCheck,
    SignatureDigest,
    Trust,
)


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
        if self._recipe.trust_for(file) is None:
            return None
        return self._recipe.target.signature_digest(size)

    def result(self, item: StagedFile, trust: Trust) -> SignatureCheck:
        started = self._started.get(item.path)
        return started.result() if started else _checked(item, trust, self._verdicts,
                                                         self._recipe.target)

    def __enter__(self) -> SignatureChecker:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


@dataclass(frozen=True)
class KnownHash:
    """A sha256 that vouches for an input of this release, and who says so."""

    sha256: str
    what: str   # "NVIDIA's cudnn-….zip (sha256 recorded by a third party: …)"


def known_hashes(recipe: Recipe, sid: str) -> list[KnownHash]:
    """The sha256s that make source `sid`'s input this release's original: the
    recipe's pin, and for an archive NVIDIA's archives of the release as the catalogue
    records them (matched by content: a mirror's copy under another name is the same)."""
    spec = recipe.sources[sid]
    known = [KnownHash(spec.sha256, f"the recipe's pin ({spec.pin_source})" if spec.pin_source
                       else "the recipe's pin")] if spec.sha256 else []
    release = find_release(recipe.name) if spec.kind == "archive" else None
    for archive in release.archives if release else ():
        if archive.sha256 and archive.sha256 != spec.sha256:
            known.append(KnownHash(archive.sha256, _archive_words(archive)))
    return known


def ladder(recipe: Recipe, sid: str) -> str:
    """How a pack will vouch for source `sid`'s input (`bundler recipes`): the rungs
    this recipe's source has, in order; a strict pin or no rung at all as the recipe says."""
    spec = recipe.sources[sid]
    if spec.sha256:
        return spec.trust
    rungs = [f"verified by sha256 when it is {k.what}: {k.sha256[:12]}…"
             for k in known_hashes(recipe, sid)[:1]]
    if spec.signed_by:
        rungs.append(f"{'else ' if rungs else ''}each DLL must carry {spec.signed_by}'s "
                     "signature; else refused unless allow_unsigned names the files")
    return "; ".join(rungs) if rungs else spec.trust


def _archive_words(archive: ArchiveRelease) -> str:
    where = archive.sha256_source
    if where.startswith("third-party:"):
        return (f"NVIDIA's {archive.file_name} (sha256 recorded by a third party, not "
                f"published by NVIDIA: {where.removeprefix('third-party:').strip()})")
    return f"NVIDIA's {archive.file_name} (sha256 as published: {where or 'source unnamed'})"


def check_signatures(recipe: Recipe, staged: list[StagedFile], resolved: ResolvedRuntime,
                     allow_unsigned: list[str], origins: Mapping[str, str],
                     checker: SignatureChecker, identities: Mapping[str, str]
                     ) -> ResolvedRuntime:
    """`resolved` with each signed file's signer and signing time and each input's rung
    of the ladder (`trust`); CheckError naming every file that fails, unless the spec
    accepts it. `identities`: each input's sha256, as the lock pins it."""
    by_name = {item.file.name: item for item in staged}
    vouched = {sid: next((k for k in known_hashes(recipe, sid) if k.sha256 == identity), None)
               for sid, identity in identities.items()}
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
        elif found.status == UNSIGNED and item.file.signature_optional \
                and vouched.get(item.file.source):
            files.append(entry)   # an era whose signing is unknown, the input verified by hash
        elif found.status != CHANGED and recipe.target.matches(entry.name, allow_unsigned):
            files.append(_signed(entry, found, SIGNATURE_ALLOWED_UNSIGNED))
        else:
            key = (item.file.source, trust.signer, found.describe())
            failed.setdefault(key, []).append(entry.name)
    if failed:
        raise CheckError("; ".join(
            _failure(origins[sid], signer, found, names)
            + _not_published(recipe, sid, identities.get(sid, ""))
            for (sid, signer, found), names in failed.items()), _hint(recipe))
    # What could not be checked (resolve's notes) is part of what the pack says of it.
    rungs = {sid: "; ".join([_rung(recipe, sid, identities[sid], vouched[sid], files),
                             *resolved.unchecked.get(sid, [])]) for sid in sorted(identities)}
    return replace(resolved, files=files, trust=rungs)


def _not_published(recipe: Recipe, sid: str, identity: str) -> str:
    """What the input is not, where this release has a known sha256: the other rung."""
    known = known_hashes(recipe, sid)
    if not known:
        return ""
    return (f"; nor is it {known[0].what}: its sha256 is {identity}, that file's is "
            f"{known[0].sha256}")


def _rung(recipe: Recipe, sid: str, identity: str, vouched: KnownHash | None,
          files: list[FileEntry]) -> str:
    """What this pack checked of input `sid`, in the summary's words."""
    own = [entry for entry in files if entry.source == sid]
    signed = [entry for entry in own if entry.signature == SIGNATURE_VERIFIED]
    allowed = [entry for entry in own if entry.signature == SIGNATURE_ALLOWED_UNSIGNED]
    signers = " / ".join(sorted({entry.signer for entry in signed}))
    also = f"; {len(signed)} file(s) also verified by {signers}'s signature" if signed else ""
    if vouched is not None:
        return f"verified by sha256 ({identity[:12]}…): {vouched.what}{also}"
    known = known_hashes(recipe, sid)
    if allowed:
        who = " / ".join(sorted(recipe.signers)) or "its signer"
        published = (f"; its sha256 {identity[:12]}… is not {known[0].sha256[:12]}… of "
                     f"{known[0].what}" if known else "")
        # "NVIDIA's", as people say it (the signer's name is "NVIDIA Corporation")
        return (f"NOT SIGNED: not {who.split()[0]}'s published file: {len(allowed)} file(s) "
                f"without {who}'s signature, accepted by allow_unsigned"
                f"{also.replace('also ', '')}{published}")
    if signed:
        other = f"; the input itself is not {known[0].what}" if known else ""
        return f"{len(signed)} file(s) verified by {signers}'s signature{other}"
    return recipe.sources[sid].trust


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
