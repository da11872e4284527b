"""Emit: write the app folder's bundler-made parts — bootstrap, entry line, manifest."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize
from importlib import resources
from pathlib import Path

from bundler.errors import BuildError, SpecError
from bundler.formats.manifest import (
    BOOTSTRAP_NAME,
    INJECT_LOADS,
    INJECT_MARKER,
    BootstrapEntry,
    BuiltFile,
    InputTrust,
    Manifest,
    RecipeRef,
    Versions,
)
from bundler.pack.resolve import ResolvedRuntime
from bundler.platforms.registry import Platform
from bundler.recipe.load import Recipe
from bundler.support.hashing import sha256_file

__all__ = ["BOOTSTRAP_NAME", "INJECT_MARKER", "build_manifest", "built_files",
           "inject_entry", "write_bootstrap"]

# Loaded by path, not `import _cudnn_bootstrap`: the embeddable CPython's ._pth
# file keeps the script's folder off sys.path. Registered in sys.modules so the
# app can still `import _cudnn_bootstrap` to call report().
# The bootstrap sits at the app's top; LOCATION is its path from the entry's folder.
# Without it (deleted, quarantined) the app stops with one line saying what to do, not
# a FileNotFoundError traceback from these lines.
_INJECTED = f'''{INJECT_MARKER} (added by `bundler pack`)
import importlib.util as _bundler_util, os.path as _bundler_path, sys as _bundler_sys
_bundler_spec = _bundler_util.spec_from_file_location("_cudnn_bootstrap", _bundler_path.join(
    _bundler_path.dirname(_bundler_path.abspath(__file__)), LOCATION))
if not _bundler_path.isfile(_bundler_spec.origin):
    raise SystemExit("this app's bundle is incomplete: " + _bundler_spec.origin + " is missing;"
                     " pack the app again (bundler pack), or run `bundler verify` on it")
_bundler_sys.modules["_cudnn_bootstrap"] = _bundler_util.module_from_spec(_bundler_spec)
{INJECT_LOADS}
del _bundler_util, _bundler_path, _bundler_sys, _bundler_spec
'''


def fill_template(package: str, resource: str, line: str, replacement: str) -> str:
    """A file shipped in `package` with its one placeholder `line` replaced."""
    text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    if line not in text:  # a real check: asserts vanish under python -O
        raise BuildError(f"bundler's {resource} has no line {line!r} to fill in",
                         "this bundler installation is damaged or modified: reinstall it")
    return text.replace(line, replacement, 1)


def bootstrap_text(runtime_dir: str, platform: Platform) -> str:
    """The one bootstrap file shipped for `platform`: the shared part with the app's
    runtime folder filled in and that platform's loader in place of the lines that
    import the loaders (docs/bootstrap.md). It imports nothing but the standard library."""
    text = fill_template("bundler.runtime", "bootstrap.py", 'RUNTIME_DIR = "cudnn"',
                         f"RUNTIME_DIR = {json.dumps(runtime_dir)}")
    loader = f"bootstrap_{platform.os_name.lower()}.py"
    try:
        loader_text = resources.files("bundler.runtime").joinpath(loader).read_text("utf-8")
    except FileNotFoundError:
        raise BuildError(f"bundler has no bootstrap loader for {platform.os_name}",
                         "pack for a platform bundler knows, or reinstall bundler") from None
    loader_text = _cut(loader_text, "# >>> not shipped", "# <<< not shipped", loader)
    return _cut(text, "# >>> the loaders", "# <<< the loaders", "bootstrap.py",
                loader_text.strip("\n") + "\n")


def _cut(text: str, start: str, end: str, name: str, put: str = "") -> str:
    """`text` with the lines from the one starting `start` to the one starting `end`
    replaced by `put`."""
    begin, finish = text.find("\n" + start), text.find("\n" + end)
    if begin < 0 or finish < begin:  # a real check: asserts vanish under python -O
        raise BuildError(f"bundler's {name} has no lines {start!r} .. {end!r}",
                         "this bundler installation is damaged or modified: reinstall it")
    return text[:begin + 1] + put + text[text.index("\n", finish + 1) + 1:]


def write_bootstrap(path: Path, runtime_dir: str, platform: Platform) -> str:
    data = bootstrap_text(runtime_dir, platform).encode("utf-8")
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def inject_entry(entry: Path, levels_below_top: int = 0) -> None:
    """Add the bootstrap lines to the entry script, after its shebang, coding line,
    docstring and `from __future__` imports (which must stay first), before anything
    else. `levels_below_top`: how many folders below the app's top the entry lies."""
    try:
        raw = entry.read_bytes()
        # As Python reads it: a UTF-8 byte-order mark (Notepad) or a coding cookie.
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding)
        tree = ast.parse(source, filename=str(entry))
    except FileNotFoundError:
        raise SpecError(f"{entry}: app.entry does not exist in the app folder",
                        "set app.entry to the script inside app.path") from None
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise SpecError(f"{entry}: the entry script cannot be parsed ({exc})",
                        "fix the script, or omit app.entry for a native app") from None
    if INJECT_MARKER in source:
        return
    # Split where Python counts lines (str.splitlines would also split at form feeds
    # and other separators that ast does not count), keeping each line's ending.
    lines = io.StringIO(source, newline="").readlines()
    newline = "\r\n" if "\r\n" in source else "\n"
    at = _insertion_line(tree) or _leading_directives(lines)
    if at and not lines[at - 1].endswith(("\n", "\r")):
        lines[at - 1] += newline
    location = ", ".join(['".."'] * levels_below_top + [f'"{BOOTSTRAP_NAME}"'])
    injected = _INJECTED.replace("LOCATION", location).replace("\n", newline)
    entry.write_bytes(("".join(lines[:at]) + injected + "".join(lines[at:])).encode(encoding))


_CODING_LINE = re.compile(r"^[ \t\f]*#.*?coding[:=]")


def _leading_directives(lines: list[str]) -> int:
    """Lines that must stay on top: a shebang, and a coding cookie (lines 1-2 only)."""
    at = 0
    for index, line in enumerate(lines[:2]):
        if (index == 0 and line.startswith("#!")) or _CODING_LINE.match(line):
            at = index + 1
        else:
            break
    return at


def _insertion_line(tree: ast.Module) -> int:
    at = 0
    for index, node in enumerate(tree.body):
        docstring = (index == 0 and isinstance(node, ast.Expr)
                     and isinstance(node.value, ast.Constant)
                     and isinstance(node.value.value, str))
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if not (docstring or future):
            break
        at = node.end_lineno or node.lineno
    return at


def built_files(root: Path, made: tuple[str, ...]) -> tuple[BuiltFile, ...]:
    """Each file below `root` at or under the paths a builder added (`made`), hashed
    for the manifest, sorted by path."""
    found = []
    for relpath in made:
        top = root / relpath
        paths = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
        for path in paths:
            found.append(BuiltFile(path.relative_to(root).as_posix(), path.stat().st_size,
                                   sha256_file(path, f"hashing {path.name}")))
    return tuple(sorted(found, key=lambda f: f.path))


def build_manifest(recipe: Recipe, components: list[str], runtime_dir: str,
                   resolved: ResolvedRuntime, bootstrap: BootstrapEntry,
                   require_driver: bool = False,
                   built: tuple[BuiltFile, ...] = ()) -> Manifest:
    return Manifest(
        recipe=RecipeRef(recipe.name, recipe.sha256), platform=recipe.platform,
        versions=Versions(cudnn=recipe.cudnn, cuda=recipe.cuda, min_driver=recipe.min_driver,
                          min_driver_compat=recipe.min_driver_compat,
                          min_glibc=resolved.min_glibc),
        runtime_dir=runtime_dir, components=tuple(components),
        files=tuple(sorted(resolved.files, key=lambda f: f.path)),
        load_order=tuple(resolved.load_order), bootstrap=bootstrap,
        require_driver=require_driver, built=built,
        inputs=tuple(InputTrust(sid, text) for sid, text in sorted(resolved.trust.items())))
