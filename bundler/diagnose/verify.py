"""`bundler verify APPDIR`: re-hash every bundled file against the manifest, and check
again the Authenticode signature of every file the manifest records as signed: a DLL
swapped for another, with its hash edited into the manifest to match, is still caught
by its signature (or its lack of one), without the lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bundler.manifest import SIGNATURE_VERIFIED, FileEntry, FoundManifest, find_manifest
from bundler.support.hashing import sha256_file
from bundler.windows.authenticode import Trust, check_signature, shipped_roots


@dataclass
class VerifyReport:
    app: Path
    manifest: Path
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)   # "relpath: what is wrong"
    signed: int = 0   # files whose signature was checked again

    @property
    def ok(self) -> bool:
        return not (self.missing or self.changed or self.unexpected or self.signatures)

    def to_dict(self) -> dict[str, object]:
        """What `verify --json` prints and doctor's report of a bundle holds."""
        return {"app": str(self.app), "manifest": str(self.manifest), "ok": self.ok,
                "checked": self.checked, "signed": self.signed, "missing": self.missing,
                "changed": self.changed,
                "unexpected": self.unexpected, "signatures": self.signatures}


def verify(app: Path, found: FoundManifest | None = None) -> VerifyReport:
    """Every file the manifest lists against its hash, and files it does not list.
    `found`: the app's manifest when the caller has looked it up already."""
    found = found or find_manifest(app.resolve())
    report = VerifyReport(app=app, manifest=found.path)
    manifest = found.manifest
    expected = {entry.path: entry.sha256 for entry in manifest.files}
    signed = {e.path: e for e in manifest.files if e.signature == SIGNATURE_VERIFIED}
    if manifest.bootstrap.path:
        expected[manifest.bootstrap.path] = manifest.bootstrap.sha256
    for relpath, sha256 in sorted(expected.items()):
        path = found.root / relpath
        report.checked += 1
        if not path.is_file():
            report.missing.append(relpath)
        elif sha256_file(path, f"verifying {path.name}") != sha256:
            report.changed.append(relpath)
        elif relpath in signed:
            report.signed += 1
            problem = _signature_problem(path, signed[relpath])
            if problem:
                report.signatures.append(f"{relpath}: {problem}")
    runtime = found.root / manifest.runtime_dir
    for path in sorted(p for p in runtime.rglob("*") if p.is_file()):
        relpath = path.relative_to(found.root).as_posix()
        if relpath not in expected and path != found.path:
            report.unexpected.append(relpath)
    return report


def _signature_problem(path: Path, entry: FileEntry) -> str:
    """What is wrong with the signature of a file pack found signed: the same signer,
    reaching the same root (its timestamp: any root bundler carries, or that one)."""
    roots = (entry.signature_root,)
    trust = Trust(signer=entry.signer, roots=roots,
                  timestamp_roots=roots + tuple(shipped_roots()))
    found = check_signature(path, trust)
    if found.ok:
        return ""
    return (f"pack found it signed by {entry.signer!r}, now it is {found.describe()}; "
            "get the original DLL back (re-run `bundler pack`)")
