"""The options several commands share, defined once, and what reading them gives.

`--debug` comes from `shared` (the parent parser every command gets), `--json`, `--lock`,
`APPDIR` and `--source` from the helpers here; each command passes its own help text
where the words differ (a summary or a report; what APPDIR may be).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bundler.diagnose.verify import bundles_in
from bundler.errors import BundlerError, LockError
from bundler.formats.lockfile import Lock, read_lock
from bundler.formats.manifest import FoundManifest
from bundler.formats.swap_journal import journaled_targets, recover_beside
from bundler.support.deflate import FAST, Compressor, zip_compressor

DEBUG_HELP = "show tracebacks on errors"


def shared_parser() -> argparse.ArgumentParser:
    """The parent of every command's parser: --debug also after the command (`bundler
    pack app.spec --debug`); SUPPRESS keeps the subcommand from resetting one given
    before it."""
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=DEBUG_HELP)
    return shared


def add_json(parser: argparse.ArgumentParser, help: str = "print a JSON report") -> None:
    parser.add_argument("--json", action="store_true", help=help)


def add_lock(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--lock", metavar="SPEC.lock", help=help)


def add_appdir(parser: argparse.ArgumentParser, help: str, optional: bool = False) -> None:
    if optional:
        parser.add_argument("appdir", nargs="?", metavar="APPDIR", help=help)
    else:
        parser.add_argument("appdir", metavar="APPDIR", help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress: neither bars on a terminal nor the lines long "
                        "steps print every few seconds elsewhere (CI logs); warnings and "
                        "errors still show")


def _zip_level(text: str) -> Compressor:
    try:
        return zip_compressor(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_zip_level(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--zip-level", metavar="LEVEL", type=_zip_level,
                        default=zip_compressor(FAST),
                        help=f"how hard --zip compresses: {FAST} (the default: ISA-L, "
                        "about 3%% larger than zip -6 at many times its speed; zlib's "
                        "level 1 where ISA-L is not installed) or 1-9, zlib's levels as "
                        "zip -1 to -9 take them (6: zip's default; 9: smallest, slowest)")


def source_override(text: str) -> tuple[str, str]:
    sid, sep, path = text.partition("=")
    if not sep or not sid or not path:
        raise argparse.ArgumentTypeError(f"expected ID=PATH, got {text!r}")
    return sid, path


def add_source(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--source", metavar="ID=PATH", action="append", type=source_override,
                        help=help)


def lock_arg(args: argparse.Namespace) -> Lock | None:
    """The lock --lock names, read; None without --lock."""
    if not args.lock:
        return None
    lock = read_lock(Path(args.lock))
    if lock is None:
        raise LockError(f"{args.lock}: no such lock file", "give the SPEC.lock beside the spec")
    return lock


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def found_bundles(folder: Path, lock: Lock | None) -> list[FoundManifest]:
    """The bundle APPDIR is, or each bundle directly inside it (`verify dist`, `doctor
    dist`)."""
    # A pack killed mid-swap: the bundle (or one in the folder) may be aside.
    for target in [folder.resolve(), *journaled_targets(folder.resolve())]:
        recover_beside(target, say)
    found = bundles_in(folder)
    if lock is not None and len(found) > 1:
        raise BundlerError(f"{folder}: holds {len(found)} bundles, and one lock pins one",
                           "give the bundle folder itself with --lock")
    return found


def top(found: FoundManifest, folder: Path) -> Path:
    """A bundle's own folder (a PyInstaller bundle's, above _internal), spelled from
    `folder` as the user gave it."""
    own = found.root.parent if found.root.name == "_internal" else found.root
    return folder / own.relative_to(folder.resolve())
