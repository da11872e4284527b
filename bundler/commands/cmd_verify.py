"""`bundler verify APPDIR`: re-hash a bundle against its manifest and lock
(diagnose/verify.py), or with --run see what the started app maps
(diagnose/process_check.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bundler.commands.options import add_appdir, add_json, add_lock, found_bundles, lock_arg
from bundler.diagnose.process_check import check_process, print_check
from bundler.diagnose.verify import (
    PREDATES_OPTION,
    VerifyReport,
    require_bundle_record,
    verify,
)
from bundler.errors import EXIT_OK, EXIT_PROBLEMS, BundlerError
from bundler.formats.lockfile import Lock


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    v = commands.add_parser("verify", parents=[shared],
                            help="re-hash a bundle against its manifest (and lock)",
                            description="Check every bundled file against manifest.json, "
                            "and that the entry script still loads the bootstrap; with "
                            "--lock, each file against the lock too. APPDIR may be a folder "
                            "of bundles (dist): each is checked. Exit 1 if any file is "
                            "missing, changed or unexpected.")
    add_appdir(v, "a bundle made by bundler pack (e.g. dist/ocr-server), or a folder of "
               "bundles (dist)")
    add_lock(v, "the lock the bundle was packed with: pins each file's sha256 apart from "
             "the manifest")
    add_lock_predates(v)
    add_json(v)
    v.add_argument("--run", action="store_true", dest="run_app",
                   help="instead: start the app (its entry, import-only; or the COMMAND "
                   "after --, e.g. -- python3 main.py, or -- wine python.exe main.py) "
                   "traced (ptrace; the debug API on Windows and under Wine) and list "
                   "every cuDNN/CUDA library its processes map, by SONAME, content and "
                   "exports; exit 1 on one not from the bundle, one mapped twice, a "
                   "timeout, or no process seen")
    v.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="with --run: kill the app and every process it started after "
                   "this long (default 600)")
    v.set_defaults(app_command=[])   # COMMAND: the words after -- (cli.main)
    return v


def add_lock_predates(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(PREDATES_OPTION, action="store_true", dest="lock_predates",
                        help="with --lock: the lock was written before bundler pinned the "
                        "manifest and entry script (it has no bundle record): check the "
                        "runtime files against it alone, instead of refusing it")


def locked(args: argparse.Namespace) -> Lock | None:
    """The --lock lock; refused without its bundle record unless the user says it
    predates it (diagnose/verify.py, require_bundle_record)."""
    lock = lock_arg(args)
    require_bundle_record(lock, args.lock, args.lock_predates)
    return lock


def run(args: argparse.Namespace) -> int:
    if args.run_app or args.app_command:
        return _verify_run(args)
    lock = locked(args)
    reports = []
    for found in found_bundles(Path(args.appdir), lock):
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
    (found, *more) = found_bundles(Path(args.appdir), None)
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
                    else f" (which pins the runtime files only, {PREDATES_OPTION}: pack "
                         "again to pin the manifest and entry script too)")
    if report.ok:
        signed = f", {report.signed} signatures valid" if report.signed else ""
        print(f"ok: {report.checked} files match {report.manifest}{signed}{against}")
    else:
        print(f"{report.app}: the bundle differs from its manifest{against}; hint: "
              f"{report.hint}", file=sys.stderr)

