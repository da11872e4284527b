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

from bundler.commands import COMMANDS
from bundler.commands.options import DEBUG_HELP, shared_parser
from bundler.errors import EXIT_INTERNAL, EXIT_OK, BundlerError
from bundler.support.toml_tables import shown
from bundler.version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bundler", description="Make GPU applications carry their own cuDNN runtime.")
    parser.add_argument("--version", action="version", version=f"bundler {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    shared = shared_parser()
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:   # one module each: bundler/commands/cmd_<name>.py
        command.add_parser(commands, shared).set_defaults(run=command.run)
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
