"""Builders: make the app in the staging folder, before the runtime goes into it.

A builder gets the spec, the recipe, the staging folder, the final output folder and
the pack's BuildOptions (each uses what it needs) and returns a BuiltApp: the folder the
runtime goes below (the app's top, or sys._MEIPASS's folder of a frozen app), the
bootstrap's manifest
entry, and what of the app folder it left out (named in the pack summary).
This table is the one list of builders: a spec's app.builder must name one of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.pack.builders.base import BuildOptions, BuiltApp
from bundler.pack.builders.embedded_python import build_embedded_python_app
from bundler.pack.builders.folder import build_folder_app
from bundler.pack.builders.pyinstaller import build_pyinstaller_app

if TYPE_CHECKING:
    from bundler.pack.spec import Spec
    from bundler.recipe.load import Recipe

Builder = Callable[["Spec", "Recipe", Path, Path, BuildOptions], BuiltApp]
BUILDERS: dict[str, Builder] = {"folder": build_folder_app,
                                "pyinstaller": build_pyinstaller_app,
                                "embedded-python": build_embedded_python_app}
