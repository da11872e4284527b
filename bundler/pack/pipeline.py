"""`bundler pack`: spec -> recipe -> sources -> stage -> resolve -> emit -> lock.

Each stage is its own module and passes typed data; this module only runs them
in order, inside an atomic output folder, so a failure changes nothing.
(docs/architecture.md draws it.)
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from bundler.errors import BundlerError
from bundler.formats.lockfile import LockedRecipe, LockedSource
from bundler.formats.manifest import MANIFEST_NAME, Manifest, write_manifest
from bundler.frameworks import environment as python_environment
from bundler.pack.app_needs import Selection, Unprovided, select_for_app
from bundler.pack.app_scan import Need, refuse_unfit_release, scan_app
from bundler.pack.builders import builder_named
from bundler.pack.builders.base import BuildOptions, Skipped
from bundler.pack.builders.folder import check_entry
from bundler.pack.builders.installed_again import kept_at
from bundler.pack.emit import build_manifest, built_files
from bundler.pack.fresh_stamps import own_dependencies
from bundler.pack.lock import Lock, LockPolicy, bundle_record, check_lock, read_lock, spec_record
from bundler.pack.one_copy import LeftOutWheel, examine
from bundler.pack.output import (
    output_folder,
    refuse_unholdable_names,
    refuse_unsafe_target,
    staged_output,
)
from bundler.pack.own_data import own_data
from bundler.pack.requirement_files import NOT_HASHED, nested_files
from bundler.pack.resolve import LibraryReader, ResolvedRuntime, resolve
from bundler.pack.reuse import (
    Previous,
    Reuse,
    fill_or_warn,
    previous_bundle,
    reuse_runtime,
    store_trouble,
)
from bundler.pack.scan_memo import ScanMemo, memo_of
from bundler.pack.signatures import SignatureChecker, check_signatures
from bundler.pack.sources import Source, close_all, given_path, open_sources, wheel_cache_folders
from bundler.pack.spec import Spec
from bundler.pack.stage import StagedFile, stage_files
from bundler.pack.store import pins
from bundler.pack.store.hashed import relinked
from bundler.pack.store.store import Store, StoreError, open_store
from bundler.pack.up_to_date import MadeFrom, own_code
from bundler.pack.wheel_lock import (
    refuse_locked_spec_change,
    reusable_wheels,
    wheel_record,
    wheels_target,
)
from bundler.pack.zip.output import (
    PendingZip,
    check_zip_path,
    kept_streams,
    remove_killed_zip,
    write_zip,
)
from bundler.pack.zip.writer import Compressor, ZipCounts
from bundler.recipe.folders import shipped_recipe_dir
from bundler.recipe.load import Recipe, RuntimeFile, find_recipe
from bundler.recipe.selection import completions


@dataclass(frozen=True)
class RuntimeOrigin:
    """Where the runtime's files came from: read from the inputs, or taken from the
    store or the previous bundle (linked or copied)."""

    files: dict[str, int] = field(default_factory=dict)   # "read"/"store"/"previous" -> n
    linked: int = 0
    copied: int = 0


@dataclass(frozen=True)
class PackResult:
    out: Path
    manifest: Manifest
    lock_path: Path
    origin: RuntimeOrigin = RuntimeOrigin()
    # component -> why the app scan selected it ("cufft64_11.dll: imported by ...")
    reasons: Mapping[str, list[str]] = field(default_factory=dict)
    # source id -> how its input is vouched for (recipe.SourceSpec.trust)
    trust: Mapping[str, str] = field(default_factory=dict)
    # what of the app folder the bundle does not carry, and why
    skipped: tuple[Skipped, ...] = ()
    warnings: tuple[str, ...] = ()   # what went wrong on the side (the store is a cache)
    lock_changes: tuple[str, ...] = ()   # a spec change the lock followed, --update-lock
    zip_path: Path | None = None   # --zip: the bundle as one deterministic zip
    zip_counts: ZipCounts | None = None   # its members: streams reused, compressed now
    unprovided: tuple[Unprovided, ...] = ()   # imported; neither bundle nor OS has them
    environment: str = ""   # the app's Python environment, examined for second copies
    left_out_wheels: tuple[LeftOutWheel, ...] = ()   # nvidia-* wheels the bundle replaces
    made_from: MadeFrom | None = None   # None: the builder reads what bundler cannot list


def pack(spec: Spec, *, out: Path | None = None, overrides: Mapping[str, str] | None = None,
         update_lock: bool = False, environ: Mapping[str, str] | None = None,
         offline: bool = False, copy: bool = False, locked: bool = False,
         zip_to: Path | None = None, zip_level: Compressor | None = None) -> PackResult:
    """`copy`: the bundle's runtime files are its own copies, never links into the
    store or the previous bundle. `locked`: refuse any change to the lock (CI).
    `zip_to`: also write the bundle as a deterministic zip there (else app.zip's)."""
    environ = os.environ if environ is None else environ
    policy = _lock_policy(update_lock, locked)
    refuse_locked_spec_change(spec, _old_lock(spec.lock_path), policy)   # before any work
    given = {sid: (path, f"from {spec.path.name}") for sid, path in spec.sources.items()}
    given |= {sid: (path, "from --source") for sid, path in (overrides or {}).items()}
    inputs = {sid: path for sid in given if (path := given_path(sid, given, spec.folder))}
    own = own_data(spec, inputs, environ)   # never shipped from the app folder
    if spec.scan.enabled:   # a release the app's frameworks refuse: before any input opens
        refuse_unfit_release(spec.recipe, spec.app_path)
    recipe = find_recipe(spec.recipe, spec.folder, inputs)
    recipe.select(list(spec.components) + list(spec.scan.components))  # names them early
    check_entry(spec)   # a typo is said before any input is read or fetched
    target = output_folder(out or spec.default_out())
    refuse_unsafe_target(target, _protected(spec))
    zip_to = zip_to or spec.zip   # --zip PATH wins over the spec's app.zip
    zip_path = check_zip_path(zip_to, target) if zip_to else None
    zipped: PendingZip | None = None
    builder = builder_named(spec.builder)
    warnings: list[str] = []
    store = _store_or_none(environ, warnings)
    keep_wheels = pins.keep_wheels(environ)   # a typo is said before any work

    def select_and_open(bundle: Path, skip: str, left_out: tuple[LeftOutWheel, ...] = (),
                        memo: ScanMemo | None = None) -> tuple[Selection, dict[str, Source]]:
        selection = _select(spec, recipe, bundle, skip, left_out, own, memo)
        takes = _members_by_source(recipe.files_for(selection.components))
        return selection, open_sources(recipe, takes, given, spec.folder, environ,
                                       offline=offline, store=store)

    # A folder app is scanned as it is, so a missing source stops the pack before any
    # copying; a PyInstaller app exists only once built.
    selection, sources = (select_and_open(spec.app_path, _skip(target, spec.app_path))
                          if builder.ships_app_as_is and spec.app_path else (None, {}))
    try:
        with staged_output(target, [spec.lock_path]) as staging:
            remove_killed_zip(target)   # a killed --zip's, whether this pack zips or not
            # Read under the pack locks, after any interrupted swap was completed.
            previous = previous_bundle(target, _old_lock(spec.lock_path))
            built = builder.build(spec, recipe, staging.folder, target, BuildOptions(
                environ, offline, reusable_wheels(spec, _old_lock(spec.lock_path), policy,
                                                  recipe.target),
                own_data=own, keeping=kept_at(store, target, copy)))
            app_root, bootstrap = built.root, built.bootstrap
            if selection is None:
                runtime = (app_root / spec.runtime_dir).relative_to(staging.folder)
                selection, sources = select_and_open(staging.folder, runtime.as_posix(),
                                                     built.left_out, memo_of(store, built.digests))
            runtime_dir = app_root / spec.runtime_dir
            made = _make_runtime(spec, recipe, selection, sources, store, previous,
                                 runtime_dir, copy)
            staged, reuse = made.staged, made.reuse
            warnings.extend(reuse.notes)   # a stored file gone at link time: input read
            manifest = build_manifest(recipe, [c.name for c in selection.components],
                                      spec.runtime_dir, made.resolved, bootstrap,
                                      spec.require_driver,
                                      built_files(app_root, built.made, built.digests))
            write_manifest(runtime_dir / MANIFEST_NAME, manifest)
            identities = made.identities
            lock = replace(_lock(spec, recipe, selection, sources, staged, identities,
                                 bundle_record(app_root, runtime_dir / MANIFEST_NAME,
                                               manifest.bootstrap.entry)),
                           wheels=wheel_record(built.wheels),
                           wheels_for=wheels_target(spec, recipe.target)
                           if built.wheels is not None else None)
            settled = check_lock(spec.lock_path, lock, policy,
                                 {item.relpath: item.file.source for item in staged})
            if store is not None:
                fill_or_warn(store, recipe, sources, staged, identities, copy, environ, warnings)
            refuse_unholdable_names(staging.folder, recipe.target, target.name)
            staging.replace_with_bundle(spec.lock_path, settled.data)
            if zip_path is not None:   # the staged bundle is the one swapped in next
                zipped = write_zip(staging.folder, target.name, zip_path,
                                   recipe.target.windows_names, target,
                                   kept_streams(store, environ, zip_level),
                                   {str(i.path): i.sha256 for i in staged}, zip_level)
        if zipped is not None:
            zipped.publish()
        if store is not None:
            try:   # the bundle and lock are in place: a failing cache must not say otherwise
                store.register_lock(spec.lock_path, recipe.name)
            except OSError as exc:
                warnings.append(store_trouble(store, "keep a note of this lock", exc))
            # the stored files this pack proved, as their stamps are now that its links
            # are made and the old bundle's are gone: the next pack need not read them
            relinked(store.root, store.key, reuse.proofs)
        built.in_place(target / app_root.relative_to(staging.folder))   # what it proved
    finally:
        close_all(sources)
        if zipped is not None:
            zipped.discard()   # a zip not published (the swap failed) is removed
    if store is not None and not keep_wheels:   # each runtime once on disk: in the store
        pins.drop_held_wheels(store, wheel_cache_folders(sources, given, spec.folder, environ))
    ways = Counter(reuse.origin.get(item.file.source, "read") for item in staged)
    origin = RuntimeOrigin(files=dict(ways), linked=reuse.linked, copied=reuse.copied)
    trust = dict(made.resolved.trust)
    return PackResult(out=target, manifest=manifest, lock_path=spec.lock_path, origin=origin,
                      reasons=selection.reasons, trust=trust, skipped=built.skipped,
                      warnings=tuple(warnings), lock_changes=settled.changes,
                      zip_path=zip_path, zip_counts=zipped.counts if zipped else None,
                      unprovided=selection.unprovided,
                      environment=selection.environment, left_out_wheels=built.left_out,
                      made_from=_made_from(spec, recipe, sources, target, zip_path, given)
                      if builder.inputs_known and _lock_is(spec.lock_path, lock.to_bytes())
                      else None)


def _made_from(spec: Spec, recipe: Recipe, sources: Mapping[str, Source], target: Path,
               zip_path: Path | None, given: Mapping[str, tuple[str, str]]) -> MadeFrom:
    """Every file and folder this pack's bundle depends on or consists of, and the
    paths whose pack files (a killed pack's staging folder, its --zip's note naming the
    .partial) a later pack removes: where any appears, the next pack runs in full. What
    was read, as it was found: a source or recipe given by a link (the link, and what it
    points to), each file taken from a folder input (through the links on its way), the
    shipped recipes and their families wherever bundler is installed, bundler's own
    dependencies, the site-packages the one-copy check may examine."""
    files = [spec.path, spec.lock_path, recipe.path]
    if spec.recipe.endswith(".toml") or "/" in spec.recipe or "\\" in spec.recipe:
        files.append(spec.folder / spec.recipe)   # the path as given: a link is stamped
    files += [spec.folder / os.path.expanduser(path) for path, _ in given.values()]
    if spec.requirements is not None:
        files.append(spec.requirements)
        files += [spec.requirements.parent / name   # a URL's file is pip's to fetch
                  for name, digest in nested_files(spec.requirements).items()
                  if digest != NOT_HASHED]
    if zip_path is not None:
        files.append(zip_path)
    folders = [target, own_code(), shipped_recipe_dir()]
    if spec.app_path is not None:
        folders.append(spec.app_path)
    if spec.scan.environment:
        folders.append((spec.folder / spec.scan.environment).resolve())
    for source in sources.values():
        if source.location.is_dir():
            folders.append(source.location)
            files += [source.location / member for member in sorted(source.takes)]
        else:
            files.append(source.location)
    modules, packages = own_dependencies()
    outputs = (target, spec.lock_path, *([zip_path] if zip_path else []))
    return MadeFrom(tuple(files + modules), tuple(folders + packages),
                    (target, spec.lock_path), outputs,
                    listed=python_environment.interpreter_site_packages(), base=spec.folder)


def _lock_is(path: Path, data: bytes) -> bool:
    """Whether the lock on disk is the very lock this pack made: --locked keeps a lock
    that lacks a record this pack would add (or an older format), which the next pack
    without --locked rewrites, so such a pack is no state to call up to date."""
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def _lock_policy(update_lock: bool, locked: bool) -> LockPolicy:
    if update_lock and locked:
        raise BundlerError("--locked and --update-lock contradict each other: one refuses "
                           "any change to the lock, the other accepts changed inputs",
                           "give one of them (--locked in CI)")
    return "update" if update_lock else "locked" if locked else "follow"


def _store_or_none(environ: Mapping[str, str], warnings: list[str]) -> Store | None:
    """The store, or None: one that cannot be used is said once and packed without."""
    try:
        return open_store(environ)
    except StoreError as exc:
        warnings.append(f"{exc.message}; packing without it ({exc.hint})")
        return None


@dataclass(frozen=True)
class _Runtime:
    staged: list[StagedFile]      # in the recipe's order
    reuse: Reuse                  # what was taken from the store or the previous bundle
    resolved: ResolvedRuntime     # checked, signatures recorded
    identities: dict[str, str]    # each input's sha256, as the lock pins it


def _make_runtime(spec: Spec, recipe: Recipe, selection: Selection,
                  sources: Mapping[str, Source], store: Store | None,
                  previous: Previous | None, runtime_dir: Path, copy: bool) -> _Runtime:
    """The runtime folder's files: reused where an earlier read allows, else read from
    the sources; then the pack-time checks and the signatures (checked as files land)."""
    files = recipe.files_for(selection.components)
    with SignatureChecker(recipe, store) as signatures, \
            LibraryReader(recipe.target) as libraries:
        def landed(item: StagedFile) -> None:   # its checks start while others stage
            signatures.start(item)
            libraries.start(item)

        reuse = reuse_runtime(files, sources, store, previous, runtime_dir,
                              spec.runtime_dir, copy)
        for item in reuse.staged:
            landed(item)
        read = stage_files([f for f in files if f.source not in reuse.identities],
                           sources, runtime_dir, spec.runtime_dir, landed,
                           signatures.digest_for)
        by_name = {item.file.name: item for item in (*reuse.staged, *read)}
        staged = [by_name[f.name] for f in files]
        origins = {sid: str(s.location) for sid, s in sources.items()}
        resolved = resolve(recipe, selection.components, staged, origins, libraries)
        identities = _identities(sources, staged, reuse.identities)
        resolved = check_signatures(recipe, staged, resolved, spec.allow_unsigned,
                                    origins, signatures, identities)
    return _Runtime(staged, reuse, resolved, identities)


def _select(spec: Spec, recipe: Recipe, app: Path, skip: str,
            left_out: tuple[LeftOutWheel, ...] = (), own: Mapping[Path, str] | None = None,
            memo: ScanMemo | None = None) -> Selection:
    """The components: the spec's (or the default ones), plus what the app scan finds
    the app needs, plus the spec's [scan] extras, plus what stands in for the nvidia-*
    wheels the builder left out. `skip`: a folder of `app` left out."""
    scan = None
    needs = [Need(dll, f"{spec.path.name} [scan] dlls", "named in") for dll in spec.scan.dlls]
    needs += [Need(dll, f"{w.distribution} {w.version}, left out of the app", "in place of")
              for w in left_out for dll in w.libraries]
    if spec.scan.enabled and app.is_dir():
        scan = scan_app(app, skip, platform=recipe.target, own=own, memo=memo)
        needs = list(scan.needs) + needs
    environment = examine(spec, recipe, app, skip) if app.is_dir() else None
    selection = select_for_app(recipe, spec.components, spec.scan.components, needs, scan,
                               spec.scan.allow_app_copies, environment)
    # What the selection gained so its libraries load what they load at their first call
    # (recipe/selection.py), said in the summary like the scan's reasons.
    completed = completions(recipe, spec.components,
                            [*spec.scan.components, *selection.reasons])
    return replace(selection, reasons={**selection.reasons, **completed})


def _skip(target: Path, app: Path) -> str:
    """The bundle's folder when it lies inside the app folder (dist/ in the app)."""
    try:
        return target.relative_to(app.resolve()).as_posix()
    except ValueError:
        return ""


def _old_lock(path: Path) -> Lock | None:
    try:
        return read_lock(path)
    except BundlerError:
        return None   # check_lock reports a damaged lock; it only stops the reuse


def _members_by_source(files: list[RuntimeFile]) -> dict[str, set[str]]:
    members: dict[str, set[str]] = {}
    for runtime_file in files:
        members.setdefault(runtime_file.source, set()).add(runtime_file.member)
    return members


def _protected(spec: Spec) -> list[Path]:
    return [spec.folder] + ([spec.app_path] if spec.app_path else [])


def _identities(sources: Mapping[str, Source], staged: list[StagedFile],
                known: Mapping[str, str]) -> dict[str, str]:
    """Each input's identity for the lock: known for a reused input, else from the
    read (which also checks the recipe's pin)."""
    by_source: dict[str, dict[str, str]] = {sid: {} for sid in sources}
    for item in staged:
        by_source[item.file.source][item.file.member] = item.sha256
    return {sid: known.get(sid) or source.identity(by_source[sid])
            for sid, source in sources.items()}


def _lock(spec: Spec, recipe: Recipe, selection: Selection, sources: Mapping[str, Source],
          staged: list[StagedFile], identities: Mapping[str, str],
          bundle: dict[str, str]) -> Lock:
    return Lock(
        recipe=LockedRecipe(recipe.name, recipe.sha256),
        sources={sid: LockedSource(identities[sid], s.spec.kind)
                 for sid, s in sorted(sources.items())},
        files={item.relpath: item.sha256 for item in staged},
        spec=spec_record(spec.tables, spec.requirements),
        components=[c.name for c in selection.components], bundle=bundle)
