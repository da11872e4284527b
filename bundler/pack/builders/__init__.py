"""Builders: make the app in the staging folder, before the runtime goes into it.

Each builder module exports one `Builder` record (base.py): its name, the [app] keys it
takes, its check of them and its build function. A build gets the spec, the recipe, the
staging folder, the final output folder and the pack's BuildOptions (each uses what it
needs) and returns a BuiltApp: the folder the runtime goes below (the app's top, or
sys._MEIPASS's folder of a frozen app), the bootstrap's manifest entry, and what of the
app folder it left out (named in the pack summary).
This tuple is the one list of builders: a spec's app.builder must name one of them.
"""

from __future__ import annotations

from bundler.pack.builders import embedded_python, folder, pyinstaller
from bundler.pack.builders.base import Builder

BUILDERS: tuple[Builder, ...] = (folder.BUILDER, pyinstaller.BUILDER, embedded_python.BUILDER)


def builder_named(name: str) -> Builder:
    """The builder a spec's app.builder names (the spec reader refused any other)."""
    return next(builder for builder in BUILDERS if builder.name == name)
