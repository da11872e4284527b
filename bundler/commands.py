"""The commands: each runs one product and prints what it found (text or JSON)."""


from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from bundler.diagnose.doctor import examine_bundle, examine_machine, render_bundle, render_machine
from bundler.diagnose.inspection import inspect_path
from bundler.diagnose.inspection import render as render_inspect
from bundler.diagnose.process_check import check_process, print_check
from bundler.diagnose.verify import VerifyReport, bundles_in, verify
from bundler.errors import (
    EXIT_OK,
    EXIT_PROBLEMS,
    BundlerError,
    LockError,
    RecipeError,
    RefusedError,
)
from bundler.formats.lockfile import Lock, read_lock
from bundler.formats.manifest import (
    SIGNATURE_ALLOWED_UNSIGNED,
    SIGNATURE_VERIFIED,
    FileEntry,
    FoundManifest,
)
from bundler.formats.swap_journal import journaled_targets, recover_beside
from bundler.pack.pipeline import PackResult, pack
from bundler.pack.signatures import ladder
from bundler.pack.spec import load_spec
from bundler.pack.store.store import DISABLED, STORE_VARIABLE, open_store
from bundler.pack.store.upkeep import MAX_VARIABLE, StoreReport, examine, prune, size_cap
from bundler.recipe.load import Recipe, find_recipe, shipped_recipes
from bundler.recipe.selection import completions
from bundler.releases.catalogue import Release, family_counts, find_release, matching_releases
from bundler.support.progress import silenced
from bundler.support.text_tables import human_size as _size


def cmd_pack(args: argparse.Namespace) -> int:
    spec = load_spec(Path(args.spec))
    with silenced(args.json):   # no progress bars under --json
        result = pack(spec, out=Path(args.out) if args.out else None,
                      overrides=dict(args.source or []), update_lock=args.update_lock,
                      offline=args.offline, copy=args.copy, locked=args.locked,
                      zip_to=Path(args.zip) if args.zip else None)
    for warning in result.warnings:   # on stderr, so --json output stays one document
        _say(f"bundler: warning: {warning}")
    if args.json:
        print(json.dumps(_pack_summary(result), indent=2))
    else:
        _print_pack(result)
    return EXIT_OK


def _pack_summary(result: PackResult) -> dict:
    manifest = result.manifest
    return {"out": str(result.out), "lock": str(result.lock_path),
            "recipe": manifest.recipe.name, "components": list(manifest.components),
            "files": [asdict(entry) for entry in manifest.files],
            "load_order": list(manifest.load_order),
            "component_sizes": manifest.component_sizes(), "total_size": manifest.total_size,
            "selected_because": dict(result.reasons),
            "allowed_unsigned": [e.path for e in manifest.files
                                 if e.signature == SIGNATURE_ALLOWED_UNSIGNED],
            "runtime_origin": asdict(result.origin), "inputs_trusted": dict(result.trust),
            "skipped_from_app": [asdict(item) for item in result.skipped],
            "not_provided": [asdict(item) for item in result.unprovided],
            "environment": result.environment,
            "left_out_wheels": [asdict(item) for item in result.left_out_wheels],
            "warnings": list(result.warnings), "lock_changes": list(result.lock_changes),
            "zip": str(result.zip_path) if result.zip_path else None,
            "zip_members": asdict(result.zip_counts) if result.zip_counts else None}


_SKIPPED_SHOWN = 20   # lines naming what was not copied (or provided); --json names all


def _print_pack(result: PackResult) -> None:
    manifest = result.manifest
    print(f"packed {manifest.recipe.name} into {result.out}")
    print(f"  components: {', '.join(manifest.components)}")
    for component, reasons in result.reasons.items():   # what the app scan brought in
        print(f"  {component}: {'; '.join(reasons)}")
    for lack in result.unprovided[:_SKIPPED_SHOWN]:   # what the app imports, nothing has
        them = "them" if len(lack.libraries) > 1 else "it"
        print(f"  not provided: {', '.join(lack.libraries)}, imported by {lack.by}: neither "
              f"the bundle nor the system has {them}; that file loads only where the "
              f"machine provides {them}")
    if len(result.unprovided) > _SKIPPED_SHOWN:
        print(f"  not provided: what {len(result.unprovided) - _SKIPPED_SHOWN} more files "
              "import (--json lists them all)")
    if result.environment:   # "none (...)" too: what was not examined is said
        print(f"  environment examined for second copies: {result.environment}")
    for wheel in result.left_out_wheels:   # the bundle provides these (pack/one_copy.py)
        what = "left out" if wheel.whole else f"{', '.join(wheel.libraries)} left out"
        print(f"  {wheel.distribution} {wheel.version}: {what} of the app; the bundle "
              f"provides {', '.join(wheel.libraries)}, so the process maps one copy")
    for entry in manifest.files:
        print(f"  {_size(entry.size):>10}  {entry.path}  ({entry.component}"
              f"{_signature_note(entry)})")
    for component, size in manifest.component_sizes().items():
        print(f"  {_size(size):>10}  component {component}")
    extra = [f"the bootstrap {manifest.bootstrap.path}"] if manifest.bootstrap.path else []
    extra += [f"the entry script {manifest.bootstrap.entry}"] if manifest.bootstrap.entry else []
    bootstrap = f"; verify also checks {' and '.join(extra)}" if extra else ""
    print(f"  {_size(manifest.total_size):>10}  total, {len(manifest.files)} runtime files"
          f"{bootstrap}")
    print(f"  runtime: {_origin_text(result)}")
    for sid, trust in result.trust.items():
        print(f"  input {sid}: {trust}")
    changed = f" (updated: {'; '.join(result.lock_changes)})" if result.lock_changes else ""
    print(f"  lock: {result.lock_path}{changed}")
    if result.zip_path:
        print(f"  zip: {result.zip_path}")
    if result.zip_counts:   # streams kept by earlier zips are copied, not compressed again
        counts = result.zip_counts
        print(f"  zip members: {counts.members}; {counts.reused} reused from earlier zips, "
              f"{counts.compressed} compressed now")
    for item in result.skipped[:_SKIPPED_SHOWN]:   # what of the app the bundle lacks
        print(f"  not copied from the app folder: {item.path} ({item.why})")
    if len(result.skipped) > _SKIPPED_SHOWN:
        print(f"  not copied from the app folder: {len(result.skipped) - _SKIPPED_SHOWN} "
              "more (--json lists them all)")
    allowed = [e.name for e in manifest.files if e.signature == SIGNATURE_ALLOWED_UNSIGNED]
    if allowed:
        print(f"  NOT SIGNED: {len(allowed)} files lack the signature the recipe asks for and "
              "were accepted by the spec's allow_unsigned: this runtime is a stand-in or a "
              f"rebuild, not the original ({', '.join(allowed)})")
    # What to run: a PyInstaller build's exe, an embedded-python bundle's launcher.
    for exe in sorted([*result.out.glob("*.exe"), *result.out.glob("*.cmd")]):
        print(f"  run: {exe}")


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _lock_arg(args: argparse.Namespace) -> Lock | None:
    if not args.lock:
        return None
    lock = read_lock(Path(args.lock))
    if lock is None:
        raise LockError(f"{args.lock}: no such lock file", "give the SPEC.lock beside the spec")
    return lock


def _signature_note(entry: FileEntry) -> str:
    if entry.signature == SIGNATURE_VERIFIED:
        when = f", timestamp {entry.signed_at}" if entry.signed_at else ""
        return f"; signed by {entry.signer}{when}"
    if entry.signature == SIGNATURE_ALLOWED_UNSIGNED:
        return "; not signed, allowed by allow_unsigned"
    return ""


def _origin_text(result: PackResult) -> str:
    origin = result.origin
    how = ("linked" if not origin.copied else "copied" if not origin.linked
           else f"{origin.linked} linked, {origin.copied} copied")
    labels = {"read": "read from the inputs", "store": f"from the store ({how})",
              "previous": f"from the previous bundle ({how})"}
    return "; ".join(f"{count} file(s) {labels[way]}"
                     for way, count in sorted(origin.files.items())) or "no files"


def cmd_cache(args: argparse.Namespace) -> int:
    store = open_store(os.environ)
    if store is None:
        raise BundlerError(f"the runtime store is off ({STORE_VARIABLE}={DISABLED})",
                           f"unset {STORE_VARIABLE} to use the store")
    report = prune(store) if args.action == "prune" and not args.dry_run else examine(store)
    cap = size_cap(os.environ)
    if args.json:
        print(json.dumps(asdict(report) | {"unpinned_size": report.unpinned_size,
                                           "size_cap": cap}, indent=2, default=str))
    else:
        print("\n".join(_store_lines(report, args.action == "prune", cap)))
    return EXIT_OK


def _store_lines(report: StoreReport, pruning: bool, cap: int) -> list[str]:
    capped = (f" (cap {_size(cap)}, ${MAX_VARIABLE}: packs remove the least recently used "
              "beyond it)" if cap else f" (no cap: ${MAX_VARIABLE}=0)")
    lines = [f"runtime store {report.root}: {report.objects} file(s), {_size(report.size)}"
             + capped]
    for lock in report.locks:
        state = (f"pins {len(lock.pinned)} file(s)" if lock.exists
                 else "gone (its files are no longer kept for it)")
        lines.append(f"  {lock.lock} ({lock.recipe or 'recipe unknown'}): {state}")
    verb = ("removed" if report.removed else "would remove") if pruning else "pinned by no lock"
    lines.append(f"  {verb}: {len(report.unpinned)} file(s), {_size(report.unpinned_size)}")
    if report.debris:
        lines.append(f"  {'removed' if report.removed else 'left by killed packs'}: "
                     f"{_size(report.debris)} in tmp/")
    if not pruning and (report.unpinned or report.debris):
        lines.append("  (bundler cache prune removes them; --dry-run shows what it would do)")
    return lines


def _bundles(folder: Path, lock: Lock | None) -> list[FoundManifest]:
    """The bundle `folder` is, or each bundle directly inside it (`verify dist`, `doctor
    dist`)."""
    # A pack killed mid-swap: the bundle (or one in the folder) may be aside.
    for target in [folder.resolve(), *journaled_targets(folder.resolve())]:
        recover_beside(target, _say)
    bundles = bundles_in(folder)
    if lock is not None and len(bundles) > 1:
        raise BundlerError(f"{folder}: holds {len(bundles)} bundles, and one lock pins one",
                           "give the bundle folder itself with --lock")
    return bundles


def _top(found: FoundManifest, folder: Path) -> Path:
    """A bundle's own folder (a PyInstaller bundle's, above _internal), spelled from
    `folder` as the user gave it."""
    top = found.root.parent if found.root.name == "_internal" else found.root
    return folder / top.relative_to(folder.resolve())


def cmd_verify(args: argparse.Namespace) -> int:
    if args.run_app or args.app_command:
        return _verify_run(args)
    lock = _lock_arg(args)
    reports = []
    for found in _bundles(Path(args.appdir), lock):
        reports.append(verify(found.root, lock=lock,
                              lock_path=Path(args.lock) if args.lock else None))
    if args.json:
        data = [r.to_dict() for r in reports]
        print(json.dumps(data[0] if len(data) == 1 else data, indent=2))
    else:
        for report in reports:
            _print_verify(report)
    return EXIT_OK if all(r.ok for r in reports) else EXIT_PROBLEMS


def _verify_run(args: argparse.Namespace) -> int:
    """`verify --run`: what the running app maps (diagnose/process_check.py)."""
    if not args.run_app or args.lock:
        raise BundlerError("a COMMAND goes with --run, and --lock without it",
                           "bundler verify --run APPDIR -- COMMAND ...")
    (found, *more) = _bundles(Path(args.appdir), None)
    if more:
        raise BundlerError(f"{args.appdir}: holds {len(more) + 1} bundles; --run starts one",
                           "give the bundle folder itself")
    return print_check(check_process(found, args.app_command, args.timeout), args.json)


def _print_verify(report: VerifyReport) -> None:
    for label, items in (("missing", report.missing), ("changed", report.changed),
                         ("unexpected", report.unexpected),
                         ("not as locked", report.not_as_locked),
                         ("signature", report.signatures)):
        for item in items:
            print(f"{label}: {item}")
    against = f" and {report.lock}" if report.lock else ""
    if report.lock:   # say what the lock covered: an older lock pins no manifest
        against += (f" (which also pins {' and '.join(report.lock_pins)})" if report.lock_pins
                    else " (which pins the runtime files only: pack again to pin the "
                         "manifest and entry script too)")
    if report.ok:
        signed = f", {report.signed} signatures valid" if report.signed else ""
        print(f"ok: {report.checked} files match {report.manifest}{signed}{against}")
    else:
        print(f"{report.app}: the bundle differs from its manifest{against}; hint: "
              f"{report.hint}", file=sys.stderr)


def cmd_inspect(args: argparse.Namespace) -> int:
    report = inspect_path(Path(args.path))
    _print_report(report, render_inspect(report), args.json)
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.appdir:   # each bundle of a folder of bundles, as verify checks them
        folder, lock = Path(args.appdir), _lock_arg(args)
        bundles = [examine_bundle(_top(found, folder), lock=lock)
                   for found in _bundles(folder, lock)]
        if args.json:   # one object for one bundle, a list for a folder of them
            data = [_report_data(bundle) for bundle in bundles]
            print(json.dumps(data[0] if len(data) == 1 else data, indent=2))
        else:
            print("\n\n".join("\n".join(render_bundle(bundle)) for bundle in bundles))
        return EXIT_OK if all(b.ok for b in bundles) else EXIT_PROBLEMS
    machine = examine_machine()
    _print_report(machine, render_machine(machine), args.json)
    return EXIT_OK if machine.ok else EXIT_PROBLEMS


def _print_report(report: object, lines: list[str], as_json: bool) -> None:
    if as_json:
        print(json.dumps(_report_data(report), indent=2))
    else:
        print("\n".join(lines))


def _report_data(report: object) -> dict:
    data: dict = asdict(report)  # type: ignore[call-overload]
    if hasattr(report, "ok"):
        data["ok"] = report.ok
    return data


def cmd_recipes(args: argparse.Namespace) -> int:
    if args.name and not args.write:
        releases = matching_releases(args.name)
        if releases is not None and not find_release(args.name):
            return _list_releases(args.name, releases, args.json)
    if args.name:
        recipe = find_recipe(args.name, Path.cwd())
        if args.write:
            return _write_recipe(recipe, Path(args.write))
        if args.json:
            print(json.dumps(_recipe_summary(recipe), indent=2))
            return EXIT_OK
        _show_recipe(recipe)
        return EXIT_OK
    recipes = shipped_recipes()
    if args.json:
        print(json.dumps([_recipe_summary(r) for r in recipes], indent=2))
        return EXIT_OK
    for recipe in recipes:
        print(f"{recipe.name:40} cuDNN {recipe.cudnn:10} CUDA {recipe.cuda:6} "
              f"{recipe.platform}")
    print("\nand every release of the catalogue, by name "
          "(cudnn-<version>-cuda<CUDA>-win-x64 or -linux-x64):")
    for family, count, first, last in family_counts():
        print(f"  {family}: {count} releases, {first} ... {last}")
    print("list a family or a series with: bundler recipes cudnn9 | bundler recipes 9.1 | "
          "bundler recipes cudnn9-linux-x64")
    return EXIT_OK


def _show_recipe(recipe: Recipe) -> None:
    print(f"{recipe.name}: {recipe.description}")
    compat = (f" ({recipe.min_driver_compat} with minor-version compatibility)"
              if recipe.min_driver_compat else "")
    print(f"  platform {recipe.platform}; cuDNN {recipe.cudnn}; CUDA {recipe.cuda}; "
          f"driver >= {recipe.min_driver}{compat}")
    for source in recipe.sources.values():
        found_by = f" (found via {', '.join(source.env)})" if source.env else ""
        what = (f"{source.package}=={source.version}" if source.package
                else source.file_name)
        print(f"  source {source.id}: {source.kind} {what}{found_by}; "
              f"{ladder(recipe, source.id)}")
    for component in recipe.components.values():
        requires = f" -> {', '.join(component.requires)}" if component.requires else ""
        print(f"  component {component.name}: {', '.join(component.files)}{requires}")
        if component.description:
            print(f"    {component.description}")
        brings = completions(recipe, [component.name])   # what it needs to work, and why
        if brings:
            print(f"    brings {'; '.join(f'{c} ({w[0]})' for c, w in brings.items())}")


def _list_releases(query: str, releases: list[Release], as_json: bool) -> int:
    if not releases:
        raise RecipeError(f"bundler knows no cuDNN release matching '{query}'",
                          "bundler recipes lists the families and their ranges")
    rows = [{"name": r.name, "cudnn": r.cudnn, "cuda": r.cuda,
             "wheel": r.wheel.file_name if r.wheel else "",
             "archives": [a.file_name for a in r.archives]} for r in releases]
    if as_json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for row in rows:
        channels = (["PyPI wheel"] if row["wheel"] else []) + list(row["archives"])
        print(f"{row['name']:40} {', '.join(channels)}")
    return EXIT_OK


def _write_recipe(recipe: Recipe, path: Path) -> int:
    """The recipe as a file the user can edit and name in a spec (recipe = "FILE")."""
    if path.exists():
        raise RefusedError(f"{path} exists", "choose another file name, or remove it first")
    path.write_bytes(recipe.text)
    print(f"wrote {recipe.name} to {path}: name it in the spec as recipe = \"{path}\"")
    return EXIT_OK


def _recipe_summary(recipe: Recipe) -> dict:
    return {"name": recipe.name, "description": recipe.description,
            "platform": recipe.platform, "cudnn": recipe.cudnn, "cuda": recipe.cuda,
            "min_driver": recipe.min_driver, "min_driver_compat": recipe.min_driver_compat,
            "sources": {s.id: {"kind": s.kind, "package": s.package, "version": s.version,
                               "file_name": s.file_name, "sha256": s.sha256, "env": list(s.env)}
                        for s in recipe.sources.values()},
            "components": {c.name: {"files": list(c.files), "requires": list(c.requires),
                                    "description": c.description}
                           for c in recipe.components.values()}}
