"""`bundler verify APPDIR`: re-hash every bundled file against the manifest."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from bundler.emit import MANIFEST_NAME, read_manifest
from bundler.errors import BundlerError
from bundler.hashing import sha256_file

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
    data: dict


def find_manifest(app: Path) -> FoundManifest:
    if not app.is_dir():
        raise BundlerError(f"{app}: not a folder", "give the bundle folder made by bundler pack")
    for pattern in _MANIFEST_GLOBS:
        for path in sorted(app.glob(pattern)):
            data = _bundler_manifest(path)
            if data is not None:
                depth = len(PurePosixPath(data["runtime_dir"]).parts)
                return FoundManifest(path=path, root=path.parents[depth], data=data)
    raise BundlerError(f"{app}: no bundler manifest found (looked for <dir>/{MANIFEST_NAME})",
                       "give the folder `bundler pack` made (dist/<app name>)")


def _bundler_manifest(path: Path) -> dict | None:
    try:
        data = read_manifest(path)
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and {"load_order", "files", "runtime_dir"} <= set(data):
        _check_shape(path, data)
        return data
    return None


class DamagedManifest(BundlerError):
    """A bundler manifest that was edited or damaged: still a bundle `pack` may replace."""


def _inside(relpath: object) -> bool:
    """A relative path with forward slashes that stays in its folder."""
    if not isinstance(relpath, str) or not relpath or "\\" in relpath or ":" in relpath:
        return False
    posix = PurePosixPath(relpath)
    return not posix.is_absolute() and ".." not in posix.parts


def _check_shape(path: Path, data: dict) -> None:
    """A manifest someone edited by hand must fail as bad input, not as a traceback."""
    files, bootstrap, runtime_dir = data["files"], data.get("bootstrap", {}), data["runtime_dir"]
    ok = (isinstance(files, list)
          and all(isinstance(e, dict) and _inside(e.get("path"))
                  and isinstance(e.get("sha256"), str) for e in files)
          and isinstance(data["load_order"], list)
          and all(_inside(item) for item in data["load_order"])
          and _inside(runtime_dir)
          and path.parent.as_posix().endswith("/" + str(runtime_dir))
          and isinstance(bootstrap, dict)
          and ("path" not in bootstrap or (_inside(bootstrap["path"])
                                           and isinstance(bootstrap.get("sha256"), str))))
    if not ok:
        raise DamagedManifest(f"{path}: the manifest is damaged (a path that is not "
                              "relative to the app, a file entry without path/sha256, or a "
                              "malformed bootstrap entry)",
                              "re-run `bundler pack` to rebuild the bundle")


def verify(app: Path, found: FoundManifest | None = None) -> VerifyReport:
    """Every file the manifest lists against its hash, and files it does not list.
    `found`: the app's manifest when the caller has looked it up already."""
    found = found or find_manifest(app.resolve())
    report = VerifyReport(app=app, manifest=found.path)
    expected = {entry["path"]: entry["sha256"] for entry in found.data["files"]}
    bootstrap = found.data.get("bootstrap", {})
    if bootstrap.get("path"):
        expected[bootstrap["path"]] = bootstrap["sha256"]
    for relpath, sha256 in sorted(expected.items()):
        path = found.root / relpath
        report.checked += 1
        if not path.is_file():
            report.missing.append(relpath)
        elif sha256_file(path, f"verifying {path.name}") != sha256:
            report.changed.append(relpath)
    runtime = found.root / found.data["runtime_dir"]
    for path in sorted(p for p in runtime.rglob("*") if p.is_file()):
        relpath = path.relative_to(found.root).as_posix()
        if relpath not in expected and path != found.path:
            report.unexpected.append(relpath)
    return report
