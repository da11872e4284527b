"""`bundler init APPDIR`: write a first spec for an app folder (like `cargo init`);
its options are parsed by commands/cmd_init.py.

It takes the app's platform from its GPU binaries' headers (else --platform, its
requirements, its scripts), scans the app as `bundler pack` does for that platform
(pack/app_scan.py), picks the recipe and components its libraries and frameworks need
(init/choice.py), finds the inputs this machine has (init/inputs.py) and writes
`app.spec` beside the app folder (init/writer.py), never over an existing file. The spec
is read back with pack's own reader before init ends.
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
    platform_in_requirements,
    unread_requirements,
)
from bundler.init.writer import Build, EntryGuess, app_name, guess_entry, render
from bundler.pack.app_scan import app_gpu_binaries, scan_app
from bundler.pack.builders.cpython_embed import PLATFORM as EMBEDDABLE_PLATFORM
from bundler.pack.spec import load_spec
from bundler.support.toml_tables import tomllib
from bundler.targets.registry import Platform, all_platforms, platform_for

SPEC_NAME = "app.spec"
BUILDERS = ("folder", "embedded-python")

def platform_names() -> tuple[str, ...]:
    """What --platform takes: each platform's release suffix (win-x64, as release names
    end) and its recipe name (win-amd64)."""
    return tuple(n for p in all_platforms() for n in (p.release_suffix, p.name))


def init(args: argparse.Namespace) -> int:
    """Write the first spec for `args.appdir` (the options commands/cmd_init.py parses)."""
    app = Path(args.appdir).resolve()
    if not app.is_dir():
        raise SpecError(f"{args.appdir}: no such folder", "give the app folder to ship, e.g. "
                        "bundler init app")
    spec = _new_spec_path(args.out, app)
    given = {sid: _given_path(path) for sid, path in args.source or []}
    entry = guess_entry(app)
    for line in unread_requirements(app, spec.parent):
        print(f"warning: {line}", file=sys.stderr)
    platform, said = _platform(args.platform, args.builder, app, spec.parent, entry)
    build = _build(args.builder, app, spec.parent, entry, platform)
    build = replace(build, platform=f"platform {platform.release_suffix}, {said}")
    pinned = pinned_frameworks(build.requirements, platform,
                               [Path(f) for f in args.find_links], args.offline) \
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
    print(build.platform)
    print(f"builder {build.builder}: {build.note}")
    _print_summary(spec, choice.recipe.name, choice.components, inputs)
    return EXIT_OK


def _platform(asked: str | None, builder: str | None, app: Path, spec_folder: Path,
              entry: EntryGuess) -> tuple[Platform, str]:
    """The platform the spec is for, and what says so: the app's GPU binaries (by their
    headers; of two platforms, --platform chooses), else --platform, else its
    requirements (a wheel named by file; the embedded-python builder, whose CPython is
    one platform's), else the libraries its scripts name, else the default (the first
    platform bundler knows)."""
    chosen = _platform_named(asked) if asked else None
    found = app_gpu_binaries(app)
    if chosen is not None:
        if found and chosen.name not in {g.platform.name for g in found}:
            raise SpecError(f"--platform {asked}: the app's GPU binaries are "
                            f"{found[0].platform.label} ones, e.g. {found[0].described}",
                            f"leave --platform out (init takes "
                            f"{found[0].platform.release_suffix} from them), or ship the "
                            f"app's {chosen.label} build")
        also = "; ".join(g.described for g in found if g.platform.name != chosen.name)
        if found and not also:   # the binaries say so too: say what they say
            return chosen, f"from {found[0].described}"
        return chosen, "from --platform" + (
            f" (the app also holds {also}, which ships as it is)" if also else "")
    if len(found) > 1:
        raise SpecError(f"{app}: the app holds GPU binaries of {len(found)} platforms: "
                        + "; ".join(g.described for g in found),
                        "say which one the spec is for: " + " or ".join(
                            f"--platform {g.platform.release_suffix}" for g in found))
    if found:
        return found[0].platform, f"from {found[0].described}"
    requirements = find_requirements(app, spec_folder)
    tagged = platform_in_requirements(requirements) if requirements else None
    if tagged is not None and requirements is not None:
        return tagged[0], f"from {requirements.name}: {tagged[1]}"
    embedding = platform_for(EMBEDDABLE_PLATFORM)
    if requirements is not None and \
            _build(builder, app, spec_folder, entry, embedding).builder == "embedded-python":
        return embedding, (f"from {requirements.name}: the embedded-python builder installs "
                           f"it into python.org's {embedding.label} CPython (the app shows "
                           f"no GPU binary; for another platform: {_others(embedding)})")
    for platform in all_platforms():
        named = named_in_scripts(app, platform)
        if named:
            return platform, f"from {named[0].by}: it names {named[0].dll}"
    default = all_platforms()[0]
    return default, ("the default: nothing in the app tells (no GPU binary, no wheel named "
                     "in a requirements file, no CUDA/cuDNN library named in a script); for "
                     f"another platform: {_others(default)}")


def _others(platform: Platform) -> str:
    return " or ".join(f"--platform {p.release_suffix}" for p in all_platforms()
                       if p.name != platform.name)


def _platform_named(name: str) -> Platform:
    found = next((p for p in all_platforms() if name in (p.release_suffix, p.name)), None)
    if found is None:
        raise SpecError(f"--platform {name}: no platform bundler knows has that name",
                        f"use one of: {', '.join(platform_names())}")
    return found


def _build(asked: str | None, app: Path, spec_folder: Path, entry: EntryGuess,
           platform: Platform) -> Build:
    """The builder (given, else embedded-python for an app whose requirements.txt is not
    installed in it, where the platform is the embeddable CPython's), and its
    requirements file."""
    requirements = find_requirements(app, spec_folder)
    embeddable = platform_for(EMBEDDABLE_PLATFORM)
    if asked == "embedded-python" and platform.name != embeddable.name:
        raise SpecError(f"--builder embedded-python ships python.org's {embeddable.label} "
                        f"CPython, and the spec is for {platform.label}",
                        f"use --builder folder, or --platform {embeddable.release_suffix} "
                        f"for an {embeddable.label} build of the app")
    if asked == "folder" or (asked is None and requirements is None):
        return Build()
    if asked is None and platform.name != embeddable.name:
        return Build(note=f"the app folder ships as it is (embedded-python ships "
                     f"{embeddable.label} CPython; for {platform.label} install "
                     f"{requirements} into the app folder first)")
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
    platform = f" --platform {args.platform}" if args.platform else ""
    return f"bundler init {args.appdir}{out}{builder}{platform}"


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
