"""Emit: write the app folder's bundler-made parts — bootstrap, entry line, manifest."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize
from collections.abc import Mapping
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
from bundler.recipe.load import Recipe
from bundler.support.hashing import sha256_file
from bundler.targets.registry import Platform

__all__ = ["BOOTSTRAP_NAME", "INJECT_MARKER", "build_manifest", "built_files",
           "inject_entry", "write_bootstrap"]

# Loaded by path, not `import _cudnn_bootstrap`: the embeddable CPython's ._pth
# file keeps the script's folder off sys.path. Registered in sys.modules so the
# app can still `import _cudnn_bootstrap` to call report().
# The bootstrap sits at the app's top; LOCATION is its path from the entry's folder.
# Without it (deleted, quarantined) the app stops with one line saying what to do, not
# a FileNotFoundError traceback from these lines.
# Nothing here is imported from a file: sys and the two modules behind importlib.util
# (its spec_from_file_location and module_from_spec) are in every interpreter before
# the script runs, so a json.py, os.py or importlib/ beside the script cannot stand in
# for them (the bootstrap's own imports are guarded by runtime/first.py). The folder is
# cut from __file__ as text, with no os.path.
_INJECTED = f'''{INJECT_MARKER} (added by `bundler pack`)
import sys as _bundler_sys, _frozen_importlib as _bundler_util
import _frozen_importlib_external as _bundler_ext
_bundler_spec = _bundler_ext.spec_from_file_location("_cudnn_bootstrap", __file__[:max(
    __file__.rfind("/"), __file__.rfind("\\\\")) + 1] + LOCATION)
try:
    open(_bundler_spec.origin, "rb").close()
except OSError:
    raise SystemExit("this app's bundle is incomplete: " + _bundler_spec.origin + " is missing;"
                     " pack the app again (bundler pack), or run `bundler verify` on it")
_bundler_sys.modules["_cudnn_bootstrap"] = _bundler_util.module_from_spec(_bundler_spec)
{INJECT_LOADS}
del _bundler_util, _bundler_ext, _bundler_sys, _bundler_spec
'''


def fill_template(package: str, resource: str, line: str, replacement: str) -> str:
    """A file shipped in `package` with its one placeholder `line` replaced."""
    text = resources.files(package).joinpath(resource).read_text(encoding="utf-8")
    if line not in text:  # a real check: asserts vanish under python -O
        raise BuildError(f"bundler's {resource} has no line {line!r} to fill in",
                         "this bundler installation is damaged or modified: reinstall it")
    return text.replace(line, replacement, 1)


def bootstrap_text(runtime_dir: str, platform: Platform) -> str:
    """The one bootstrap file shipped for `platform`: bundler/runtime's pieces in the
    order each needs the one before (rules, common, that platform's loader only,
    activation), then the line that starts it; the app's runtime folder filled in
    (docs/bootstrap.md). It imports nothing but the standard library."""
    loader = f"loader_{platform.os_name.lower()}.py"
    names = ("first.py", "rules.py", "common.py", loader, "activation.py")
    try:
        texts = [resources.files("bundler.runtime").joinpath(name).read_text("utf-8")
                 for name in names]
    except FileNotFoundError:
        raise BuildError(f"bundler has no bootstrap loader for {platform.os_name}",
                         "pack for a platform bundler knows, or reinstall bundler") from None
    texts[2] = fill_template("bundler.runtime", "common.py", 'RUNTIME_DIR = "cudnn"',
                             f"RUNTIME_DIR = {json.dumps(runtime_dir)}")
    texts[2] = texts[2].replace('PLATFORM = ""', f"PLATFORM = {json.dumps(platform.label)}", 1)
    texts = [_cut(text, "# >>> not shipped", "# <<< not shipped", name)
             if "\n# >>> not shipped" in text else text for name, text in zip(names, texts)]
    first: list[str] = []
    imports: list[str] = []
    unused = _unused(texts)
    bodies = [_shipped_lines(texts[0], first, unused)]
    bodies += [_shipped_lines(text, imports, unused) for text in texts[1:]]
    header = _HEADER.format(platform=platform.name, pieces=", ".join(names))
    # first.py's guard, then every other import inside it: from the standard library
    guarded = "with _StandardLibraryFirst():\n" + "".join(
        f"    {line}" for line in sorted(set(imports)))
    return (header + "".join(first) + bodies[0] + guarded + "".join(bodies[1:])
            + "start(__name__)\n")


def _unused(texts: list[str]) -> set[str]:
    """The functions of the pieces that this platform's bootstrap never calls: doctor's
    alone (driver_check), or the other platform's (glibc_problem on Windows)."""
    trees = [ast.parse(text) for text in texts]
    defined = {node.name: node for tree in trees for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    # From what runs: the top-level statements (LOADER names its loader's functions) and
    # start(), then what each function kept calls.
    wanted = {"start", "activate", "report", "_StandardLibraryFirst"} | {
        n.id for tree in trees for node in tree.body
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef))
        for n in ast.walk(node) if isinstance(n, ast.Name)}
    kept: set[str] = set()
    while wanted & defined.keys() - kept:
        kept |= wanted & defined.keys()
        wanted |= {n.id for name in kept for n in ast.walk(defined[name])
                   if isinstance(n, ast.Name)}
    return defined.keys() - kept


# The shipped file's only docstring: the pieces' own docstrings and comments, which say
# why, stay in bundler's source, so that the one file each app carries stays short.
_HEADER = '''"""Load this app's bundled CUDA runtime before anything else can (docs/bootstrap.md).
Written by `bundler pack` for {platform}: {pieces} of bundler/runtime/, less comments."""
'''


def _shipped_lines(text: str, imports: list[str], unused: set[str]) -> str:
    """A piece's code without its docstrings, comments, blank lines and the functions
    named in `unused`; its top-level imports go to `imports`."""
    tree = ast.parse(text)
    lines = text.splitlines()
    dropped: set[int] = set()   # 0-based line numbers
    replaced: dict[int, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:   # its "not shipped" lines lost
            raise BuildError(f"bundler's bootstrap piece imports .{node.module} where it "
                             "is shipped", "this bundler installation is damaged or "
                             "modified: reinstall it")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append("".join(lines[node.lineno - 1:node.end_lineno]).strip() + "\n")
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
                isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in unused):
            dropped.update(range(node.lineno - 1, node.end_lineno or node.lineno))
    for scope in ast.walk(tree):
        body = getattr(scope, "body", None)
        if not (isinstance(scope, (ast.Module, ast.ClassDef, ast.FunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            continue
        first, last = body[0].lineno - 1, body[0].end_lineno or body[0].lineno
        dropped.update(range(first, last))
        if len(body) == 1 and not isinstance(scope, ast.Module):   # a body of its docstring
            replaced[first] = " " * body[0].col_offset + "pass"
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            lines[row - 1] = lines[row - 1][:column].rstrip()
    kept = [replaced.get(number, "" if number in dropped else line)
            for number, line in enumerate(lines)]
    return "".join(line + "\n" for line in kept if line.strip())


def _cut(text: str, start: str, end: str, name: str) -> str:
    """`text` without the lines from the one starting `start` to the one starting `end`."""
    begin, finish = text.find("\n" + start), text.find("\n" + end)
    if begin < 0 or finish < begin:  # a real check: asserts vanish under python -O
        raise BuildError(f"bundler's {name} has no lines {start!r} .. {end!r}",
                         "this bundler installation is damaged or modified: reinstall it")
    return text[:begin + 1] + text[text.index("\n", finish + 1) + 1:]


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
    location = json.dumps("../" * levels_below_top + BOOTSTRAP_NAME)
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


def built_files(root: Path, made: tuple[str, ...], digests: Mapping[str, str] | None = None
                ) -> tuple[BuiltFile, ...]:
    """Each file below `root` at or under the paths a builder added (`made`), hashed
    for the manifest, sorted by path. `digests`: the sha256 the builder computed as it
    wrote a file, or proved (by path relative to `root`): taken, not read again."""
    found = []
    digests = digests or {}
    for relpath in made:
        top = root / relpath
        paths = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
        for path in paths:
            name = path.relative_to(root).as_posix()
            found.append(BuiltFile(name, path.stat().st_size, digests.get(name) or
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
