"""One record per variant (issue 29 item 4): each builder is one `Builder` record its
module exports, each source kind one `SourceKind` record, and no import cycle runs
through the spec reader, the builders or the recipe package."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from bundler.pack.builders import BUILDERS
from bundler.pack.builders.base import Builder

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bundler"
BUILDER_MODULES = ("bundler.pack.builders.folder", "bundler.pack.builders.pyinstaller",
                   "bundler.pack.builders.embedded_python")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module, name: str, known: set[str]) -> set[str]:
    """The bundler modules a module imports at its top, `if TYPE_CHECKING:` blocks
    included (a cycle of types is a cycle of knowledge); imports inside functions are
    not counted."""
    found: set[str] = set()
    statements = list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.If | ast.Try):
            statements += node.body + node.orelse
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            # `from bundler.pack import spec` imports a module too
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {module for module in found if module in known and module != name}


def import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _top_level_imports(ast.parse(path.read_text()), name, set(paths))
            for name, path in paths.items()}


def cycles_through(graph: dict[str, set[str]], watched: set[str]) -> list[list[str]]:
    """Each cycle of the graph (by depth-first search) that passes a watched module."""
    found: list[list[str]] = []
    state: dict[str, int] = {}   # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                if watched & set(cycle):
                    found.append(cycle)
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def _watched(graph: dict[str, set[str]]) -> set[str]:
    return {m for m in graph if m == "bundler.pack.spec" or m == "bundler.pack.spec_model"
            or m.startswith(("bundler.pack.builders", "bundler.recipe"))}


def test_no_import_cycle_through_spec_builders_or_recipe() -> None:
    graph = import_graph()
    assert cycles_through(graph, _watched(graph)) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles_through(graph, {"b"}) == [["a", "b", "c", "a"]]
    assert cycles_through(graph, {"d"}) == []


def test_each_builder_module_exports_one_builder_record() -> None:
    exported = []
    for name in BUILDER_MODULES:
        module = importlib.import_module(name)
        records = [value for value in vars(module).values() if isinstance(value, Builder)]
        assert len(records) == 1, f"{name} exports {len(records)} Builder records"
        exported.append(records[0])
    assert list(BUILDERS) == exported
    assert len({builder.name for builder in BUILDERS}) == len(BUILDERS)


def test_builder_knowledge_lives_in_the_builder_modules() -> None:
    """No module outside pack/builders/ names a builder's app.builder string, except
    init's own choice of the two it writes (its --builder)."""
    names = {builder.name for builder in BUILDERS} - {"folder"}   # 'folder' is a common word
    allowed = {PACKAGE / "init" / "command.py", PACKAGE / "init" / "writer.py"}
    naming = []
    for path in PACKAGE.rglob("*.py"):
        if "builders" in path.parts or path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in names:
                naming.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert naming == []


def _kind_name_lists(tree: ast.Module, names: set[str]) -> list[ast.AST]:
    """Tuples, lists and sets of two or more strings that are all source kind names,
    and dicts keyed by two or more of them: a second list of the kinds. The arguments
    of a SourceKind(...) call (its found_as: what an input is on disk) are not."""
    inside_record = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                     and getattr(node.func, "id", "") == "SourceKind"
                     for arg in [*node.args, *(k.value for k in node.keywords)]}
    found: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = node.elts
        elif isinstance(node, ast.Dict):
            items = [key for key in node.keys if key is not None]
        else:
            continue
        if (id(node) not in inside_record and len(items) >= 2
                and all(isinstance(i, ast.Constant) and i.value in names for i in items)):
            found.append(node)
    return found


# `bundler inspect`'s report names what a file is on disk ("archive", "wheel",
# "folder": the words of SourceKind.found_as), not a recipe's source kinds.
_FOUND_AS_WORDS = {("bundler/diagnose/inspection.py", 'report.kind in ("archive", "wheel")')}


def test_source_kinds_are_listed_once() -> None:
    from bundler.recipe.model import SOURCE_KINDS

    names = set(SOURCE_KINDS)
    lists = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        lines = text.splitlines()
        for node in _kind_name_lists(ast.parse(text), names):
            where = str(path.relative_to(ROOT))
            line = lines[node.lineno - 1]
            if not any(where == known and snippet in line for known, snippet in _FOUND_AS_WORDS):
                lists.append(f"{where}:{node.lineno}: {line.strip()}")
    assert lists == []


def test_the_kind_list_finder_finds_a_list() -> None:
    tree = ast.parse('A = ("archive", "wheel")\nB = {"toolkit": 1, "folder": 2}\n'
                     'C = SourceKind("archive", ("archive", "wheel"))\nD = ("archive",)\n')
    assert [node.lineno for node in _kind_name_lists(tree, {"archive", "wheel", "toolkit",
                                                            "folder"})] == [1, 2]


def test_every_source_kind_is_known_through_its_record() -> None:
    """pack opens each kind with the class that names its record; the lock, init and
    the recipe loader read what they need of a kind from the same record."""
    from bundler.pack.sources import SOURCE_CLASSES
    from bundler.recipe.model import SOURCE_KINDS, SourceSpec

    assert set(SOURCE_CLASSES) == set(SOURCE_KINDS)
    for name, kind in SOURCE_KINDS.items():
        assert kind.name == name
        assert kind in SOURCE_CLASSES[name].reads          # pack: its reader
        assert kind.found_as                               # inspect and init: on disk
        spec = SourceSpec(id="cudnn", kind=name, contents=("bin/a.dll",),
                          file_name="a.zip", package="nvidia-x", version="1")
        assert spec.source_kind is kind
        assert kind.described(spec) and kind.example(spec, "12.4")   # init: its words
        assert isinstance(kind.one_file, bool)             # the lock: how it is pinned
        assert all(hasattr(spec, key) for key in kind.required)      # the recipe's keys
