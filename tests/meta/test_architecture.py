"""The shape of the code: the three products stay apart, each fact has one home, and the
project documents itself. Read from the source tree; nothing runs."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from bundler.pack.builders import BUILDERS
from bundler.pack.sources import SOURCE_CLASSES
from bundler.recipe.load import SOURCE_KINDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bundler"
MODULES = sorted(PACKAGE.rglob("*.py"))
MAX_LINES = 400


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def _product(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0] if path.parent != PACKAGE else path.stem


def _where(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


# Keyed by a path below bundler/ (a folder ends in "/"): what a module there never imports.
# A module under several keys obeys each.
IMPORT_RULES = {
    "pack/": ("bundler.diagnose",), "diagnose/": ("bundler.pack",),
    "runtime/": ("bundler",),
    # each OS package knows its OS alone; the shapes both fill are shared
    "windows/": ("bundler.pack", "bundler.diagnose", "bundler.recipe", "bundler.releases",
                 "bundler.linux"),
    "linux/": ("bundler.pack", "bundler.diagnose", "bundler.recipe", "bundler.releases",
               "bundler.windows"),
    "platforms/library_facts.py": ("bundler.pack", "bundler.diagnose", "bundler.windows",
                                   "bundler.linux", "bundler.recipe"),
    "platforms/driver_table.py": ("bundler.pack", "bundler.diagnose", "bundler.windows",
                                  "bundler.linux", "bundler.recipe"),
    # what frameworks say they need: pack, init and doctor share the one rule
    "frameworks/facts.py": ("bundler.pack", "bundler.diagnose", "bundler.windows",
                            "bundler.linux", "bundler.recipe"),
    "frameworks/loaded_names.py": ("bundler.pack", "bundler.diagnose", "bundler.windows",
                                   "bundler.linux"),
    "support/": ("bundler.pack", "bundler.diagnose", "bundler.windows"),
    "formats/": ("bundler.pack", "bundler.diagnose"),
    "formats/swap_journal.py": ("bundler.windows",),
    "recipe/": ("bundler.pack", "bundler.diagnose"),
    # the release catalogue renders recipe text; recipe/ loads it, not the reverse
    "releases/": ("bundler.pack", "bundler.diagnose", "bundler.recipe"),
}


def _banned(path: Path) -> tuple[str, ...]:
    where = _where(path)
    return tuple(module for key, modules in IMPORT_RULES.items()
                 if where == key or (key.endswith("/") and where.startswith(key))
                 for module in modules)


def test_no_module_is_longer_than_a_sitting() -> None:
    long = {str(p.relative_to(ROOT)): n for p in MODULES
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_module_is_named_like_a_standard_library_module() -> None:
    shadowing = [str(p.relative_to(ROOT)) for p in MODULES
                 if p.stem in sys.stdlib_module_names or p.parent.name in sys.stdlib_module_names]
    assert shadowing == []


def test_the_products_do_not_import_each_other() -> None:
    """pack and diagnose share knowledge (formats, recipe, platforms, support), never each
    other; the shipped bootstrap imports nothing of bundler; the knowledge layers import
    no product."""
    crossing = sorted(f"{p.relative_to(ROOT)} imports {module}" for p in MODULES
                      for module in _imports(p)
                      if (banned := _banned(p)) and _names(module, banned))
    assert crossing == []


def _names(module: str, packages: tuple[str, ...]) -> bool:
    """Whether `module` is one of `packages` or inside one (bundler.recipe, not
    bundler.recipes)."""
    return any(module == name or module.startswith(name + ".") for name in packages)


def test_the_import_rules_name_real_places() -> None:
    """A rule keyed by a path that no longer exists would guard nothing."""
    gone = [key for key in IMPORT_RULES if not (PACKAGE / key).exists()]
    assert gone == []


# The OS packages, and the seam that chooses one (bundler/targets/registry.py).
PLATFORM_PACKAGES = ("windows", "linux")
SEAM = "targets/registry.py"


def test_only_the_seam_knows_the_platform_packages() -> None:
    """Platform knowledge (PE files, DLL names, Authenticode, the Windows driver table)
    lives in bundler/windows/; everything else asks bundler.targets.registry."""
    leaking = sorted(f"{p.relative_to(ROOT)} imports {module}" for p in MODULES
                     for module in _imports(p)
                     if _product(p) not in PLATFORM_PACKAGES and _where(p) != SEAM
                     and _names(module, tuple(f"bundler.{n}" for n in PLATFORM_PACKAGES)))
    assert leaking == []


# Outside the platform packages and the seam, these may still ask the OS bundler runs on:
# support/ (bundler's own file locks and cache folders, not a target platform's
# knowledge). The shipped bootstrap holds its platform's loader only: it asks nothing.
OS_QUESTIONS_ALLOWED = ("support/",)
# The bootstrap names the OS it runs on in one message, deciding nothing by it: a bundle
# for another OS says so (test_bootstrap_assembly.py checks it is that message alone).
OS_QUESTIONS_SAID = {"runtime/activation.py": 1}
OS_QUESTIONS = {("os", "name"), ("sys", "platform"), ("platform", "system")}
# Literal platform tags and library suffixes: a check against one is a platform's
# knowledge (Platform.wheel_tag, .machine, .is_library, .library_file).
PLATFORM_LITERALS = {"nt", "win32", "win_amd64", "amd64", ".dll", "*.dll"}
PLATFORM_LITERALS_LEFT: dict[str, int] = {}   # by file: how many may stay (none now)


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree) if isinstance(node, kinds)
            and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def _platform_knowledge(path: Path) -> tuple[list[str], list[str]]:
    """(OS questions: os.name, sys.platform, platform.system; platform literals)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstrings(tree)
    questions = [f"line {n.lineno}: {n.value.id}.{n.attr}" for n in ast.walk(tree)
                 if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                 and (n.value.id, n.attr) in OS_QUESTIONS]
    literals = [f"line {n.lineno}: {n.value!r}" for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and isinstance(n.value, str)
                and id(n) not in docstrings and n.value.lower() in PLATFORM_LITERALS]
    return questions, literals


def test_no_platform_knowledge_outside_the_platform_packages() -> None:
    """Which OS this is (os.name, sys.platform) is asked through platforms.this_machine();
    a platform's tags and library suffixes come from its Platform. A new `os.name ==
    "nt"` branch or `.endswith(".dll")` anywhere else fails here."""
    asking, literal = {}, {}
    for path in MODULES:
        relative = path.relative_to(PACKAGE).as_posix()
        if _product(path) in PLATFORM_PACKAGES or relative == SEAM:
            continue
        questions, literals = _platform_knowledge(path)
        if relative.startswith(OS_QUESTIONS_ALLOWED):   # and the answers they compare
            questions = []
            literals = [t for t in literals if t.split(": ", 1)[1] not in ("'nt'", "'win32'")]
        if len(questions) > OS_QUESTIONS_SAID.get(relative, 0):
            asking[relative] = questions
        if len(literals) > PLATFORM_LITERALS_LEFT.get(relative, 0):
            literal[relative] = literals
    assert asking == {} and literal == {}


def test_the_bootstrap_uses_the_standard_library_only() -> None:
    """The one file pack ships for each platform (the shared part and that platform's
    loader, joined by emit.py), with no import of bundler left in it."""
    from bundler.pack.emit import bootstrap_text
    from bundler.targets.registry import all_platforms

    for platform in all_platforms():
        tree = ast.parse(bootstrap_text("cudnn", platform))
        relative = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        imported = {alias.name.split(".")[0] for n in ast.walk(tree)
                    if isinstance(n, ast.Import) for alias in n.names}
        assert relative == [] and imported <= set(sys.stdlib_module_names), platform.name


def test_each_source_kind_has_a_reader() -> None:
    assert set(SOURCE_CLASSES) == set(SOURCE_KINDS)


def test_every_package_in_the_tree_is_installed() -> None:
    from bundler.support.toml_tables import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])
    packages = {".".join(p.parent.relative_to(ROOT).parts) for p in PACKAGE.rglob("__init__.py")}
    assert packages <= listed


def test_builders_are_listed_once() -> None:
    """The spec accepts exactly the builders the table implements: it reads the table."""
    from bundler.pack import spec

    assert spec.BUILDERS is BUILDERS


def test_the_project_documents_itself() -> None:
    """Hints, docstrings and docs point inside the project, never to files outside it."""
    texts = [*MODULES, ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "recipes").glob("*.toml"), *(ROOT / "examples").rglob("*.spec"),
             *(PACKAGE / "windows").glob("*.toml")]
    outside = [str(p.relative_to(ROOT)) for p in texts
               if "DESIGN.md" in (text := p.read_text(encoding="utf-8")) or "../shared" in text]
    assert outside == []


def _keys_asked(load: object) -> set[str]:
    """Every key the loader looks for (optional ones included: Table.take is asked for
    each, present or not) while `load()` runs."""
    from bundler.support import toml_tables

    asked: set[str] = set()
    real_take = toml_tables.Table.take

    def recording(self: toml_tables.Table, key: str, *args: object, **kwargs: object) -> object:
        asked.add(key)
        return real_take(self, key, *args, **kwargs)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toml_tables.Table, "take", recording)
        load()  # type: ignore[operator]
    return asked


def test_every_spec_and_recipe_key_is_documented() -> None:
    from bundler.pack.spec import load_spec
    from bundler.recipe.load import load_recipe_file, shipped_recipes
    from bundler.targets.registry import all_platforms

    for platform in all_platforms():   # their own TOML is read once, here, not recorded
        platform.facts()
        platform.driver_table()

    specs = sorted((ROOT / "examples").rglob("*.spec"))
    specs = [s for s in specs if "[app]" in s.read_text(encoding="utf-8")]
    spec_keys = _keys_asked(lambda: [load_spec(s) for s in specs])
    recipe_keys = _keys_asked(lambda: [load_recipe_file(r.path) for r in shipped_recipes()])
    spec_keys -= {"app", "runtime", "sources"} | {
        sid for s in specs for sid in load_spec(s).sources}
    recipe_keys -= {name for r in shipped_recipes()
                    for name in (*r.sources, *r.components, *r.files, *r.signers)}
    for keys, page in ((spec_keys, "spec-format.md"), (recipe_keys, "recipe-format.md")):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        documented = ["`{k}`", "{k} = ", "[{k}.", "[{k}]"]   # a key, an example, a table
        assert sorted(k for k in keys if not any(f.format(k=k) in text for f in documented)
                      ) == [], page


def test_every_manifest_and_lock_field_is_documented() -> None:
    from dataclasses import fields

    from bundler.formats import manifest
    from bundler.formats.lockfile import Lock

    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    kinds = (manifest.Manifest, manifest.FileEntry, manifest.BootstrapEntry,
             manifest.Versions, manifest.RecipeRef, Lock)
    missing = [f"{kind.__name__}.{f.name}" for kind in kinds for f in fields(kind)
               if f"`{f.name}`" not in text]
    assert missing == []


def test_windows_toml_is_read_strictly(tmp_path: Path) -> None:
    """A key the code does not read (a typo, a fact the code forgot) fails."""
    from bundler.errors import BundlerError
    from bundler.support.toml_tables import tomllib
    from bundler.windows.facts import parse_windows_facts

    path = PACKAGE / "windows" / "windows.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert parse_windows_facts(data, path).is_driver("NVCUDA.DLL")
    with pytest.raises(BundlerError, match="driverr"):
        parse_windows_facts({**data, "driverr": ["nvcuda.dll"]}, path)


def test_a_recipe_for_a_platform_bundler_does_not_know_is_refused() -> None:
    """An unknown platform would otherwise skip its machine and name checks."""
    from bundler.errors import RecipeError
    from bundler.recipe.load import load_recipe_text

    text = (ROOT / "recipes" / "cudnn-8.9.4.25-cuda11-win-x64.toml").read_text()
    with pytest.raises(RecipeError, match="platform 'win-arm64' is not one bundler knows"):
        load_recipe_text(text.replace('platform = "win-amd64"', 'platform = "win-arm64"')
                         .encode(), Path("arm.toml"))


def test_the_platform_compares_library_names_as_its_os_does() -> None:
    from bundler.targets.registry import platform_for

    windows = platform_for("win-amd64")
    assert windows.same_name("CUDNN64_8.DLL", "cudnn64_8.dll")
    assert windows.is_library("cuBLAS64_12.DLL") and not windows.is_library("cudnn.h")
    assert windows.matches("CUDNN64_9.dll", ["cudnn*.dll"])
