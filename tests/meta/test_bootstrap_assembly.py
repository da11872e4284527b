"""The bootstrap pack ships, assembled per platform (pack/emit.py, docs/bootstrap.md):
for each platform one file of the standard library only, in Python 3.7's grammar, with
that platform's loader alone and no question of which OS it runs on, and short. Also
report()'s "libraries" with "dlls", its deprecated alias, and which pieces bundler
itself imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from bundler.pack.emit import bootstrap_text
from bundler.runtime import activation
from bundler.targets.registry import all_platforms

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 310   # a platform's whole bootstrap, as an app carries it
# The one function that names the OS it runs on, in its message alone: a bundle for
# another OS says so in one line instead of doing nothing (it decides nothing).
SAYS_THE_OS = "_not_for_this_os"
PLATFORMS = {p.name: p for p in all_platforms()}
# What only one loader defines: the other platform's file must hold none of it.
LOADER_ONLY = {"windows": {"_kernel32", "_load_one", "_activate_windows"},
               "linux": {"_soname", "_link_map", "_activate_linux"}}


def _shipped(name: str) -> str:
    return bootstrap_text("cudnn", PLATFORMS[name])


def imports_beyond_the_standard_library(tree: ast.Module) -> list[str]:
    relative = [f".{n.module}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and n.level]
    named = [alias.name for n in ast.walk(tree) if isinstance(n, ast.Import)
             for alias in n.names] + [n.module or "" for n in ast.walk(tree)
                                      if isinstance(n, ast.ImportFrom) and not n.level]
    return relative + [m for m in named if m.split(".")[0] not in sys.stdlib_module_names]


def os_questions(tree: ast.Module) -> list[str]:
    """Each `os.name`, `sys.platform` and platform.system() in the text, but in the
    message of SAYS_THE_OS."""
    asked = {("os", "name"), ("sys", "platform"), ("platform", "system")}
    said = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef)
            and f.name == SAYS_THE_OS for n in ast.walk(f)}
    return [f"{n.value.id}.{n.attr} (line {n.lineno})" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and (n.value.id, n.attr) in asked and id(n) not in said]


def defined(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_the_shipped_bootstrap_imports_the_standard_library_only(name: str) -> None:
    assert imports_beyond_the_standard_library(ast.parse(_shipped(name))) == []


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_the_shipped_bootstrap_is_python_3_7(name: str) -> None:
    """The app's Python may be 3.7 (tests/wine/test_bootstrap_old_python.py runs 3.8)."""
    ast.parse(_shipped(name), feature_version=(3, 7))


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_the_shipped_bootstrap_asks_no_os_and_holds_its_loader_alone(name: str) -> None:
    tree = ast.parse(_shipped(name))
    own = PLATFORMS[name].os_name.lower()
    others = set().union(*(names for os_name, names in LOADER_ONLY.items() if os_name != own))
    assert os_questions(tree) == []
    assert LOADER_ONLY[own] <= defined(tree) and not others & defined(tree)
    assert [n for n in tree.body if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "LOADER" for t in n.targets)] != []


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_the_shipped_bootstrap_is_short(name: str) -> None:
    text = _shipped(name)
    assert len(text.splitlines()) <= MAX_LINES


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_the_shipped_bootstrap_keeps_its_public_functions(name: str) -> None:
    """Pack leaves out what the platform never calls, never what an app calls."""
    assert {"activate", "report", "read_manifest", "BundledRuntimeError"} <= defined(
        ast.parse(_shipped(name)))


def test_the_checks_see_what_they_look_for() -> None:
    """Each check above fails on a text that breaks its rule."""
    bad = ast.parse("import os, numpy\nfrom .common import x\n"
                    "if os.name == 'nt':\n    pass\nimport sys\nsys.platform\n"
                    f"def {SAYS_THE_OS}():\n    print(sys.platform)\n")
    assert imports_beyond_the_standard_library(bad) == [".common", "numpy"]
    assert sorted(os_questions(bad)) == ["os.name (line 3)", "sys.platform (line 6)"]
    with pytest.raises(SyntaxError):
        ast.parse("if (n := 1):\n    pass\n", feature_version=(3, 7))


def test_bundler_imports_the_rules_and_the_windows_probe_never_the_activation() -> None:
    """Doctor and verify --run share the bootstrap's rules (runtime/rules.py) and its
    Windows driver probe; no module of bundler imports the piece that activates."""
    imported = set()
    for path in (ROOT / "bundler").rglob("*.py"):
        if path.parent.name == "runtime":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "bundler.runtime"):
                imported.add(node.module)
    assert imported <= {"bundler.runtime.rules", "bundler.runtime.loader_windows"}
    assert "bundler.runtime.rules" in imported


def test_report_lists_the_libraries_and_dlls_as_their_alias(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(activation, "_loaded", [("cudnn/a.dll", "C:/app/cudnn/a.dll", 1)])
    monkeypatch.setattr(activation, "_manifest",
                        {"files": [{"path": "cudnn/a.dll", "version": "8.0.3"}]})
    monkeypatch.setattr(activation, "LOADER",
                        {"loaded_from": lambda loaded: {"cudnn/a.dll": "C:/app/cudnn/a.dll"}})
    report = activation.report()
    assert report["libraries"] == [{"file": "cudnn/a.dll", "version": "8.0.3",
                                    "loaded_from": "C:/app/cudnn/a.dll"}]
    assert report["dlls"] == report["libraries"]
