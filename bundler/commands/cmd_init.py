"""`bundler init APPDIR`: its options; the command itself is bundler/init/ (command.py)."""

from __future__ import annotations

import argparse

from bundler.commands.options import add_appdir, add_source
from bundler.init.command import BUILDERS, SPEC_NAME, init, platform_names


def add_parser(commands: argparse._SubParsersAction,
               shared: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p = commands.add_parser(
        "init", parents=[shared], help="write a first app.spec for an app folder",
        description="Scan APPDIR as pack does (the libraries its binaries import, the "
        "frameworks installed in it) and write app.spec beside it: the platform (from its "
        "GPU libraries' headers, else --platform or its requirements), the folder, the "
        "entry script (main.py, __main__.py, app.py or the only .py), the newest cuDNN "
        "release of that platform that ships every CUDA/cuDNN library the app needs, the "
        "components that supply them, and the inputs found on this machine, each line "
        "with a comment saying why. Never overwrites a file.")
    add_appdir(p, "the app folder to ship")
    p.add_argument("--out", metavar="SPEC", help=f"where to write the spec (default: "
                   f"{SPEC_NAME} in APPDIR's parent folder)")
    add_source(p, "where a recipe source is on this machine (written into [sources])")
    p.add_argument("--builder", choices=BUILDERS, help="how the app is made: folder (ship "
                   "the folder as it is) or embedded-python (ship it with its own CPython "
                   "and its requirements.txt installed); default: embedded-python where the "
                   "app has a requirements.txt and no site-packages, else folder")
    p.add_argument("--platform", metavar="|".join(platform_names()), help="the platform the "
                   "spec is for, where the app's binaries do not tell (an app of scripts and a "
                   "requirements file) or hold two platforms' (default: the platform of the "
                   "app's GPU libraries, else of its requirements or scripts, else win-x64)")
    p.add_argument("--find-links", action="append", default=[], metavar="DIR",
                   help="a folder of framework wheels: the GPU frameworks the requirements "
                   "pin are read from their wheels (here, the requirements' own --find-links "
                   "folders, the wheel cache, else fetched with pip into it)")
    p.add_argument("--offline", action="store_true", help="fetch no framework wheel: "
                   "those not found are judged by bundler's framework table alone")
    return p


def run(args: argparse.Namespace) -> int:
    return init(args)
