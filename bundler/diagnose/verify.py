"""`bundler verify APPDIR`: re-hash every bundled file against the manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler.errors import BundlerError
from bundler.manifest import (
    MANIFEST_NAME,
    MAX_MANIFEST_BYTES,
    DamagedManifest,
    Manifest,
    looks_like_manifest,
    parse_manifest,
)
from bundler.support.hashing import sha256_file
from bundler.support.json_files import read_json

# Where a manifest may sit below the app folder: <dir>/ for folder apps,
# _internal/<dir>/ for PyInstaller 6 onedir apps.
_MANIFEST_GLOBS = (f"*/{MANIFEST_NAME}", f"_internal/*/{MANIFEST_NAME}",
                   f"*/*/{MANIFEST_NAME}", f"_internal/*/*/{MANIFEST_NAME}")


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


@dataclass(frozen=True)
class FoundManifest:
    path: Path
    root: Path   # the folder manifest paths are relative to
    manifest: Manifest


def find_manifest(app: Path) -> FoundManifest:
    if not app.is_dir():
        raise BundlerError(f"{app}: not a folder", "give the bundle folder made by bundler pack")
    for pattern in _MANIFEST_GLOBS:
        for path in sorted(app.glob(pattern)):
            found = _bundler_manifest(path)
            if found is not None:
                return found
    raise BundlerError(f"{app}: no bundler manifest found (looked for <dir>/{MANIFEST_NAME})",
                       "give the folder `bundler pack` made (dist/<app name>)")


def _bundler_manifest(path: Path) -> FoundManifest | None:
    """The manifest at `path` if it is a bundler manifest (another tool's manifest.json
    is passed over); DamagedManifest if it claims to be one but cannot be trusted."""
    try:
        data = read_json(path, MAX_MANIFEST_BYTES, DamagedManifest, "")
    except DamagedManifest:
        return None
    if not looks_like_manifest(data):
        return None
    manifest = parse_manifest(data, path)
    if not path.parent.as_posix().endswith("/" + manifest.runtime_dir):
        raise DamagedManifest(f"{path}: the manifest is damaged: its runtime_dir "
                              f"{manifest.runtime_dir!r} is not the folder it lies in",
                              "re-run `bundler pack` to rebuild the bundle")
    depth = len(PurePosixPath(manifest.runtime_dir).parts)
    return FoundManifest(path=path, root=path.parents[depth], manifest=manifest)


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
