"""bundler's own files, which never ship when the app folder holds them.

An app folder of "." (or one the spec lives in) can hold the spec and its lock, the
inputs the spec names (a cuDNN zip, a CUDA toolkit folder), the runtime store
($BUNDLER_STORE=app/store), the download cache ($BUNDLER_CACHE), the store's key file
and the PyInstaller builder's work folder (build/bundler-<name>). None of it is the
app's: the copy and the app scan leave each out by its resolved path, and the pack
summary names it (builders/folder.py's outputs_in). An input folder that holds Python
distributions (*.dist-info: a site-packages NVIDIA's wheels were installed into) is the
app's environment too, so it stays.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.pack.sources.fetch import cache_root
from bundler.pack.store.seal import KEY_FILE
from bundler.pack.store.store import store_root
from bundler.support.user_dirs import user_config_dir

if TYPE_CHECKING:  # the spec module imports the builders table, which imports this
    from bundler.pack.spec_model import Spec


def own_data(spec: Spec, inputs: Mapping[str, Path], environ: Mapping[str, str]
             ) -> dict[Path, str]:
    """{resolved path: why it is bundler's own} for everything bundler itself reads or
    writes that could lie inside the app folder."""
    found = {spec.path: "the spec bundler packs from",
             spec.lock_path: "the spec's lock (bundler's record of the inputs)",
             spec.folder / "build" / f"bundler-{spec.name}":
                 "bundler's PyInstaller work folder",
             cache_root(environ): "bundler's download cache",
             user_config_dir(environ) / KEY_FILE: "the runtime store's key"}
    store = store_root(environ)
    if store is not None:
        found[store] = "bundler's runtime store"
    for sid, path in inputs.items():
        if path.is_file() or (path.is_dir() and not any(path.glob("*.dist-info"))):
            found[path] = (f"the input '{sid}' the spec names (its files ship in the "
                           "runtime folder)")
    return {_resolved(path): why for path, why in found.items()}


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()
