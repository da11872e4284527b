"""bundler: make GPU applications carry their own cuDNN runtime."""

from bundler.version import __version__ as __version__


def launch() -> int:
    """The `bundler` command: its console script and `python -m bundler` both start here.

    The rest of bundler is imported inside the guard, not at the top of a module: a Ctrl-C
    while it loads (a second or more on a cold disk or a slow share) then exits 130 with
    one line, as a Ctrl-C during a command does, instead of a traceback from an import.
    """
    import sys

    try:
        from bundler.cli import main

        return main()
    except KeyboardInterrupt:
        print("bundler: interrupted; nothing was changed", file=sys.stderr)
        return 130
