"""`bundler inspect PATH`: what a DLL, folder, zip or wheel holds and needs
(diagnose/inspection.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bundler.commands.options import add_json
from bundler.commands.output import inspect_view, print_view
from bundler.diagnose.inspection import inspect_path, render
from bundler.errors import EXIT_OK


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    i = commands.add_parser("inspect", parents=[shared],
                            help="what a DLL or .so, folder, zip or wheel holds and needs",
                            description="Show each library's machine, versions, imports "
                            "(bundled/system/driver/missing, as its own platform resolves "
                            "them: a DLL's by Windows's rules, a .so's by Linux's), run-time "
                            "loads known to the recipes, what a bundle for it needs from each "
                            "recipe of its platform, size and sha256; for a zip or wheel, its "
                            "members and the recipe source it matches.")
    i.add_argument("path", metavar="PATH", help="a DLL or .so library, a folder, a zip "
                   "archive or a wheel")
    add_json(i)
    return i


def run(args: argparse.Namespace) -> int:
    report = inspect_path(Path(args.path))
    print_view(inspect_view(report), render(report), args.json)
    return EXIT_OK
