"""What every loader of the bootstrap uses: where the app and its runtime folder are,
the manifest's reader, and the bootstrap's error. Standard library only: `bundler pack`
puts it into every bootstrap it ships (pack/emit.py), with RUNTIME_DIR and PLATFORM
filled in.
"""

import json
import os
import sys

RUNTIME_DIR = "cudnn"  # the runtime folder inside the app; set by bundler pack
PLATFORM = ""  # the platform the bundle is for ("Windows x64"); set by bundler pack
MANIFEST_FORMAT = 1  # the newest manifest format this bootstrap reads

_REPACK = "restore it, or re-run `bundler pack` to rebuild the app"


class BundledRuntimeError(ImportError):
    """The bundled runtime cannot be loaded; the message names the file and the fix."""


def app_folder():
    if getattr(sys, "frozen", False) and hasattr(sys, "_MEIPASS"):
        return sys._MEIPASS
    return os.path.dirname(os.path.abspath(__file__))


def runtime_folder():
    return os.path.join(app_folder(), *RUNTIME_DIR.split("/"))


def read_manifest(path):
    """The manifest's JSON (docs/formats.md), checked for what start-up needs only."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested 1000s deep
        raise BundledRuntimeError(
            f"bundled runtime manifest {path} cannot be read ({exc}); {_REPACK}") from None
    if not isinstance(data, dict) or not isinstance(data.get("load_order"), list):
        raise BundledRuntimeError(f"bundled runtime manifest {path} is damaged; {_REPACK}")
    version = data.get("format")
    if type(version) is not int or not 1 <= version <= MANIFEST_FORMAT:
        raise BundledRuntimeError(
            f"bundled runtime manifest {path} has format {version!r}; this "
            f"bootstrap reads format {MANIFEST_FORMAT}: {_REPACK}")
    # The shapes start-up and report() rely on: valid JSON of another shape would
    # otherwise stop the app with an AttributeError deep inside the bootstrap.
    for key, shape, item, said in (("load_order", list, str, "a list of strings"),
                                   ("versions", dict, str, "an object of strings"),
                                   ("files", list, dict, "a list of objects"),
                                   ("recipe", dict, str, "an object of strings")):
        value = data.get(key, shape())
        items = value.values() if isinstance(value, dict) else value
        if not isinstance(value, shape) or not all(isinstance(i, item) for i in items):
            raise BundledRuntimeError(f"bundled runtime manifest {path} is damaged: "
                                      f"'{key}' must be {said}; {_REPACK}")
    if not all(isinstance(f.get("path"), str) for f in data.get("files", [])):
        raise BundledRuntimeError(f"bundled runtime manifest {path} is damaged: each of "
                                  f"'files' must have a 'path' string; {_REPACK}")
    return data


def another_copy(name, existing, path):
    """The refusal when a library of a bundled file's name is loaded from elsewhere."""
    return BundledRuntimeError(
        f"another {name} is already loaded from {existing}; this app needs its bundled "
        f"{path}. Something loaded a framework before the bootstrap ran: keep the "
        "bootstrap lines first in the entry script (folder apps) and bundler's runtime "
        "hook first (PyInstaller apps)")
