"""`bundler verify APPDIR`: re-hash every bundled file against the manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bundler.manifest import FoundManifest, find_manifest
from bundler.support.hashing import sha256_file


@dataclass
class VerifyReport:
    app: Path
    manifest: Path
    checked: int = 0
    missing: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.changed or self.unexpected)

    def to_dict(self) -> dict[str, object]:
        """What `verify --json` prints and doctor's report of a bundle holds."""
        return {"app": str(self.app), "manifest": str(self.manifest), "ok": self.ok,
                "checked": self.checked, "missing": self.missing, "changed": self.changed,
                "unexpected": self.unexpected}


def verify(app: Path, found: FoundManifest | None = None) -> VerifyReport:
    """Every file the manifest lists against its hash, and files it does not list.
    `found`: the app's manifest when the caller has looked it up already."""
    found = found or find_manifest(app.resolve())
    report = VerifyReport(app=app, manifest=found.path)
    manifest = found.manifest
    expected = {entry.path: entry.sha256 for entry in manifest.files}
    if manifest.bootstrap.path:
        expected[manifest.bootstrap.path] = manifest.bootstrap.sha256
    for relpath, sha256 in sorted(expected.items()):
        path = found.root / relpath
        report.checked += 1
        if not path.is_file():
            report.missing.append(relpath)
        elif sha256_file(path, f"verifying {path.name}") != sha256:
            report.changed.append(relpath)
    runtime = found.root / manifest.runtime_dir
    for path in sorted(p for p in runtime.rglob("*") if p.is_file()):
        relpath = path.relative_to(found.root).as_posix()
        if relpath not in expected and path != found.path:
            report.unexpected.append(relpath)
    return report
