"""`bundler pack`: spec -> recipe -> sources -> stage -> resolve -> emit -> lock.

Each stage is its own module and passes typed data; this module only runs them
in order, inside an atomic output folder, so a failure changes nothing.
(docs/architecture.md draws it.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bundler.manifest import MANIFEST_NAME, Manifest, write_manifest
from bundler.pack.app_needs import Selection, select_for_app
from bundler.pack.app_scan import Need, scan_app
from bundler.pack.builders import BUILDERS
from bundler.pack.emit import build_manifest
from bundler.pack.lock import Lock, check_lock
from bundler.pack.output import refuse_unsafe_target, staged_output
from bundler.pack.resolve import resolve
from bundler.pack.sources import Source, close_all, open_sources
from bundler.pack.spec import Spec
from bundler.pack.stage import StagedFile, stage_files
from bundler.recipe import Recipe, RuntimeFile, find_recipe


@dataclass(frozen=True)
class PackResult:
    out: Path
    manifest: Manifest
    lock_path: Path
    # component -> why the app scan selected it ("cufft64_11.dll: imported by ...")
    reasons: Mapping[str, list[str]] = field(default_factory=dict)


def pack(spec: Spec, *, out: Path | None = None, overrides: Mapping[str, str] | None = None,
         update_lock: bool = False, environ: Mapping[str, str] | None = None,
         offline: bool = False) -> PackResult:
    recipe = find_recipe(spec.recipe, spec.folder)
    recipe.select(list(spec.components) + list(spec.scan.components))  # names them early
    target = (out or spec.default_out()).resolve()
    refuse_unsafe_target(target, _protected(spec))
    given = {sid: (path, f"from {spec.path.name}") for sid, path in spec.sources.items()}
    given |= {sid: (path, "from --source") for sid, path in (overrides or {}).items()}
    build = BUILDERS[spec.builder]
    environ = os.environ if environ is None else environ

    def select_and_open(bundle: Path, skip: str) -> tuple[Selection, dict[str, Source]]:
        selection = _select(spec, recipe, bundle, skip)
        takes = _members_by_source(recipe.files_for(selection.components))
        return selection, open_sources(recipe, takes, given, spec.folder, environ,
                                       offline=offline)

    # A folder app is scanned as it is, so a missing source stops the pack before any
    # copying; a PyInstaller app exists only once built.
    selection, sources = (select_and_open(spec.app_path, _skip(target, spec.app_path))
                          if spec.builder == "folder" and spec.app_path else (None, {}))
    try:
        with staged_output(target) as staging:
            app_root, bootstrap = build(spec, recipe, staging.folder, target)
            if selection is None:
                runtime = (app_root / spec.runtime_dir).relative_to(staging.folder)
                selection, sources = select_and_open(staging.folder, runtime.as_posix())
            components = selection.components
            files = recipe.files_for(components)
            staged = stage_files(files, sources, app_root / spec.runtime_dir,
                                 spec.runtime_dir)
            origins = {sid: str(s.location) for sid, s in sources.items()}
            resolved = resolve(recipe, components, staged, origins)
            manifest = build_manifest(recipe, [c.name for c in components], spec.runtime_dir,
                                      resolved, bootstrap, spec.require_driver)
            write_manifest(app_root / spec.runtime_dir / MANIFEST_NAME, manifest)
            lock = _lock(recipe, sources, staged)
            check_lock(spec.lock_path, lock, update_lock)
            staging.replace_with_bundle(spec.lock_path, lock.to_bytes())
    finally:
        close_all(sources)
    return PackResult(out=target, manifest=manifest, lock_path=spec.lock_path,
                      reasons=selection.reasons)


def _select(spec: Spec, recipe: Recipe, app: Path, skip: str) -> Selection:
    """The components: the spec's (or the default ones), plus what the app scan finds
    the app needs, plus the spec's [scan] extras. `skip`: a folder of `app` left out."""
    scan = None
    needs = [Need(dll, f"{spec.path.name} [scan] dlls", "named in") for dll in spec.scan.dlls]
    if spec.scan.enabled and app.is_dir():
        scan = scan_app(app, skip)
        needs = list(scan.needs) + needs
    return select_for_app(recipe, spec.components, spec.scan.components, needs, scan,
                          spec.scan.allow_app_copies)


def _skip(target: Path, app: Path) -> str:
    """The bundle's folder when it lies inside the app folder (dist/ in the app)."""
    try:
        return target.relative_to(app.resolve()).as_posix()
    except ValueError:
        return ""


def _members_by_source(files: list[RuntimeFile]) -> dict[str, set[str]]:
    members: dict[str, set[str]] = {}
    for runtime_file in files:
        members.setdefault(runtime_file.source, set()).add(runtime_file.member)
    return members


def _protected(spec: Spec) -> list[Path]:
    return [spec.folder] + ([spec.app_path] if spec.app_path else [])


def _lock(recipe: Recipe, sources: Mapping[str, Source], staged: list[StagedFile]) -> Lock:
    by_source: dict[str, dict[str, str]] = {sid: {} for sid in sources}
    for item in staged:
        by_source[item.file.source][item.file.member] = item.sha256
    return Lock(
        recipe={"name": recipe.name, "sha256": recipe.sha256},
        sources={sid: {"kind": s.spec.kind, "sha256": s.identity(by_source[sid])}
                 for sid, s in sorted(sources.items())},
        files={item.relpath: item.sha256 for item in staged})
