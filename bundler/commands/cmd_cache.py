"""`bundler cache [prune]`: the runtime store's size and pins, and its pruning
(pack/store/upkeep.py)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict

from bundler.commands.options import add_json
from bundler.commands.output import human_size as _size
from bundler.errors import EXIT_OK, BundlerError
from bundler.pack.store.store import DISABLED, STORE_VARIABLE, open_store
from bundler.pack.store.upkeep import MAX_VARIABLE, StoreReport, examine, prune, size_cap


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    c = commands.add_parser("cache", parents=[shared], help="show or prune the runtime store",
                            description="The runtime store keeps each runtime file once "
                            "(by sha256) for every bundle on this machine. Without an "
                            "action: its size and the locks that pin its files. prune: "
                            "remove the files no lock on this machine pins.")
    c.add_argument("action", nargs="?", choices=["prune"], metavar="prune",
                   help="remove files no registered lock pins")
    c.add_argument("--dry-run", action="store_true",
                   help="with prune: say what would be removed, remove nothing")
    add_json(c)
    return c


def run(args: argparse.Namespace) -> int:
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

