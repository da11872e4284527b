"""Pure logic of the lock, the entry injection and the load order."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bundler.errors import LockError
from bundler.pack.emit import INJECT_MARKER, inject_entry
from bundler.pack.lock import Lock, check_lock
from bundler.pack.resolve import load_order
from bundler.recipe.load import find_recipe
from bundler.windows.pe_file import PEInfo
from tests.harness.winenv.paths import PROJECT_ROOT


def test_lock_names_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "app.spec.lock"
    old = Lock(recipe={"name": "r", "sha256": "1"}, sources={"cudnn": {"sha256": "a"}},
               files={"cudnn/x.dll": "1", "cudnn/y.dll": "2"})
    path.write_bytes(old.to_bytes())
    check_lock(path, old, "follow")  # same inputs: fine
    new = Lock(recipe=old.recipe, sources={"cudnn": {"sha256": "b"}},
               files={"cudnn/x.dll": "9", "cudnn/z.dll": "3"})
    with pytest.raises(LockError) as caught:
        check_lock(path, new, "follow")
    message = caught.value.message
    for expected in ("source cudnn changed", "file cudnn/x.dll changed",
                     "file cudnn/y.dll removed", "file cudnn/z.dll added"):
        assert expected in message
    assert "--update-lock" in caught.value.hint


@pytest.mark.parametrize("damage", ["{not json", '{"recipe": "x", "sources": {}, "files": {}}',
                                    '{"files": {}}'])
def test_a_damaged_lock_is_named_and_mended_by_update(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "app.spec.lock"
    path.write_text(damage)
    new = Lock(recipe={"name": "r", "sha256": "1"}, sources={}, files={})
    with pytest.raises(LockError, match="not a valid lock file") as caught:
        check_lock(path, new, "follow")
    assert "--update-lock" in caught.value.hint
    check_lock(path, new, "update")  # --update-lock does not need to read it


def test_injection_goes_after_docstring_and_future_imports(tmp_path: Path) -> None:
    entry = tmp_path / "main.py"
    entry.write_text('"""Doc."""\nfrom __future__ import annotations\nimport os\nprint(1)\n')
    inject_entry(entry)
    lines = entry.read_text().splitlines()
    assert lines[0] == '"""Doc."""'
    assert lines[1] == "from __future__ import annotations"
    assert lines[2].startswith(INJECT_MARKER)
    assert lines[-2:] == ["import os", "print(1)"]
    compile(entry.read_text(), str(entry), "exec")
    before = entry.read_text()
    inject_entry(entry)  # a second pack does not inject twice
    assert entry.read_text() == before


def dll(*imports: str) -> PEInfo:
    return PEInfo(machine="AMD64", file_version="", product_version="",
                  imports=("KERNEL32.dll", *imports), delay_imports=())


def test_load_order_follows_imports_and_component_requirements() -> None:
    recipe = find_recipe("cudnn-8.0.3.33-cuda10.1-win-x64", PROJECT_ROOT)
    components = recipe.select(["cnn_infer"])
    infos = {  # cuBLAS imports cuBLASLt; the shim imports only KERNEL32
        "cudart64_101.dll": dll(), "cublasLt64_10.dll": dll("cudart64_101.dll"),
        "cublas64_10.dll": dll("cublasLt64_10.dll"), "cudnn64_8.dll": dll(),
        "cudnn_ops_infer64_8.dll": dll(), "cudnn_cnn_infer64_8.dll": dll(),
    }
    order = load_order(recipe, components, infos)
    position = {name: order.index(name) for name in infos}
    assert position["cudart64_101.dll"] < position["cublasLt64_10.dll"]
    assert position["cublasLt64_10.dll"] < position["cublas64_10.dll"]
    # ops_infer imports nothing, but its component requires core, cuBLAS and cudart
    assert max(position["cudnn64_8.dll"], position["cublas64_10.dll"]) < position[
        "cudnn_ops_infer64_8.dll"] < position["cudnn_cnn_infer64_8.dll"]
    assert load_order(recipe, components, dict(reversed(infos.items()))) == order


@pytest.mark.parametrize("source, encoding", [
    ('"""Doc."""\r\nimport os\r\nprint(os.sep)\r\n', "utf-8-sig"),       # Notepad: BOM + CRLF
    ('"""Doc\x0cwith a form feed\u2028and a separator."""\nprint(1)\n', "utf-8"),
    ('# -*- coding: latin-1 -*-\n"""Caf\xe9."""\nprint(1)\n', "latin-1"),
], ids=["bom-crlf", "form-feed-in-docstring", "latin-1-cookie"])
def test_injection_respects_how_python_reads_the_file(tmp_path: Path, source: str,
                                                      encoding: str) -> None:
    entry = tmp_path / "main.py"
    entry.write_bytes(source.encode(encoding))
    inject_entry(entry)
    raw = entry.read_bytes()
    if encoding == "utf-8-sig":
        assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw and b"\n" not in raw.replace(
            b"\r\n", b"")
    text = raw.decode(encoding)
    tree = ast.parse(text)
    first_statement_after_docstring = tree.body[1]
    assert isinstance(first_statement_after_docstring, ast.Import)
    assert first_statement_after_docstring.names[0].name == "sys"   # docs/bootstrap.md
    assert ast.get_docstring(tree) == ast.get_docstring(ast.parse(source))


def test_shebang_and_coding_line_stay_on_top(tmp_path: Path) -> None:
    entry = tmp_path / "main.py"
    source = '#!/usr/bin/env python\n# -*- coding: latin-1 -*-\nprint("caf\xe9")\n'
    entry.write_bytes(source.encode("latin-1"))
    inject_entry(entry)
    lines = entry.read_bytes().decode("latin-1").splitlines()
    assert lines[:2] == source.splitlines()[:2]
    assert lines[2].startswith(INJECT_MARKER)
    assert lines[-1] == 'print("caf\xe9")'
    compile(entry.read_bytes(), str(entry), "exec")  # Python still reads it as latin-1


def test_a_lock_whose_source_is_not_a_table_is_a_damaged_lock(tmp_path: Path) -> None:
    """Found by tests/integration/test_fuzz.py: a source's pins were read with .get (exit 3)."""
    import json

    from bundler.errors import LockError
    from bundler.formats.lockfile import read_lock

    path = tmp_path / "app.spec.lock"
    path.write_text(json.dumps({"format": 1, "recipe": {}, "sources": {"cudnn": []},
                                "files": {}}))
    with pytest.raises(LockError, match="each source must be a table"):
        read_lock(path)
