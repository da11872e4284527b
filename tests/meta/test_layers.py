"""The platform layers stand the right way up (issue 40 item 2).

- Folders (bundler's sub-packages) form no knot: the folder-level import graph has no
  cycle, so each folder can be read knowing only the ones below it.
- platforms/ is the bottom of the platform layers: it imports nothing of bundler but
  itself, errors and support; the registry that names the OS packages (targets/) sits
  above them, the import classifier (recipe/library_imports.py) above recipe/.
- A platform is a required argument: no parameter typed `Platform` (or named
  `platform`/`target`) has a default, so nothing falls back to one OS.
- A capability flag is read for what it is about, never as "which OS is this":
  `searches_folders_only`, `case_insensitive` and `windows_names` are the seam's own
  business (callers compare names with `name_key`/`same_name`) but where a listed caller
  applies exactly that rule, and no comparison sets a platform's words (`library_word`,
  `os_name`) against a literal.

Read from the source tree; nothing runs."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.meta.test_import_graph import cycles, import_graph

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bundler"
SEAM = ("platforms", "targets", "windows", "linux")
BOTTOM_MAY_IMPORT = ("bundler.platforms", "bundler.errors", "bundler.support")
FLAGS_OF_THE_SEAM = ("searches_folders_only", "case_insensitive", "windows_names")
# Where a flag is read for what it is about (by file below bundler/): the case rule of a
# name pattern, Windows's name rules applied to the paths a bundle ships.
FLAG_READS_FOR_WHAT_THEY_SAY = {
    "frameworks/loaded_names.py": ("platform.case_insensitive",),
    "pack/builders/folder.py": ("recipe.target.windows_names",),
    "pack/pipeline.py": ("recipe.target.windows_names",),
}
PLATFORM_WORDS = ("library_word", "os_name")


def _folder(module: str) -> str:
    """bundler.pack.store.store -> bundler.pack; bundler.cli -> bundler.cli."""
    return ".".join(module.split(".")[:2])


def folder_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, imported in import_graph().items():
        edges = graph.setdefault(_folder(module), set())
        edges |= {_folder(i) for i in imported if _folder(i) != _folder(module)}
    return graph


def test_the_folders_form_no_knot() -> None:
    assert cycles(folder_graph()) == []


def test_the_folder_knot_finder_sees_a_knot_across_modules() -> None:
    """Two folders whose modules import each other's (no module cycle) are a knot."""
    graph = {"bundler.a.x": {"bundler.b.y"}, "bundler.b.z": {"bundler.a.w"}}
    folders: dict[str, set[str]] = {}
    for module, imported in graph.items():
        folders.setdefault(_folder(module), set()).update(_folder(i) for i in imported)
    assert cycles(graph) == []
    assert cycles(folders) == [["bundler.a", "bundler.b"]]


def test_platforms_is_the_bottom_layer() -> None:
    upward = sorted(f"{module} imports {target}" for module, imported in import_graph().items()
                    if _folder(module) == "bundler.platforms" for target in imported
                    if not target.startswith(BOTTOM_MAY_IMPORT))
    assert upward == []


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def optional_platform_parameters(tree: ast.AST) -> list[str]:
    found = []
    for function in _functions(tree):
        args = function.args
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
        for arg, default in pairs:
            annotation = ast.unparse(arg.annotation) if arg.annotation else ""
            # A name alone counts where nothing says it is something else (a module
            # finder's `target: ModuleType` is no platform).
            named = arg.arg in ("platform", "target") and annotation in ("", "str")
            if default is not None and ("Platform" in annotation or named):
                found.append(f"{function.name}({arg.arg}: {annotation} = "
                             f"{ast.unparse(default)})")
    return found


def test_no_platform_parameter_has_a_default() -> None:
    found = [f"{p.relative_to(ROOT)}: {hit}" for p in sorted(PACKAGE.rglob("*.py"))
             for hit in optional_platform_parameters(ast.parse(p.read_text(encoding="utf-8")))]
    assert found == []


def test_the_default_finder_sees_each_form() -> None:
    tree = ast.parse("def a(x, platform: 'Platform | None' = None): pass\n"
                     "def b(*, target=WINDOWS): pass\n"
                     "def c(platform: Platform): pass\n")
    assert optional_platform_parameters(tree) == [
        "a(platform: 'Platform | None' = None)", "b(target:  = WINDOWS)"]


def _conditions(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While)):
            found.append(node.test)
        elif isinstance(node, ast.comprehension):
            found += node.ifs
        elif isinstance(node, ast.Assert):
            found.append(node.test)
    return found


def capability_reads(tree: ast.AST) -> list[str]:
    """Flags of the seam read anywhere, and platform words compared with a literal in a
    condition or a comparison."""
    found = [ast.unparse(n) for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and n.attr in FLAGS_OF_THE_SEAM]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(isinstance(s, ast.Attribute) and s.attr in PLATFORM_WORDS for s in sides) \
                and any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                        for s in sides):
            found.append(ast.unparse(node))
    return found


def test_no_capability_is_read_as_an_os_outside_the_seam() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in SEAM:
            continue
        allowed = FLAG_READS_FOR_WHAT_THEY_SAY.get(path.relative_to(PACKAGE).as_posix(), ())
        found += [f"{path.relative_to(ROOT)}: {hit}"
                  for hit in capability_reads(ast.parse(path.read_text(encoding="utf-8")))
                  if hit not in allowed]
    assert found == []


def test_the_capability_finder_sees_each_form() -> None:
    tree = ast.parse("if not target.case_insensitive: pass\n"
                     "x = here.searches_folders_only and y\n"
                     "if here.library_word != 'DLL': pass\n"
                     "word = here.library_word\n")
    assert capability_reads(tree) == ["target.case_insensitive",
                                      "here.searches_folders_only",
                                      "here.library_word != 'DLL'"]
