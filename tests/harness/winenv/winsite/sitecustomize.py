"""Run by the harness's *Windows* CPython at start-up (its folder is listed in
python311._pth); never imported on Linux.

An embeddable CPython with a ._pth file runs isolated: the script's folder is
not put on sys.path. Users run apps with a regular python.exe, which does put
it first, and a folder app's entry script imports the bootstrap that sits
beside it. Restore the regular behaviour so tests see what users see.
"""

import os
import sys


def _script_dir() -> str:
    # What a regular interpreter puts first: "" for -c and the REPL, the
    # current folder for -m, else the script's own folder.
    first = sys.argv[0] if sys.argv else ""
    if first in ("", "-c"):
        return ""
    if first == "-m":
        return os.getcwd()
    return os.path.dirname(os.path.abspath(first))


if not getattr(sys, "frozen", False):
    sys.path.insert(0, _script_dir())
