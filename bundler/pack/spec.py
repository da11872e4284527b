"""The app spec (`app.spec`, TOML): what to bundle, with which runtime, from where."""

from __future__ import annotations

import copy
import re
from pathlib import Path, PurePosixPath

from bundler.errors import SpecError
from bundler.formats.manifest import MAX_RUNTIME_DIR_DEPTH
from bundler.pack.builders import BUILDERS, builder_named
from bundler.pack.emit import BOOTSTRAP_NAME
from bundler.pack.spec_model import ScanSettings, Spec
from bundler.support.paths import (
    WINDOWS_NAME_HINT,
    escapes,
    windows_can_name,
    windows_name_problem,
)
from bundler.support.toml_tables import Table, load_toml, shown

# Spec and ScanSettings live in pack/spec_model.py (the builders read them); the reader
# hands them out as before.
__all__ = ["BUILDERS", "MAX_APP_NAME", "ScanSettings", "Spec", "load_spec"]

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
MAX_APP_NAME = 64  # dist/<name>/<runtime dir>/<dll> must fit Windows' 260-character paths


def load_spec(path: Path) -> Spec:
    path = path.resolve()
    data = load_toml(path, SpecError, "spec")
    tables = copy.deepcopy(data)   # Table takes each key out of the data it reads
    top = Table(data, path, "", SpecError, "docs/spec-format.md")
    app, runtime = top.table("app"), top.table("runtime")
    sources = top.table("sources", required=False)
    source_paths = {sid: sources.take(sid, str) for sid in sources.names()}
    scan = _scan(top.table("scan", required=False))
    top.done()
    spec = Spec(
        path=path,
        name=_app_name(app),
        builder=_builder(app),
        app_path=_input(app, "path", path.parent),
        entry=_entry(app),
        script=_input(app, "script", path.parent),
        pyinstaller_spec=_input(app, "pyinstaller_spec", path.parent),
        onefile=app.take("onefile", bool, False),
        python=app.take("python", str, ""),
        requirements=_input(app, "requirements", path.parent),
        zip=_input(app, "zip", path.parent),
        recipe=runtime.take("recipe", str),
        components=runtime.take_str_list("components", []),
        runtime_dir=_runtime_dir(runtime),
        require_driver=runtime.take("require_driver", bool, False),
        sources=source_paths,
        scan=scan,
        allow_unsigned=_globs(runtime, "allow_unsigned"),
        tables=tables,
    )
    app.done()
    runtime.done()
    _check_builder_keys(spec)
    return spec


def _scan(table: Table) -> ScanSettings:
    # `libraries` is the key's name; `dlls`, its first, is a deprecated alias until 1.0.
    if {"libraries", "dlls"} <= set(table.names()):
        raise SpecError(f"{table.path}: [scan] gives both libraries and dlls (dlls is the "
                        "deprecated name of libraries)", "keep libraries only")
    named = "dlls" if "dlls" in table.names() else "libraries"
    settings = ScanSettings(
        enabled=table.take("enabled", bool, True),
        dlls=tuple(table.take_str_list(named, [])),
        components=tuple(table.take_str_list("components", [])),
        allow_app_copies=table.take("allow_app_copies", bool, False),
        environment=table.take("environment", str, ""))
    table.done()
    return settings


def _app_name(app: Table) -> str:
    name = app.take("name", str)
    if len(name) > MAX_APP_NAME:
        raise SpecError(f"{app.path}: app.name {shown(name)} is longer than {MAX_APP_NAME} "
                        "characters", "use a shorter name (Windows paths are short)")
    if not _SAFE_NAME.match(name) or not windows_can_name(name):
        raise SpecError(f"{app.path}: app.name {shown(name)} cannot be a folder name",
                        "use letters, digits, '.', '_' and '-' only")
    return name


def _builder(app: Table) -> str:
    builder = app.take("builder", str, "folder")
    if builder not in (known := [b.name for b in BUILDERS]):
        raise SpecError(f"{app.path}: app.builder {builder!r} is unknown",
                        f"use one of: {', '.join(known)}")
    return builder


def _relative_inside(table: Table, key: str, value: str) -> PurePosixPath:
    """A relative path that stays inside its folder: no absolute paths, no '..'."""
    posix = PurePosixPath(value.replace("\\", "/"))
    if escapes(value):
        raise SpecError(f"{table.path}: {table.where}.{key} = {value!r} escapes its folder",
                        "give a path relative to the spec's folder, without '..'")
    unnamable = [part for part in posix.parts if not windows_can_name(part)]
    if unnamable:
        raise SpecError(f"{table.path}: {table.where}.{key} = {value!r}: Windows cannot name "
                        f"a file or folder {unnamable[0]!r} "
                        f"({windows_name_problem(unnamable[0])})", WINDOWS_NAME_HINT)
    return posix


def _input(table: Table, key: str, base: Path) -> Path | None:
    """Where an input comes from (app.path, app.script, app.pyinstaller_spec): the user's
    business, so '..' and absolute paths are fine, as in PyInstaller specs, Cargo and
    pyproject. Only paths naming places inside the bundle must stay inside it."""
    value = table.take(key, str, "")
    if not value:
        return None
    return (base / value.replace("\\", "/")).resolve()


def _entry(app: Table) -> str:
    """The entry script inside the app folder, with forward slashes ("" for none)."""
    value = app.take("entry", str, "")
    if PurePosixPath(value.replace("\\", "/")).as_posix().lower() == BOOTSTRAP_NAME.lower():
        raise SpecError(f"{app.path}: app.entry = {value!r} is the bootstrap bundler writes",
                        "name the app's own script, e.g. entry = \"main.py\"")
    return _relative_inside(app, "entry", value).as_posix() if value else ""


def _globs(table: Table, key: str) -> list[str]:
    globs = table.take_str_list(key, [])
    for glob in globs:
        if not glob or "/" in glob or "\\" in glob:
            raise SpecError(f"{table.path}: {table.where}.{key} entry {glob!r} is not a file "
                            "name glob", 'give file names or globs, e.g. ["cudnn*.dll"]')
    return globs


def _runtime_dir(runtime: Table) -> str:
    value = runtime.take("dir", str, "cudnn")
    posix = _relative_inside(runtime, "dir", value)
    if not posix.parts:
        raise SpecError(f"{runtime.path}: runtime.dir must name a folder inside the app",
                        'use e.g. dir = "cudnn"')
    if len(posix.parts) > MAX_RUNTIME_DIR_DEPTH:
        raise SpecError(f"{runtime.path}: runtime.dir = {value!r} is more than "
                        f"{MAX_RUNTIME_DIR_DEPTH} folders deep, where bundler's readers "
                        "(verify, doctor) look for its manifest", 'use e.g. dir = "cudnn" or '
                        '"lib/cudnn"')
    return posix.as_posix()


def _check_builder_keys(spec: Spec) -> None:
    """A key only another builder takes would be silently ignored: refuse it, naming the
    builder it is for; then the spec's builder checks the keys it takes (its record)."""
    for other in BUILDERS:
        if other.name == spec.builder:
            continue
        theirs = [key for key in other.keys
                  if not any(key in b.keys for b in BUILDERS if b is not other)]
        if any(_given(spec, key) for key in theirs):
            raise SpecError(f"{spec.path}: app.{'/'.join(theirs)} need builder = "
                            f'"{other.name}"', f'set builder = "{other.name}" or remove them')
    builder_named(spec.builder).check(spec)


# The Spec field each builder key fills, where it is not the key's own name.
_FIELDS = {"path": "app_path"}


def _given(spec: Spec, key: str) -> bool:
    """Whether the spec sets `key` of [app] (to something other than its default)."""
    return bool(getattr(spec, _FIELDS.get(key, key)))
