"""The platform seam is symmetric (issue 29 item 2): one `Platform` Protocol in
platforms/api.py that imports nothing of bundler, one class per OS implementing every
member, OS packages that import neither each other nor the registry (no cycle), and the
registry the one place that names a platform. Read from the source tree and the
classes; nothing runs but imports."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

import pytest

from bundler.linux.linux_platform import LinuxPlatform
from bundler.platforms import api
from bundler.targets.registry import all_platforms, platform_of_file
from bundler.windows.windows_platform import WindowsPlatform

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bundler"
OS_PACKAGES = ("windows", "linux")
SEAM = ("platforms", "targets", "windows", "linux")

def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _runtime_imports(tree: ast.Module) -> set[str]:
    """Modules imported when the file runs: an `if TYPE_CHECKING:` block is for the
    type checker only."""
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
               and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
               for n in ast.walk(node)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def _names_a_platform(tree: ast.Module) -> bool:
    """Whether the module imports or calls `windows`/`linux` (the platform by name)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "bundler.targets.registry" \
                and any(a.name in ("windows", "linux") for a in node.names):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            if name in ("windows", "linux") and not node.args:
                return True
    return False


def test_the_interface_imports_nothing_of_bundler() -> None:
    imports = _runtime_imports(_tree(PACKAGE / "platforms" / "api.py"))
    assert not [m for m in imports if m == "bundler" or m.startswith("bundler.")]


def test_os_packages_import_no_other_os_package_nor_the_registry() -> None:
    for package in OS_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            imports = _runtime_imports(_tree(path))
            others = [m for m in imports for other in OS_PACKAGES if other != package
                      and (m == f"bundler.{other}" or m.startswith(f"bundler.{other}."))]
            assert not others, f"{path.relative_to(ROOT)} imports {others}"
            assert "bundler.targets.registry" not in imports, (
                f"{path.relative_to(ROOT)} imports the registry: the import cycle is back")


def _protocol_members() -> set[str]:
    members = set(api.Platform.__annotations__)
    members |= {name for name, _ in inspect.getmembers(api.Platform, inspect.isfunction)
                if not name.startswith("_")}
    return members


@pytest.mark.parametrize("cls", [WindowsPlatform, LinuxPlatform])
def test_each_os_class_implements_every_member(cls: type) -> None:
    members = _protocol_members()
    assert {"probe_driver", "bare_name_search", "check_signature", "read_library"} <= members
    missing = sorted(m for m in members if getattr(cls, m, None) is None)
    assert not missing, f"{cls.__name__} lacks {missing}"
    extra = sorted(n for n in vars(cls) if not n.startswith("_") and n not in members)
    assert not extra, f"{cls.__name__} has members the Protocol does not name: {extra}"


def test_every_registered_platform_is_a_platform() -> None:
    assert {type(p) for p in all_platforms()} == {WindowsPlatform, LinuxPlatform}
    assert all(isinstance(p, api.NameRules) for p in all_platforms())


def test_a_file_is_of_the_platform_its_header_names(tmp_path: Path) -> None:
    dll = ROOT / "examples/quickstart/standin-cuda/v10.1/bin/cudart64_101.dll"
    found = platform_of_file(dll)
    assert found is not None and found.os_name == "Windows"
    python = Path(sys.executable).resolve()
    if python.read_bytes()[:4] == b"\x7fELF":   # named like neither platform's library
        found = platform_of_file(python)
        assert found is not None and found.os_name == "Linux"
    renamed = tmp_path / "cudart64_101.so"
    renamed.write_bytes(dll.read_bytes())
    found = platform_of_file(renamed)
    assert found is not None and found.os_name == "Windows"
    text = tmp_path / "fake.dll"
    text.write_text("not a library")
    assert platform_of_file(text) is None


def test_no_module_outside_the_seam_names_a_platform() -> None:
    """Outside platforms/, targets/, windows/ and linux/ a platform is asked for by what is
    examined (a recipe, a manifest, a file's header, this machine), never by name."""
    naming = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        if where.split("/")[0] in SEAM:
            continue
        if _names_a_platform(_tree(path)):
            naming.add(where)
    assert naming == set(), f"callers of windows()/linux() outside the seam: {sorted(naming)}"
