"""`bundler init`: the spec's text: the app's name and entry guessed, the choice and the
inputs written out with a comment saying why each line is there and what is left to
decide. Strict TOML that `bundler pack` reads as it is (the command checks it)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SpecError
from bundler.init.choice import Choice
from bundler.init.inputs import FoundInput
from bundler.pack.spec import MAX_APP_NAME
from bundler.support.paths import windows_can_name
from bundler.support.toml_write import toml_string

# Looked for in this order at the app folder's top; else the one top-level .py file.
ENTRY_NAMES = ("main.py", "__main__.py", "app.py")
# Folder names that say nothing of the app: its parent folder names it instead.
_GENERIC = {"app", "src", "source", "code", "bin"}
_WIDTH = 88
# Lines of one kind the spec lists, then a count: a spec is at most 1 MiB (pack's reader),
# and an app can name thousands of libraries.
_LISTED = 20


@dataclass(frozen=True)
class Build:
    """How the spec has the app made: the builder, why, and for embedded-python the
    requirements file and the pinned frameworks bundler has no figures for."""

    builder: str = "folder"
    note: str = "the app folder ships as it is"
    requirements: Path | None = None
    unknown: tuple[str, ...] = ()
    platform: str = ""   # "platform linux-x64, from lib/x.so (...)": init's first line


# The CPython an embedded-python spec names (docs/spec-format.md lists the others).
EMBEDDED_PYTHON = "3.11"


@dataclass(frozen=True)
class EntryGuess:
    entry: str     # "" when there is no guess
    note: str      # why this one, or what to decide


def guess_entry(app: Path) -> EntryGuess:
    scripts = sorted(p.name for p in app.iterdir() if p.is_file() and p.suffix == ".py")
    by_name = {name.lower(): name for name in scripts}
    named = [by_name[n] for n in ENTRY_NAMES if n in by_name]
    if named:
        others = f" (also there: {', '.join(named[1:])})" if named[1:] else ""
        return EntryGuess(named[0], f"the first of {', '.join(ENTRY_NAMES)} in the app "
                          f"folder{others}; its copy in the bundle gets the bootstrap lines")
    if len(scripts) == 1:
        return EntryGuess(scripts[0], "the only .py file at the app folder's top; its copy "
                          "in the bundle gets the bootstrap lines")
    found = (f"{len(scripts)} .py files at its top ({', '.join(scripts[:4])}"
             f"{', ...' if len(scripts) > 4 else ''})" if scripts else "no .py file at its top")
    return EntryGuess("", f"TO DECIDE: the app folder has none of {', '.join(ENTRY_NAMES)} "
                      f"and {found}: name the script that starts the app (relative to the "
                      "app folder), or leave entry out for a native app, which then loads "
                      "the bootstrap or its runtime itself")


def app_name(app: Path) -> str:
    """The folder's name (its parent's for a generic one like app/ or src/), made a
    name the spec accepts: letters, digits, '.', '_' and '-'."""
    folder = app.resolve()
    raw = folder.parent.name if folder.name.lower() in _GENERIC and folder.parent.name \
        else folder.name
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", raw).strip("._-")[:MAX_APP_NAME].rstrip("._-")
    return name if name and windows_can_name(name) else "app"


def spec_path_text(path: Path, spec_folder: Path) -> str:
    """A path as the spec writes it: relative to the spec's folder where it can be
    (the spec moves with its app), with '/' (Windows reads it too)."""
    try:
        text = Path(os.path.relpath(path.resolve(), spec_folder.resolve())).as_posix()
    except ValueError:   # another drive on Windows: no relative path
        text = path.resolve().as_posix()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:   # bytes no encoding gives (0xff on Linux)
        raise SpecError(f"{comment_text(text)}: the path is not UTF-8 text, and a spec "
                        "(TOML) holds only text", "rename the folder or file with a UTF-8 "
                        "name, or write the spec where the path is relative to it without "
                        "that part (--out)") from None
    return text


def render(command: str, name: str, app: Path, spec_folder: Path, entry: EntryGuess,
           choice: Choice, inputs: list[FoundInput], build: Build | None = None) -> str:
    build = build or Build()
    lines = _comment(f"Written by `{command}` from a scan of the app folder. Pack it "
                     "with `bundler pack` as it is, or edit it first: every key is in "
                     "docs/spec-format.md. Lines marked TO DECIDE need your answer.")
    lines += ["", "[app]", f"name = {toml_string(name)}"]
    if build.builder == "folder":
        lines.append(f"# builder = \"folder\" (the default): {build.note}")
    else:
        lines += _comment(f"builder: {build.note}")
        lines.append(f"builder = {toml_string(build.builder)}")
    lines.append(f"path = {toml_string(spec_path_text(app, spec_folder))}")
    lines += _comment(f"entry: {entry.note}")
    lines.append(f"entry = {toml_string(entry.entry)}" if entry.entry
                 else '# entry = "main.py"')
    if build.builder == "embedded-python":
        lines += _comment("python: the CPython the bundle carries (python.org's "
                          "embeddable; \"3.10\" to \"3.13\"): choose one your "
                          "requirements have Windows wheels for")
        lines.append(f"python = {toml_string(EMBEDDED_PYTHON)}")
        if build.requirements is not None:
            lines += _comment("requirements: installed into the bundle as Windows wheels "
                              "at pack time; the frameworks it pins chose the recipe")
            lines.append(f"requirements = "
                         f"{toml_string(spec_path_text(build.requirements, spec_folder))}")
    lines += ["", "[runtime]"]
    if build.platform:
        lines += _comment(f"{build.platform}; the recipe is one of its releases")
    lines += _comment(f"recipe: {'; '.join(choice.why)}")
    for pinned in build.unknown:
        lines += _comment(f"TO DECIDE: {pinned} is pinned in the requirements, and "
                          "bundler knows no figures for that release without its wheel or "
                          "installed files: check the recipe serves it (its build-info file "
                          "names the CUDA and cuDNN it was built with)")
    lines.append(f"recipe = {toml_string(choice.recipe.name)}")
    lines += _components(choice)
    lines += _unsigned(inputs)
    lines += ["", "[sources]"]
    for found in inputs:
        lines += _comment(f"{found.source.id}: {found.note}")
        if found.path is not None:
            lines.append(f"{found.source.id} = "
                         f"{toml_string(spec_path_text(found.path, spec_folder))}")
        elif found.example:   # whole, on its own line: uncommented, it is the key
            lines.append(f"# {found.source.id} = {toml_string(found.example)}")
    return "\n".join(lines) + "\n"


def _components(choice: Choice) -> list[str]:
    recipe = choice.recipe
    lines = _comment("components: the recipe's default ones (cuDNN and what it requires) "
                     "and each one supplying a library the app needs, with why; what they "
                     "require comes along")
    lines.append("components = [")
    for component in choice.components:
        reasons = choice.reasons.get(component, ())
        for reason in reasons[:_LISTED]:   # one line each, as pack says it
            lines.append(f"    # {component}: {comment_text(reason)}")
        if len(reasons) > _LISTED:
            lines.append(f"    # {component}: and {len(reasons) - _LISTED} more")
        lines.append(f"    {toml_string(component)},")
    lines.append("]")
    for need in choice.unsupplied[:_LISTED]:
        # pack reads binaries, not scripts: a script's DLL it would not stop on
        then = ("`bundler pack` does not read scripts: name a release that ships it"
                if need.how == "named in" else
                "`bundler pack` stops on it, naming a release that ships it or, where none "
                "does, the CUDA that has it")
        lines += _comment(f"TO DECIDE: {need.dll} ({need.reason}): {recipe.name} does not "
                          f"ship it; {then}")
    if len(choice.unsupplied) > _LISTED:
        lines += _comment(f"TO DECIDE: and {len(choice.unsupplied) - _LISTED} more libraries "
                          f"the app needs or names that {recipe.name} does not ship")
    for copy in choice.app_copies[:_LISTED]:
        lines += _comment(f"TO DECIDE: the app ships its own {copy}; `bundler pack` refuses "
                          "two copies of one DLL ([scan] allow_app_copies: "
                          "docs/spec-format.md)")
    if len(choice.app_copies) > _LISTED:
        lines += _comment(f"TO DECIDE: and {len(choice.app_copies) - _LISTED} more libraries "
                          "the app ships its own copy of")
    return lines


def comment_text(text: str) -> str:
    """`text` safe inside a TOML comment: a comment ends at a line break, so a file name
    holding one (`x\nallow_unsigned = ["*"]`) would write a key; every character that is
    not printable (line breaks, controls, U+2028, U+202E) is shown as its escape."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _unsigned(inputs: list[FoundInput]) -> list[str]:
    """A cuDNN zip or folder named by path may be a stand-in or the user's own build:
    pack refuses its unsigned DLLs unless the spec names them (docs/signatures.md).
    Only the user can say which it is, so the line is written commented out."""
    given = [f.path for f in inputs if f.source.id == "cudnn" and f.path is not None
             and f.source.kind != "wheel"]
    if not given or given[0] is None:
        return []
    lines = _comment(f"allow_unsigned: pack takes {given[0].name} if it is NVIDIA's "
                     "published file (by its sha256) or its DLLs carry NVIDIA's signature, "
                     "and refuses it otherwise; only if it is a stand-in or your own "
                     "build, uncomment this line (the pack then says NOT SIGNED)")
    return [*lines, '# allow_unsigned = ["cudnn*.dll"]']


def _comment(text: str) -> list[str]:
    """`text` as comment lines of at most _WIDTH characters (a long path stays whole)."""
    lines: list[str] = []
    line = ""
    for word in comment_text(text).split(" "):
        if line and 2 + len(line) + 1 + len(word) > _WIDTH:
            lines.append(f"# {line}")
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(f"# {line}")
    return lines
