"""The manifest (`<runtime dir>/manifest.json`): the contract between the products.

`bundler pack` writes it; `verify`, `doctor` and the output swap read it through this
module; the bootstrap inside every app reads the same JSON with its own few lines of
standard-library code (tests check it reads everything written here). The format is
documented in docs/formats.md. A manifest is validated whole when it is read: an edited
or damaged one is a `DamagedManifest` (bad input, exit 2), one written by a newer
bundler is refused by its format number rather than misread.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from bundler.errors import BundlerError
from bundler.support.json_files import json_bytes, read_json
from bundler.support.paths import is_inside_relative

MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
# A manifest lists tens of files; anything this large is not one of ours.
MAX_MANIFEST_BYTES = 16 << 20
# The bootstrap a folder app carries at its top (a frozen app carries it as a module).
BOOTSTRAP_NAME = "_cudnn_bootstrap.py"
# The first and the loading line of what `bundler pack` adds to the entry script:
# verify checks the entry still has both.
INJECT_MARKER = "# bundler: load the bundled cuDNN runtime first"
INJECT_LOADS = '_bundler_spec.loader.exec_module(_bundler_sys.modules["_cudnn_bootstrap"])'
_REPACK = "re-run `bundler pack` to rebuild the bundle"
SIGNATURE_VERIFIED = "verified"
SIGNATURE_ALLOWED_UNSIGNED = "allowed-unsigned"
SIGNATURE_STATES = ("", SIGNATURE_VERIFIED, SIGNATURE_ALLOWED_UNSIGNED)


class DamagedManifest(BundlerError):
    """A bundler manifest that was edited or damaged: still a bundle `pack` may replace."""


class UnsupportedManifest(BundlerError):
    """A manifest of a format this bundler does not know (written by a newer one)."""


@dataclass(frozen=True)
class RecipeRef:
    name: str
    sha256: str


@dataclass(frozen=True)
class Versions:
    cudnn: str
    cuda: str
    min_driver: str
    # The oldest driver that runs the runtime under CUDA minor-version compatibility;
    # "" before CUDA 11. The driver check requires this where given, else min_driver.
    min_driver_compat: str = ""
    # Linux: the newest GLIBC_x.y symbol version a bundled library needs ("2.27"); the
    # bootstrap refuses an older glibc with that figure. "" on Windows.
    min_glibc: str = ""


@dataclass(frozen=True)
class FileEntry:
    """One shipped runtime file. `path` is relative to the manifest's root folder."""

    path: str
    name: str
    size: int
    sha256: str
    component: str
    source: str
    machine: str   # the PE machine type ("AMD64"); "" for a file that is not a DLL
    version: str   # the DLL's file version; "" when it has none
    # Its Authenticode signature as pack found it (optional: "" when the recipe asks
    # none). signature: "verified", or "allowed-unsigned" (the spec's allow_unsigned
    # accepted it without a valid one); signer: the leaf's common name; signed_at: the
    # verified timestamp (ISO 8601 UTC); signature_root: SHA-256 of the root reached.
    signature: str = ""
    signer: str = ""
    signed_at: str = ""
    signature_root: str = ""


@dataclass(frozen=True)
class BootstrapEntry:
    """The bootstrap: a file beside the app (`path`), or, in a frozen app, a module
    compiled into the executable (`module`, loaded by `runtime_hook`)."""

    sha256: str
    path: str = ""
    module: str = ""
    runtime_hook: str = ""
    stored: str = ""
    entry: str = ""   # the app's script that carries the lines loading it ("" for none)


@dataclass(frozen=True)
class BuiltFile:
    """A file a builder added beside the app (embedded-python: its CPython, the
    installed wheels, the ._pth, the launcher): verify checks it as a runtime file."""

    path: str   # relative to the manifest's root folder
    size: int
    sha256: str


@dataclass(frozen=True)
class InputTrust:
    """How one input (a recipe source) was vouched for by the pack that made the bundle:
    "verified by sha256 …", "7 file(s) verified by NVIDIA Corporation's signature",
    "NOT SIGNED: not NVIDIA's published file: …" (bundler/pack/signatures.py)."""

    source: str
    trust: str


@dataclass(frozen=True)
class Manifest:
    recipe: RecipeRef
    platform: str
    versions: Versions
    runtime_dir: str
    components: tuple[str, ...]
    files: tuple[FileEntry, ...]
    load_order: tuple[str, ...]   # paths of the DLLs, dependencies first
    bootstrap: BootstrapEntry
    # The bootstrap stops the app (rather than warn) when the driver is missing or old.
    require_driver: bool = False
    format: int = MANIFEST_FORMAT
    # Files the builder added beside the app, sorted; left out of the JSON when none
    # (a folder or PyInstaller app), so their manifests are what they were.
    built: tuple[BuiltFile, ...] = ()
    # What the pack checked of each input, by source id; left out of the JSON when none
    # (a manifest written before it was recorded).
    inputs: tuple[InputTrust, ...] = ()

    def to_bytes(self) -> bytes:
        """Deterministic: sorted keys, no timestamps, so equal inputs give equal bytes."""
        return json_bytes(_plain(self))

    @property
    def total_size(self) -> int:
        return sum(entry.size for entry in self.files)

    def component_sizes(self) -> dict[str, int]:
        """Bytes shipped per component, in the recipe's order; the licences come last."""
        sizes = dict.fromkeys(self.components, 0)
        for entry in self.files:
            sizes[entry.component] = sizes.get(entry.component, 0) + entry.size
        return sizes


def _plain(value: Any) -> Any:
    """A dataclass as JSON data; optional strings left empty are left out."""
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if not hasattr(value, "__dataclass_fields__"):
        return value
    out = {}
    for spec in fields(value):
        item = getattr(value, spec.name)
        if item == spec.default and spec.default in ("", ()):
            continue
        out[spec.name] = _plain(item)
    return out


# Where a bundle's manifest may sit below the app folder: <dir>/ for folder apps,
# _internal/<dir>/ for PyInstaller 6 onedir apps.
# The runtime folder is at most this many folders below the app (or its _internal/):
# where readers look for the manifest, and what the spec allows.
MAX_RUNTIME_DIR_DEPTH = 2
_MANIFEST_GLOBS = tuple(f"{top}{'*/' * depth}{MANIFEST_NAME}"
                        for depth in range(1, MAX_RUNTIME_DIR_DEPTH + 1)
                        for top in ("", "_internal/"))


@dataclass(frozen=True)
class FoundManifest:
    path: Path
    root: Path   # the folder manifest paths are relative to
    manifest: Manifest


def find_manifest(app: Path) -> FoundManifest:
    if not app.is_dir():
        raise BundlerError(f"{app}: not a folder", "give the bundle folder made by bundler pack")
    unreadable: list[DamagedManifest] = []
    for pattern in _MANIFEST_GLOBS:
        for path in sorted(app.glob(pattern)):
            found = _bundler_manifest(path, unreadable)
            if found is not None:
                return found
    if unreadable and (app / BOOTSTRAP_NAME).is_file():
        # bundler's bootstrap is there, so an unreadable manifest.json is ours, damaged
        raise DamagedManifest(unreadable[0].message, _REPACK)
    raise BundlerError(f"{app}: no bundler manifest found (looked for <dir>/{MANIFEST_NAME})",
                       "give the folder `bundler pack` made (dist/<app name>)")


def _bundler_manifest(path: Path, unreadable: list[DamagedManifest]) -> FoundManifest | None:
    """The manifest at `path` if it is a bundler manifest (another tool's manifest.json
    is passed over, unreadable ones noted in `unreadable`); DamagedManifest if it claims
    to be one but cannot be trusted."""
    try:
        data = read_json(path, MAX_MANIFEST_BYTES, DamagedManifest, "",
                         "the manifest is damaged: not valid JSON")
    except DamagedManifest as exc:
        unreadable.append(exc)
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


def write_manifest(path: Path, manifest: Manifest) -> None:
    path.write_bytes(manifest.to_bytes())


def read_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; DamagedManifest or UnsupportedManifest if it is not
    one this bundler can trust."""
    data = read_json(path, MAX_MANIFEST_BYTES, DamagedManifest, _REPACK)
    return parse_manifest(data, path)


def looks_like_manifest(data: object) -> bool:
    """Whether JSON data claims to be a bundler manifest (other tools' manifest.json
    files in an app folder are not ours and are left alone)."""
    return isinstance(data, dict) and {"load_order", "files", "runtime_dir"} <= set(data)


def parse_manifest(data: object, path: Path) -> Manifest:
    reader = _Reader(path)
    top = reader.table(data, "manifest")
    version = top.get("format")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise reader.damaged("'format' must be a positive integer")
    if version > MANIFEST_FORMAT:
        raise UnsupportedManifest(
            f"{path}: manifest format {version} was written by a newer bundler; this one "
            f"reads format {MANIFEST_FORMAT}", "upgrade bundler, or re-run `bundler pack` "
            "with this one")
    recipe = reader.table(top.get("recipe"), "recipe")
    versions = reader.table(top.get("versions"), "versions")
    manifest = Manifest(
        recipe=RecipeRef(reader.text(recipe, "name", "recipe"),
                         reader.text(recipe, "sha256", "recipe")),
        platform=reader.text(top, "platform"),
        versions=Versions(**{f.name: reader.text(versions, f.name, "versions",
                                                 optional=f.default == "")
                             for f in fields(Versions)}),
        runtime_dir=reader.relpath(top, "runtime_dir"),
        components=reader.texts(top, "components"),
        files=tuple(_file_entry(reader, item, index)
                    for index, item in enumerate(reader.list(top, "files"))),
        load_order=tuple(reader.relpath_value(item, f"load_order[{index}]")
                         for index, item in enumerate(reader.list(top, "load_order"))),
        bootstrap=_bootstrap_entry(reader, reader.table(top.get("bootstrap"), "bootstrap")),
        require_driver=reader.flag(top, "require_driver"),
        format=version,
        built=tuple(_built_file(reader, item, index) for index, item
                    in enumerate(reader.list(top, "built") if "built" in top else [])),
        inputs=tuple(InputTrust(reader.text(reader.table(item, f"inputs[{index}]"), "source",
                                            f"inputs[{index}]"),
                                reader.text(reader.table(item, f"inputs[{index}]"), "trust",
                                            f"inputs[{index}]"))
                     for index, item in enumerate(reader.list(top, "inputs")
                                                  if "inputs" in top else [])))
    listed = {entry.path for entry in manifest.files}
    unlisted = [relpath for relpath in manifest.load_order if relpath not in listed]
    if unlisted:
        raise reader.damaged(f"load_order names {unlisted[0]}, which 'files' does not list")
    return manifest


def _file_entry(reader: _Reader, item: object, index: int) -> FileEntry:
    where = f"files[{index}]"
    table = reader.table(item, where)
    size = table.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise reader.damaged(f"'{where}.size' must be a whole number of bytes")
    if table.get("signature", "") not in SIGNATURE_STATES:
        raise reader.damaged(f"'{where}.signature' must be one of "
                             f"{', '.join(repr(s) for s in SIGNATURE_STATES)}")
    return FileEntry(path=reader.relpath(table, "path", where), size=size,
                     **{f.name: reader.text(table, f.name, where, optional=f.default == "")
                        for f in fields(FileEntry) if f.name not in ("path", "size")})


def _built_file(reader: _Reader, item: object, index: int) -> BuiltFile:
    where = f"built[{index}]"
    table = reader.table(item, where)
    size = table.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise reader.damaged(f"'{where}.size' must be a whole number of bytes")
    return BuiltFile(path=reader.relpath(table, "path", where), size=size,
                     sha256=reader.text(table, "sha256", where))


def _bootstrap_entry(reader: _Reader, table: Mapping[str, object]) -> BootstrapEntry:
    entry = BootstrapEntry(**{f.name: reader.text(table, f.name, "bootstrap",
                                                  optional=f.default == "")
                              for f in fields(BootstrapEntry)})
    if entry.entry:
        reader.relpath_value(entry.entry, "bootstrap.entry")
    if entry.path:
        reader.relpath_value(entry.path, "bootstrap.path")
    elif not entry.module:
        raise reader.damaged("'bootstrap' has neither a path nor a module")
    return entry


T = TypeVar("T")


class _Reader:
    """Typed access to JSON data; every failure names the manifest and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def damaged(self, what: str) -> DamagedManifest:
        return DamagedManifest(f"{self.path}: the manifest is damaged: {what}", _REPACK)

    def table(self, value: object, where: str) -> Mapping[str, object]:
        if not isinstance(value, dict):
            raise self.damaged(f"'{where}' must be a JSON object")
        return value

    def list(self, table: Mapping[str, object], key: str) -> list[object]:
        value = table.get(key)
        if not isinstance(value, list):
            raise self.damaged(f"'{key}' must be a list")
        return value

    def _typed(self, table: Mapping[str, object], key: str, where: str, kind: type[T],
               default: T | None, check: Callable[[object], bool]) -> T:
        value = table.get(key, default)
        if not check(value):
            name = f"{where}.{key}" if where != "manifest" else key
            raise self.damaged(f"'{name}' must be {_KIND_NAMES[kind]}")
        return value  # type: ignore[return-value]

    def text(self, table: Mapping[str, object], key: str, where: str = "manifest",
             optional: bool = False) -> str:
        return self._typed(table, key, where, str, "" if optional else None,
                           lambda v: isinstance(v, str))

    def flag(self, table: Mapping[str, object], key: str) -> bool:
        return self._typed(table, key, "manifest", bool, False,
                           lambda v: isinstance(v, bool))

    def texts(self, table: Mapping[str, object], key: str) -> tuple[str, ...]:
        values = self.list(table, key)
        if not all(isinstance(v, str) for v in values):
            raise self.damaged(f"'{key}' must be a list of strings")
        return tuple(str(v) for v in values)

    def relpath(self, table: Mapping[str, object], key: str, where: str = "manifest") -> str:
        name = f"{where}.{key}" if where != "manifest" else key
        return self.relpath_value(table.get(key), name)

    def relpath_value(self, value: object, name: str) -> str:
        if not isinstance(value, str) or not is_inside_relative(value):
            raise self.damaged(f"'{name}' must be a path relative to the app, with '/' and "
                               f"no '..' (found {json.dumps(value)[:80]})")
        return value


_KIND_NAMES = {str: "a string", bool: "true or false"}
