"""`bundler doctor [APPDIR]`: what this machine, or a bundle on it, would load
(diagnose/doctor/)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from bundler.commands.cmd_verify import add_lock_predates, locked
from bundler.commands.options import add_appdir, add_json, add_lock, found_bundles, top
from bundler.commands.output import print_view
from bundler.diagnose.doctor import (
    bundle_view,
    examine_bundle,
    examine_machine,
    machine_view,
    render_bundle,
    render_machine,
)
from bundler.diagnose.doctor.bundle_checks import bundle_platform
from bundler.errors import EXIT_OK, EXIT_PROBLEMS
from bundler.targets.registry import this_machine


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    d = commands.add_parser("doctor", parents=[shared],
                            help="what this machine (or a bundle on it) would load",
                            description="Without APPDIR: the cuDNN/CUDA libraries a bare-name "
                            "load finds, the driver, the installed frameworks. With APPDIR: verify "
                            "the bundle and check it would load here. Exit 1 if problems.")
    add_appdir(d, "a bundle made by bundler pack", optional=True)
    add_lock(d, "with APPDIR: check each file against the lock too")
    add_lock_predates(d)
    add_json(d)
    return d


def run(args: argparse.Namespace) -> int:
    if args.appdir:   # each bundle of a folder of bundles, as verify checks them
        folder, lock = Path(args.appdir), locked(args)
        lock_path = Path(args.lock) if args.lock else None
        bundles = [examine_bundle(top(found, folder), lock=lock, lock_path=lock_path)
                   for found in found_bundles(folder, lock)]
        if args.json:   # one object for one bundle, a list for a folder of them
            data = [bundle_view(bundle, bundle_platform(bundle.platform)) for bundle in bundles]
            print(json.dumps(data[0] if len(data) == 1 else data, indent=2))
        else:
            print("\n\n".join("\n".join(render_bundle(bundle)) for bundle in bundles))
        return EXIT_OK if all(b.ok for b in bundles) else EXIT_PROBLEMS
    here = this_machine()
    machine = examine_machine(here, os.environ)
    print_view(machine_view(machine, here), render_machine(machine, here), args.json)
    return EXIT_OK if machine.ok else EXIT_PROBLEMS
