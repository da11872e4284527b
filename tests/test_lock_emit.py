"""Pure logic of the lock, the entry injection and the load order."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.emit import INJECT_MARKER, inject_entry
from bundler.errors import LockError
from bundler.lock import Lock, check_lock, write_lock
from bundler.resolve import _topological


def test_lock_names_what_changed(tmp_path: Path) -> None:
    path = tmp_path / "app.spec.lock"
    old = Lock(recipe={"name": "r", "sha256": "1"}, sources={"cudnn": {"sha256": "a"}},
               files={"cudnn/x.dll": "1", "cudnn/y.dll": "2"})
    write_lock(path, old)
    check_lock(path, old, update=False)  # same inputs: fine
    new = Lock(recipe=old.recipe, sources={"cudnn": {"sha256": "b"}},
               files={"cudnn/x.dll": "9", "cudnn/z.dll": "3"})
    with pytest.raises(LockError) as caught:
        check_lock(path, new, update=False)
    message = caught.value.message
    for expected in ("source cudnn changed", "file cudnn/x.dll changed",
                     "file cudnn/y.dll removed", "file cudnn/z.dll added"):
        assert expected in message
    assert "--update-lock" in caught.value.hint
    check_lock(path, new, update=True)


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


def test_load_order_puts_dependencies_first() -> None:
    order = _topological({"ops": {"shim", "cublas"}, "cublas": {"lt", "rt"}, "lt": {"rt"},
                          "rt": set(), "shim": set()})
    assert order.index("rt") < order.index("lt") < order.index("cublas") < order.index("ops")
    assert order.index("shim") < order.index("ops")
