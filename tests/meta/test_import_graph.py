"""bundler's import graph has no cycles, and docs/architecture.md lists every module.

A cycle means two modules can only be understood (and imported) together: the split
between them is a cut at a ruler, not a seam. Imports inside functions count too (a lazy
import hides a cycle from Python, not from a reader); those under `if TYPE_CHECKING:`
do not (they exist for annotations alone)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bundler"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of import nodes inside `if TYPE_CHECKING:` blocks."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return hidden


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The bundler modules `name` imports (`from a import b` names a.b when b is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hidden = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    mod = tmp_path / "pkg" / "one.py"
    mod.write_text("from typing import TYPE_CHECKING\n"
                   "if TYPE_CHECKING:\n    from pkg import three\n"
                   "def f():\n    from . import two\n", encoding="utf-8")
    known = {"pkg.one": mod, "pkg.two": mod, "pkg.three": mod}
    assert imports_of("pkg.one", mod, known) == {"pkg.two"}


def test_bundler_has_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_architecture_md_lists_every_module_as_the_code_says() -> None:
    """docs/architecture.md's module index is generated from the modules' docstrings
    (tools/module_index.py): a module added, moved or removed without re-running it, or
    one whose docstring changed, fails here."""
    from tools import module_index

    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert module_index.with_index(text) == text, (
        "docs/architecture.md's module index is out of date: python3 -m tools.module_index")


def test_the_module_index_names_each_module_once() -> None:
    from tools import module_index

    listed = re.findall(r"^\| `([^`]+)` \|", module_index.index(), re.MULTILINE)
    modules = [p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(listed) == len(set(listed)) >= len(modules)
    assert {p.relative_to(ROOT).as_posix() for p in modules} <= set(listed)
