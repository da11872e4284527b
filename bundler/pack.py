"""`bundler pack`: spec -> recipe -> sources -> stage -> resolve -> emit -> lock.

Each stage is its own module and passes plain data; this module only runs them
in order, inside an atomic output folder, so a failure changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.build_folder import build_folder_app
from bundler.build_pyinstaller import build_pyinstaller_app
from bundler.emit import MANIFEST_NAME, Manifest, build_manifest
from bundler.lock import Lock, check_lock
from bundler.output import refuse_unsafe_target, staged_output
from bundler.recipe import Recipe, RuntimeFile, find_recipe
from bundler.resolve import resolve
from bundler.sources import Source, close_all, open_sources
from bundler.spec import BUILDERS as BUILDER_NAMES
from bundler.spec import Spec
from bundler.stage import StagedFile, stage_files

# A builder makes the app in the staging folder and says where the bootstrap's
# folder is (the runtime goes inside it) and the bootstrap's manifest entry. It gets
# the spec, the recipe, the staging folder and the final output folder (each builder
# uses what it needs: the recipe's platform and file names, or the output to skip).
Builder = Callable[[Spec, Recipe, Path, Path], tuple[Path, dict[str, str]]]
BUILDERS: dict[str, Builder] = {"folder": build_folder_app,
                                "pyinstaller": build_pyinstaller_app}
# spec.BUILDERS is the list of names a spec may choose (spec cannot import the builders:
# they import spec). This table must implement exactly those; checked on every import.
if set(BUILDERS) != set(BUILDER_NAMES):
    raise RuntimeError(f"bundler.pack implements builders {sorted(BUILDERS)}, but "
                       f"bundler.spec offers {sorted(BUILDER_NAMES)}")


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
            manifest = build_manifest(recipe, [c.name for c in components], spec.runtime_dir,
                                      resolved, bootstrap, spec.require_driver)
            (app_root / spec.runtime_dir / MANIFEST_NAME).write_bytes(manifest.to_bytes())
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
