"""`bundler cache [prune]`: every cache bundler keeps (the runtime store, the wheel and
embedded-Python downloads, reused zip streams), what locks pin, and their pruning
(pack/store/upkeep.py, pack/store/caches.py)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict

from bundler.commands.options import add_json
from bundler.commands.output import human_size as _size
from bundler.errors import EXIT_OK, BundlerError
from bundler.pack import scan_memo
from bundler.pack.builders import installed_again
from bundler.pack.store.caches import (
    CACHE_MAX_VARIABLE,
    DEFAULT_CACHE_MAX,
    STREAMS,
    CacheReport,
    examine_caches,
    prune_caches,
)
from bundler.pack.store.pins import KEEP_NONE, KEEP_VARIABLE, keep_wheels
from bundler.pack.store.store import DISABLED, STORE_VARIABLE, open_store
from bundler.pack.store.upkeep import MAX_VARIABLE, StoreReport, examine, prune, size_cap


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    c = commands.add_parser("cache", parents=[shared],
                            help="show or prune the runtime store and bundler's other caches",
                            description="The runtime store keeps each runtime file once "
                            "(by sha256) for every bundle on this machine; the wheel cache "
                            "the wheels pip fetched, the embedded Python downloads the "
                            "embeddable CPythons, zip-streams the streams --zip compressed. "
                            "Without an action: each one's folder, files and size, and what "
                            "keeps files there. prune: remove the store's files no lock on "
                            "this machine pins, the wheels and downloads no lock names "
                            f"(beyond ${CACHE_MAX_VARIABLE}; with ${KEEP_VARIABLE}="
                            f"{KEEP_NONE} also the recipe wheels the store holds whole), "
                            f"and the zip streams beyond ${MAX_VARIABLE}.")
    c.add_argument("action", nargs="?", choices=["prune"], metavar="prune",
                   help="remove files no registered lock pins or names")
    c.add_argument("--dry-run", action="store_true",
                   help="with prune: say what would be removed, remove nothing")
    add_json(c)
    return c


def run(args: argparse.Namespace) -> int:
    store = open_store(os.environ)
    if store is None:
        raise BundlerError(f"the runtime store is off ({STORE_VARIABLE}={DISABLED})",
                           f"unset {STORE_VARIABLE} to use the store")
    pruning = args.action == "prune" and not args.dry_run
    report = prune(store) if pruning else examine(store)
    if pruning:   # the records of what embedded-python bundles hold, and of their scans
        scan_memo.prune(store.root, installed_again.prune(store.root, store.key))
    caches = prune_caches(store, os.environ) if pruning else examine_caches(store, os.environ)
    cap = size_cap(os.environ)
    if args.json:
        print(json.dumps(asdict(report) | {"unpinned_size": report.unpinned_size,
                                           "size_cap": cap,
                                           "caches": [_cache_data(c) for c in caches]},
                         indent=2, default=str))
    else:
        lines = _store_lines(report, args.action == "prune", cap)
        for cache in caches:
            lines += _cache_lines(cache, args.action == "prune")
        print("\n".join(lines))
    return EXIT_OK


def _cache_data(cache: CacheReport) -> dict:
    return asdict(cache) | {"removable_size": cache.removable_size}


def _cache_lines(cache: CacheReport, pruning: bool) -> list[str]:
    kept = (f"; {cache.kept_for_locks} kept for the locks on this machine"
            if cache.name != STREAMS else "")
    lines = [f"{cache.name} {cache.root}: {cache.files} file(s), {_size(cache.size)}{kept}",
             f"  keeps: {cache.keeps}"]
    if cache.in_store:   # the runtime twice on disk: what $BUNDLER_KEEP_WHEELS=none frees
        lines.append(f"  also held unpacked in the runtime store: {cache.in_store} recipe "
                     f"wheel(s), {_size(cache.in_store_size)} (${KEEP_VARIABLE}={KEEP_NONE} "
                     "keeps them there only)")
    if cache.removable or pruning:
        verb = ("removed" if cache.removed else "would remove") if pruning else \
            "prune removes"
        why = (f"beyond ${MAX_VARIABLE}" if cache.name == STREAMS else
               ("" if keep_wheels(os.environ) else
                f"held by the runtime store (${KEEP_VARIABLE}={KEEP_NONE}) or ")
               + f"named by no lock (${CACHE_MAX_VARIABLE} keeps up to "
               f"{_size(size_cap(os.environ, CACHE_MAX_VARIABLE, DEFAULT_CACHE_MAX))})")
        lines.append(f"  {verb}: {len(cache.removable)} item(s), "
                     f"{_size(cache.removable_size)}, {why}")
    return lines


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

