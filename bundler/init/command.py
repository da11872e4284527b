"""`bundler init APPDIR`: write a first spec for an app folder (like `cargo init`);
its options are parsed by commands/cmd_init.py.

It scans the app as `bundler pack` does (pack/app_scan.py), picks the recipe and
components its DLLs and frameworks need (init/choice.py), finds the inputs this machine
has (init/inputs.py) and writes `app.spec` beside the app folder (init/writer.py), never
over an existing file. The spec is read back with pack's own reader before init ends.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from bundler.errors import EXIT_OK, RefusedError, SpecError
from bundler.init.choice import choose, named_in_scripts
from bundler.init.inputs import FoundInput, find_inputs, nearby, release_inputs
from bundler.init.requirements import (
    REQUIREMENTS,
    find_requirements,
    has_site_packages,
    pinned_frameworks,
)
from bundler.init.writer import Build, EntryGuess, app_name, guess_entry, render
from bundler.pack.app_scan import scan_app
from bundler.pack.spec import load_spec
from bundler.support.toml_tables import tomllib
from bundler.targets.registry import platform_for

SPEC_NAME = "app.spec"
BUILDERS = ("folder", "embedded-python")
# The platform of the recipes init chooses among (docs/init.md, "Limits": the recipe is a
# Windows one): its scan reads the app's binaries as that platform's, as pack's scan for
# that recipe will, and its release catalogue rows are that platform's.
SPEC_PLATFORM = "win-amd64"


def init(args: argparse.Namespace) -> int:
    """Write the first spec for `args.appdir` (the options commands/cmd_init.py parses)."""
    app = Path(args.appdir).resolve()
    if not app.is_dir():
        raise SpecError(f"{args.appdir}: no such folder", "give the app folder to ship, e.g. "
                        "bundler init app")
    spec = _new_spec_path(args.out, app)
    given = {sid: _given_path(path) for sid, path in args.source or []}
    platform = platform_for(SPEC_PLATFORM)
    entry = guess_entry(app)
    build = _build(args.builder, app, spec.parent, entry)
    pinned = pinned_frameworks(build.requirements, platform.driver_table()) \
        if build.requirements is not None else None
    build = replace(build, unknown=pinned.unknown) if pinned else build
    around = nearby(spec.parent, app)
    choice = choose(scan_app(app, platform=platform), platform, spec.parent,
                    release_inputs(around, platform.release_suffix, os.environ),
                    named_in_scripts(app, platform), pinned.frameworks if pinned else ())
    used = {f.source for f in choice.recipe.files_for(
        choice.recipe.select(list(choice.components)))}
    inputs = find_inputs(choice.recipe, [s for s in choice.recipe.sources if s in used],
                         around, given, os.environ)
    text = render(_command_text(args), app_name(app), app, spec.parent, entry,
                  choice, inputs, build)
    _write_new(spec, text)
    print(f"builder {build.builder}: {build.note}")
    _print_summary(spec, choice.recipe.name, choice.components, inputs)
    return EXIT_OK


def _build(asked: str | None, app: Path, spec_folder: Path, entry: EntryGuess) -> Build:
    """The builder (given, else embedded-python for an app whose requirements.txt is not
    installed in it), and its requirements file."""
    requirements = find_requirements(app, spec_folder)
    if asked == "folder" or (asked is None and requirements is None):
        return Build()
    if asked is None and has_site_packages(app):
        return Build(note=f"the app folder ships as it is, with the packages installed in "
                     f"it ({requirements} is not installed again)")
    if not entry.entry:
        if asked is None:
            return Build(note="the app folder ships as it is (embedded-python, for its "
                         f"{REQUIREMENTS}, needs an entry script, and none was found)")
        raise SpecError(f"{app}: --builder embedded-python needs the script the launcher "
                        "runs, and the app folder has none of main.py, __main__.py, "
                        "app.py (nor one .py file at its top)",
                        "add the entry script, or use --builder folder")
    why = "given with --builder" if asked else (
        f"chosen because {requirements} is there and nothing is installed in the app "
        "folder")
    shown = f"; pip installs {requirements.name} at pack time" if requirements else ""
    return Build("embedded-python", f"the app ships with its own CPython ({why}){shown}",
                 requirements)


def _new_spec_path(out: str | None, app: Path) -> Path:
    """Where the spec goes: a path nothing is at, not even a link (a link is not
    resolved: the spec would be written where it points)."""
    spec = Path(os.path.abspath(out)) if out else app.parent / SPEC_NAME
    if spec.exists() or spec.is_symlink():
        raise RefusedError(f"{spec}: exists; bundler init never overwrites a file",
                           "pack the spec that is there, remove it first, or write this one "
                           "elsewhere with --out OTHER.spec")
    if not spec.parent.is_dir():
        raise SpecError(f"{spec.parent}: no such folder (--out)",
                        "write the spec into an existing folder")
    return spec


def _given_path(text: str) -> Path:
    return Path(os.path.expanduser(text)).resolve()   # as given on the command line


def _command_text(args: argparse.Namespace) -> str:
    out = f" --out {args.out}" if args.out else ""
    builder = f" --builder {args.builder}" if args.builder else ""
    return f"bundler init {args.appdir}{out}{builder}"


def _write_new(spec: Path, text: str) -> None:
    """Create `spec` (never replacing a file that appeared meanwhile) and read it back
    with pack's reader; if that fails, nothing is left behind."""
    tomllib.loads(text)   # a bug here is an internal error, not a half-written file
    with open(spec, "x", encoding="utf-8", newline="\n") as out:
        try:
            out.write(text)
        except BaseException:
            out.close()
            spec.unlink()
            raise
    try:
        load_spec(spec)
    except BaseException:
        spec.unlink()
        raise


def _print_summary(spec: Path, recipe: str, components: tuple[str, ...],
                   inputs: list[FoundInput]) -> None:
    print(f"wrote {spec}")
    print(f"  recipe {recipe}; components {', '.join(components)}")
    for found in inputs:
        where = found.path if found.path is not None else \
            found.note.removesuffix(", e.g.").removesuffix(":")
        print(f"  source {found.source.id}: {where}")
        if found.outside:
            print(f"warning: source {found.source.id}: {found.path} lies outside the "
                  f"project ({spec.parent}); the spec names it with a comment: check it "
                  "is the file you mean", file=sys.stderr)
    undecided = spec.read_text(encoding="utf-8").count("TO DECIDE:")
    if undecided:
        print(f"  {undecided} line(s) marked TO DECIDE in the spec need your answer")
    print(f"next: bundler pack {spec}")
