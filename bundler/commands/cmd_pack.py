"""`bundler pack SPEC`: the packer (bundler/pack/), and its summary as text or JSON."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.commands.options import add_json, add_quiet, add_source, add_zip_level, say
from bundler.commands.output import human_size as _size
from bundler.errors import EXIT_OK, BundlerError
from bundler.formats.manifest import SIGNATURE_ALLOWED_UNSIGNED, SIGNATURE_VERIFIED, FileEntry
from bundler.pack import up_to_date
from bundler.pack.pipeline import PackResult, pack
from bundler.pack.sources import given_path
from bundler.pack.spec import load_spec
from bundler.pack.spec_model import Spec
from bundler.pack.store.seal import store_key
from bundler.pack.store.store import Store, open_store
from bundler.support.progress import silenced


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = commands.add_parser("pack", parents=[shared],
                            help="bundle the runtime into the app folder",
                            description="Pack an app with its own cuDNN runtime, as the "
                            "spec says; writes dist/<app name>/ and SPEC.lock (and "
                            "with --zip, the bundle as a zip). A change of the spec "
                            "updates the lock and the summary says what changed.")
    p.add_argument("spec", metavar="SPEC", help="the app spec (TOML), e.g. app.spec")
    p.add_argument("--out", metavar="DIR", help="bundle folder (default: dist/<app name> "
                   "beside the spec)")
    add_source(p, "where a recipe source is on this machine (overrides [sources])")
    locking = p.add_mutually_exclusive_group()
    locking.add_argument("--update-lock", action="store_true",
                         help="accept inputs that differ from the lock and rewrite it (a "
                         "change of the spec itself updates the lock without it)")
    locking.add_argument("--locked", action="store_true",
                         help="refuse any change to the lock: a spec change, a changed "
                         "input, or no lock yet (for CI)")
    p.add_argument("--offline", action="store_true",
                   help="never fetch: fail, naming each wheel that is neither given nor "
                   "in the wheel cache")
    p.add_argument("--copy", action="store_true",
                   help="give the bundle its own copies of the runtime files instead of "
                   "hard links into the runtime store (e.g. for a bundle you archive "
                   "yourself; --zip reads the files' contents and needs no copies)")
    p.add_argument("--zip", metavar="PATH", help="also write the finished bundle as a "
                   "deterministic zip (its top folder is the bundle's; the same inputs give "
                   "the same bytes)")
    p.add_argument("--recheck", action="store_true",
                   help="pack in full even when nothing changed since the last pack (which "
                   "otherwise answers 'up to date' from the files' sizes and times, "
                   "reading nothing)")
    add_zip_level(p)
    add_quiet(p)
    add_json(p, "print a JSON summary")
    return p


def run(args: argparse.Namespace) -> int:
    spec = load_spec(Path(args.spec))
    freshness = _freshness(spec, args)
    why = ("--recheck packs in full" if args.recheck else
           "no runtime store to keep a record of packs in (BUNDLER_STORE is off or "
           "cannot be used)" if freshness is None else "")
    if freshness is not None and not args.recheck:
        fresh = up_to_date.check(freshness.store.root, freshness.key, freshness.name)
        if isinstance(fresh, up_to_date.Fresh):
            _mark_used(freshness.store, fresh)
            _print_fresh(fresh, args.json)
            return EXIT_OK
        why = fresh.reason
    started = up_to_date.clock(freshness.store.root) if freshness is not None else None
    with silenced(args.json or args.quiet):   # no progress under --json, --quiet
        result = pack(spec, out=Path(args.out) if args.out else None,
                      overrides=dict(args.source or []), update_lock=args.update_lock,
                      offline=args.offline, copy=args.copy, locked=args.locked,
                      zip_to=Path(args.zip) if args.zip else None,
                      zip_level=args.zip_level)
    # One line on stderr, once the pack stands (a failed one says its error first): why
    # this run packed in full rather than answering "up to date" (a CI log says why it
    # took long).
    say(f"bundler: packing in full: {why}")
    for warning in result.warnings:   # on stderr, so --json output stays one document
        say(f"bundler: warning: {warning}")
    summary = _pack_summary(result)
    if args.json:
        print(json.dumps({**summary, "up_to_date": False, "packed_in_full_because": why},
                         indent=2))
    else:
        _print_pack(result)
    if freshness is not None and result.made_from is not None:
        up_to_date.remember(freshness.store.root, freshness.key, freshness.name,
                            result.made_from, summary, started)
    return EXIT_OK


@dataclass(frozen=True)
class _Freshness:
    """Where this pack's up-to-date record lives: the store, its sealing key and the
    record's name (up_to_date.pack_key)."""

    store: Store
    key: bytes
    name: up_to_date.PackKey


def _freshness(spec: Spec, args: argparse.Namespace) -> _Freshness | None:
    """The up-to-date record's place; None without a usable store (the pack itself
    then says why)."""
    try:
        store = open_store(os.environ)
        if store is None:
            return None
        key = store_key(os.environ)
    except BundlerError:
        return None
    # Absolute, links not resolved: a --zip or --out that became a link is another pack
    # (which the full pack refuses), not the one its target was made by.
    out = Path(args.out) if args.out else spec.default_out()
    options = {"out": os.path.abspath(out), "copy": args.copy,
               "zip": os.path.abspath(args.zip) if args.zip else "",
               "zip_level": args.zip_level.settings,
               "sources": sorted((sid, os.path.abspath(path))
                                 for sid, path in args.source or []),
               # what each input's path means here and now: a `~` (HOME), a link's target
               "inputs": _inputs_here(spec, args)}
    return _Freshness(store, key, up_to_date.pack_key(spec.path, options, os.environ))


def _inputs_here(spec: Spec, args: argparse.Namespace) -> list[tuple[str, str]]:
    """Each given input's path as the pack would open it: `~` expanded with this HOME,
    links resolved (another HOME, or a link pointed elsewhere, is another pack)."""
    given = {sid: (path, "") for sid, path in spec.sources.items()}
    given |= {sid: (path, "") for sid, path in args.source or []}
    found = []
    for sid in sorted(given):
        try:
            found.append((sid, str(given_path(sid, given, spec.folder))))
        except (OSError, RuntimeError):   # a link loop: the full pack says what is wrong
            found.append((sid, f"unresolved {given[sid][0]}"))
    return found


def _mark_used(store: Store, fresh: up_to_date.Fresh) -> None:
    """The bundle's runtime files count as used now, as a full pack's do: the store's
    size cap keeps the objects of a bundle re-packed only "up to date" longest too (the
    markers are files of their own, so the bundle's stamps do not change)."""
    try:
        for entry in fresh.summary["files"]:
            if store.object_path(entry["sha256"]).is_file():
                store.mark_used(entry["sha256"])
    except (OSError, KeyError, TypeError):
        pass   # the store is a cache: its upkeep never fails a pack


def _print_fresh(fresh: up_to_date.Fresh, as_json: bool) -> None:
    """The last pack's summary, said as what it is: that pack's, found still true by
    the files' stamps, not by reading them."""
    summary = fresh.summary
    if as_json:   # what describes the bundle is that pack's; what says work is this run's
        members = summary.get("zip_members")
        print(json.dumps({
            **summary, "up_to_date": True, "packed_in_full_because": None,
            "packed_at": fresh.packed_at,
            "runtime_origin": {"files": {"previous": len(summary["files"])},
                               "linked": 0, "copied": 0},
            "zip_members": {**members, "reused": 0, "compressed": 0, "hashed": 0,
                            "unread": 0, "unchanged": True}
            if members else None, "lock_changes": [], "warnings": []}, indent=2))
        return
    print(f"up to date: {summary['out']}: nothing changed since the pack of "
          f"{fresh.packed_at} (the spec, its lock, every input, the app, the bundle"
          f"{' and its zip' if summary.get('zip') else ''} have the sizes, times and file "
          "ids that pack recorded; their bytes were not read again: `bundler verify` "
          "reads them, `bundler pack --recheck` packs in full)")
    print(f"  runtime: {summary['recipe']}, {len(summary['files'])} runtime files, "
          f"{_size(summary['total_size'])}")
    for sid, trust in summary["inputs_trusted"].items():   # as that pack said it
        print(f"  input {sid}: {trust}")
    if summary["allowed_unsigned"]:
        _print_not_signed([Path(path).name for path in summary["allowed_unsigned"]])
    print(f"  lock: {summary['lock']}")
    if summary.get("zip"):
        print(f"  zip: {summary['zip']}")
    _print_run(Path(summary["out"]))


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
        if counts.unchanged:
            print(f"  zip members: {counts.members}; the zip already held them, every byte "
                  "checked: left as it was")
        else:
            unread = f" ({counts.unread} copied unread, proven by their stamps)" \
                if counts.unread else ""
            print(f"  zip members: {counts.members}; {counts.reused} reused from earlier "
                  f"zips{unread}, {counts.compressed} compressed now")
    for item in result.skipped[:_SKIPPED_SHOWN]:   # what of the app the bundle lacks
        print(f"  not copied from the app folder: {item.path} ({item.why})")
    if len(result.skipped) > _SKIPPED_SHOWN:
        print(f"  not copied from the app folder: {len(result.skipped) - _SKIPPED_SHOWN} "
              "more (--json lists them all)")
    allowed = [e.name for e in manifest.files if e.signature == SIGNATURE_ALLOWED_UNSIGNED]
    if allowed:
        _print_not_signed(allowed)
    _print_run(result.out)


def _print_run(out: Path) -> None:
    """What to run: a PyInstaller build's exe, an embedded-python bundle's launcher."""
    for exe in sorted([*out.glob("*.exe"), *out.glob("*.cmd")]):
        print(f"  run: {exe}")




def _print_not_signed(names: list[str]) -> None:
    print(f"  NOT SIGNED: {len(names)} files lack the signature the recipe asks for and "
          "were accepted by the spec's allow_unsigned: this runtime is a stand-in or a "
          f"rebuild, not the original ({', '.join(names)})")


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

