"""Emit: write the app folder's bundler-made parts — bootstrap, entry line, manifest."""

from __future__ import annotations

import ast
import hashlib
import io
import json
import re
import tokenize
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from bundler.errors import BuildError, SpecError
from bundler.recipe import Recipe
from bundler.resolve import ResolvedRuntime

BOOTSTRAP_NAME = "_cudnn_bootstrap.py"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = 1
INJECT_MARKER = "# bundler: load the bundled cuDNN runtime first"

# Loaded by path, not `import _cudnn_bootstrap`: the embeddable CPython's ._pth
# file keeps the script's folder off sys.path. Registered in sys.modules so the
# app can still `import _cudnn_bootstrap` to call report().
# The bootstrap sits at the app's top; LOCATION is its path from the entry's folder.
_INJECTED = f'''{INJECT_MARKER} (added by `bundler pack`)
import importlib.util as _bundler_util, os.path as _bundler_path, sys as _bundler_sys
_bundler_spec = _bundler_util.spec_from_file_location("_cudnn_bootstrap", _bundler_path.join(
    _bundler_path.dirname(_bundler_path.abspath(__file__)), LOCATION))
_bundler_sys.modules["_cudnn_bootstrap"] = _bundler_util.module_from_spec(_bundler_spec)
_bundler_spec.loader.exec_module(_bundler_sys.modules["_cudnn_bootstrap"])
del _bundler_util, _bundler_path, _bundler_sys, _bundler_spec
'''


def bootstrap_text(runtime_dir: str) -> str:
    """The bootstrap's source with the app's runtime folder filled in."""
    text = resources.files("bundler").joinpath("bootstrap.py").read_text(encoding="utf-8")
    default = 'RUNTIME_DIR = "cudnn"'
    if default not in text:  # a real check: asserts vanish under python -O
        raise BuildError(f"bundler's bootstrap.py has no line {default!r} to fill in",
                         "this bundler installation is damaged or modified: reinstall it")
    return text.replace(default, f"RUNTIME_DIR = {json.dumps(runtime_dir)}", 1)


def write_bootstrap(path: Path, runtime_dir: str) -> str:
    data = bootstrap_text(runtime_dir).encode("utf-8")
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


@dataclass(frozen=True)
class Manifest:
    recipe: dict[str, str]
    platform: str
    versions: dict[str, str]
    runtime_dir: str
    components: list[str]
    files: list[dict[str, Any]]   # path, size, sha256, machine, version, component, source
    load_order: list[str]
    bootstrap: dict[str, str]
    format: int = MANIFEST_FORMAT
    # The bootstrap stops the app (rather than warn) when the driver is missing or old.
    require_driver: bool = False

    def to_bytes(self) -> bytes:
        """Deterministic: sorted keys, no timestamps, so equal inputs give equal bytes."""
        return (json.dumps(asdict(self), indent=2, sort_keys=True) + "\n").encode("utf-8")

    @property
    def total_size(self) -> int:
        return sum(int(entry["size"]) for entry in self.files)

    def component_sizes(self) -> dict[str, int]:
        """Bytes shipped per component, in the recipe's order; the licences come last."""
        sizes = dict.fromkeys(self.components, 0)
        for entry in self.files:
            sizes[entry["component"]] = sizes.get(entry["component"], 0) + int(entry["size"])
        return sizes


def build_manifest(recipe: Recipe, components: list[str], runtime_dir: str,
                   resolved: ResolvedRuntime, bootstrap: dict[str, str],
                   require_driver: bool = False) -> Manifest:
    files = sorted((asdict(f) for f in resolved.files), key=lambda f: str(f["relpath"]))
    for entry in files:
        entry["path"] = entry.pop("relpath")
    return Manifest(
        recipe={"name": recipe.name, "sha256": recipe.sha256},
        platform=recipe.platform,
        versions=_versions(recipe),
        runtime_dir=runtime_dir, components=components, files=files,
        load_order=resolved.load_order, bootstrap=bootstrap, require_driver=require_driver)


def _versions(recipe: Recipe) -> dict[str, str]:
    versions = {"cudnn": recipe.cudnn, "cuda": recipe.cuda, "min_driver": recipe.min_driver}
    if recipe.min_driver_compat:
        versions["min_driver_compat"] = recipe.min_driver_compat
    return versions


def read_manifest(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))
