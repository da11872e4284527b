"""`bundler pack`: spec -> recipe -> sources -> stage -> resolve -> emit -> lock.

Each stage is its own module and passes typed data; this module only runs them
in order, inside an atomic output folder, so a failure changes nothing.
(docs/architecture.md draws it.)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.manifest import MANIFEST_NAME, Manifest, write_manifest
from bundler.pack.builders import BUILDERS
from bundler.pack.emit import build_manifest
from bundler.pack.lock import Lock, check_lock
from bundler.pack.output import refuse_unsafe_target, staged_output
from bundler.pack.resolve import resolve
from bundler.pack.signatures import check_signatures
from bundler.pack.sources import Source, close_all, open_sources
from bundler.pack.spec import Spec
from bundler.pack.stage import StagedFile, stage_files
from bundler.recipe import Recipe, RuntimeFile, find_recipe


@dataclass(frozen=True)
class PackResult:
    out: Path
    manifest: Manifest
    lock_path: Path


def pack(spec: Spec, *, out: Path | None = None, overrides: Mapping[str, str] | None = None,
         update_lock: bool = False, environ: Mapping[str, str] | None = None,
         offline: bool = False) -> PackResult:
    recipe = find_recipe(spec.recipe, spec.folder)
    components = recipe.select(spec.components)
    files = recipe.files_for(components)
    target = (out or spec.default_out()).resolve()
    refuse_unsafe_target(target, _protected(spec))
    given = {sid: (path, f"from {spec.path.name}") for sid, path in spec.sources.items()}
    given |= {sid: (path, "from --source") for sid, path in (overrides or {}).items()}
    sources = open_sources(recipe, _members_by_source(files), given, spec.folder,
                           os.environ if environ is None else environ, offline=offline)
    build = BUILDERS[spec.builder]
    try:
        with staged_output(target) as staging:
            app_root, bootstrap = build(spec, recipe, staging.folder, target)
            staged = stage_files(files, sources, app_root / spec.runtime_dir,
                                 spec.runtime_dir)
            origins = {sid: str(s.location) for sid, s in sources.items()}
            resolved = resolve(recipe, components, staged, origins)
            resolved = check_signatures(recipe, staged, resolved, spec.allow_unsigned,
                                        origins)
            manifest = build_manifest(recipe, [c.name for c in components], spec.runtime_dir,
                                      resolved, bootstrap, spec.require_driver)
            write_manifest(app_root / spec.runtime_dir / MANIFEST_NAME, manifest)
            lock = _lock(recipe, sources, staged)
            check_lock(spec.lock_path, lock, update_lock)
            staging.replace_with_bundle(spec.lock_path, lock.to_bytes())
    finally:
        close_all(sources)
    return PackResult(out=target, manifest=manifest, lock_path=spec.lock_path)


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
