"""The command line: parse arguments, run a command, turn errors into one line."""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import signal
import sys
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from bundler import __version__
from bundler.commands import cmd_cache, cmd_doctor, cmd_inspect, cmd_pack, cmd_recipes, cmd_verify
from bundler.errors import EXIT_INTERNAL, EXIT_OK, BundlerError
from bundler.init.command import add_init_parser
from bundler.support.toml_tables import shown


def _source_override(text: str) -> tuple[str, str]:
    sid, sep, path = text.partition("=")
    if not sep or not sid or not path:
        raise argparse.ArgumentTypeError(f"expected ID=PATH, got {text!r}")
    return sid, path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bundler", description="Make GPU applications carry their own cuDNN runtime.")
    parser.add_argument("--version", action="version", version=f"bundler {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    # --debug also after the command (`bundler pack app.spec --debug`); SUPPRESS keeps
    # the subcommand from resetting one given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_init_parser(commands, common, _source_override)   # its own module, as each new one

    p = commands.add_parser("pack", parents=[common],
                            help="bundle the runtime into the app folder",
                            description="Pack an app with its own cuDNN runtime, as the "
                            "spec says; writes dist/<app name>/ and SPEC.lock (and "
                            "with --zip, the bundle as a zip). A change of the spec "
                            "updates the lock and the summary says what changed.")
    p.add_argument("spec", metavar="SPEC", help="the app spec (TOML), e.g. app.spec")
    p.add_argument("--out", metavar="DIR", help="bundle folder (default: dist/<app name> "
                   "beside the spec)")
    p.add_argument("--source", metavar="ID=PATH", action="append", type=_source_override,
                   help="where a recipe source is on this machine (overrides [sources])")
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
    p.add_argument("--json", action="store_true", help="print a JSON summary")
    p.set_defaults(run=cmd_pack)

    c = commands.add_parser("cache", parents=[common], help="show or prune the runtime store",
                            description="The runtime store keeps each runtime file once "
                            "(by sha256) for every bundle on this machine. Without an "
                            "action: its size and the locks that pin its files. prune: "
                            "remove the files no lock on this machine pins.")
    c.add_argument("action", nargs="?", choices=["prune"], metavar="prune",
                   help="remove files no registered lock pins")
    c.add_argument("--dry-run", action="store_true",
                   help="with prune: say what would be removed, remove nothing")
    c.add_argument("--json", action="store_true", help="print a JSON report")
    c.set_defaults(run=cmd_cache)

    v = commands.add_parser("verify", parents=[common],
                            help="re-hash a bundle against its manifest (and lock)",
                            description="Check every bundled file against manifest.json, "
                            "and that the entry script still loads the bootstrap; with "
                            "--lock, each file against the lock too. APPDIR may be a folder "
                            "of bundles (dist): each is checked. Exit 1 if any file is "
                            "missing, changed or unexpected.")
    v.add_argument("appdir", metavar="APPDIR", help="a bundle made by bundler pack "
                   "(e.g. dist/ocr-server), or a folder of bundles (dist)")
    v.add_argument("--lock", metavar="SPEC.lock", help="the lock the bundle was packed with: "
                   "pins each file's sha256 apart from the manifest")
    v.add_argument("--json", action="store_true", help="print a JSON report")
    v.add_argument("--run", action="store_true", dest="run_app",
                   help="instead: start the app (its entry, import-only; or the COMMAND "
                   "after --, e.g. -- python3 main.py) and list every cuDNN/CUDA library "
                   "the process maps; exit 1 on one not from the bundle, one mapped "
                   "twice, or no process seen")
    v.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="with --run: stop the app after this long (default 600)")
    v.set_defaults(run=cmd_verify, app_command=[])   # COMMAND: the words after -- (main)

    i = commands.add_parser("inspect", parents=[common],
                            help="what a DLL, folder, zip or wheel holds and needs",
                            description="Show each DLL's machine, versions, imports "
                            "(bundled/system/driver/missing), run-time loads known to the "
                            "recipes, size and sha256; for a zip or wheel, its members and "
                            "the recipe source it matches.")
    i.add_argument("path", metavar="PATH", help="a DLL, a folder, a zip archive or a wheel")
    i.add_argument("--json", action="store_true", help="print a JSON report")
    i.set_defaults(run=cmd_inspect)

    d = commands.add_parser("doctor", parents=[common],
                            help="what this machine (or a bundle on it) would load",
                            description="Without APPDIR: the cuDNN/CUDA DLLs a bare-name load "
                            "finds, the driver, the installed frameworks. With APPDIR: verify "
                            "the bundle and check it would load here. Exit 1 if problems.")
    d.add_argument("appdir", nargs="?", metavar="APPDIR", help="a bundle made by bundler pack")
    d.add_argument("--lock", metavar="SPEC.lock", help="with APPDIR: check each file against "
                   "the lock too")
    d.add_argument("--json", action="store_true", help="print a JSON report")
    d.set_defaults(run=cmd_doctor)

    r = commands.add_parser("recipes", parents=[common],
                            help="list the recipes and releases bundler knows, or show one",
                            description="Without NAME: every shipped recipe with its cuDNN, "
                            "CUDA and platform, and the release families. With a family "
                            "(cudnn9) or a version prefix (9.1): the releases it has. With "
                            "a name: its sources (and how each is trusted), components (what "
                            "each requires) and driver minimum.")
    r.add_argument("name", nargs="?", metavar="NAME",
                   help="a recipe or release name (cudnn-9.1.0.70-cuda12-win-x64), a family "
                   "(cudnn9), a version prefix (9.1), or a recipe file")
    r.add_argument("--write", metavar="FILE", help="with NAME: write the recipe to FILE, to "
                   "edit (e.g. to pair other CUDA wheels) and name in a spec")
    r.add_argument("--json", action="store_true", help="print the recipe(s) as JSON")
    r.set_defaults(run=cmd_recipes)
    return parser


def _file_error(exc: OSError) -> BundlerError:
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list):
        source, _, why = exc.args[0][0]  # copytree: one (source, target, why) per file
        hint = ("free some space and pack again" if _disk_full(str(why))
                else "close whatever holds it open and pack again")
        return BundlerError(f"{source}: cannot copy it into the bundle: {why}", hint)
    where = exc.filename or "a file bundler needed"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return BundlerError(f"{where}: the disk is full ({exc.strerror})",
                            "free some space and pack again; nothing was changed")
    return BundlerError(f"{where}: {exc.strerror or exc}", "check the path and its permissions")


def _disk_full(why: str) -> bool:
    return any(text in why for text in (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT)))


def _never_fail_to_print() -> None:
    """Any path can be printed whatever the console's encoding (cp1252 on a Windows
    redirect): characters it lacks are escaped, never an exception after the work."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _report(exc: BundlerError, debug: bool) -> int:
    if debug:
        traceback.print_exc()
    print(f"bundler: error: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {exc.hint}", file=sys.stderr)
    return exc.exit_code


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a closed terminal, a stopped service): unwound like Ctrl-C, so
    a staging folder is removed and a swap under way undone before the process ends."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(signum)


@contextmanager
def _terminate_like_ctrl_c() -> Iterator[None]:
    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    try:
        previous = {signum: signal.signal(signum, _raise_terminated) for signum in wanted}
    except ValueError:  # not the main thread: leave the handlers alone
        previous = {}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def main(argv: Sequence[str] | None = None) -> int:
    _never_fail_to_print()
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    # `verify --run APPDIR [--json] -- COMMAND ...`: what follows "--" is the app's command,
    # wherever the options stand (argparse takes none after a positional's words end).
    cut = words.index("--") if "--" in words else len(words)
    args = parser.parse_args(words[:cut])
    if cut < len(words) and getattr(args, "app_command", None) is None:
        parser.error("only `verify --run APPDIR -- COMMAND ...` takes words after --")
    if cut < len(words):
        args.app_command = words[cut + 1:]
    try:
        with _terminate_like_ctrl_c():
            return _run(args)
    except Exception as exc:  # the one guard: a bug is reported, never a traceback
        if args.debug:
            traceback.print_exc()
        print(f"bundler: internal error: {type(exc).__name__}: {shown(str(exc), 300)}",
              file=sys.stderr)
        print(f"hint: this is a bug in bundler {__version__}: please report it to its "
              "maintainers with the command and its output with --debug", file=sys.stderr)
        return EXIT_INTERNAL


def _run(args: argparse.Namespace) -> int:
    try:
        return args.run(args)
    except BundlerError as exc:
        return _report(exc, args.debug)
    except BrokenPipeError:
        # `bundler inspect ... | head`: the reader left; nothing is wrong.
        # As Python's docs advise: point stdout at devnull so the flush at exit is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        # A file the user named cannot be read or written (a folder where a file
        # should be, permissions, a full disk): still one line, not a traceback.
        return _report(_file_error(exc), args.debug)
    except KeyboardInterrupt as exc:
        print("bundler: interrupted; nothing was changed", file=sys.stderr)
        return 128 + exc.signum if isinstance(exc, Terminated) else 130
    except MemoryError:
        return _report(BundlerError("bundler ran out of memory; nothing was changed",
                                    "raise the memory limit (bundler needs about 300 MB "
                                    "whatever the input), or report it if it is higher"),
                       args.debug)
