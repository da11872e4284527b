"""Windows refuses to delete a read-only file; runtime files linked from the runtime
store are read-only. The folders bundler removes (staging, a retired bundle) must go
all the same: run under Wine with the Windows CPython."""

from __future__ import annotations

from pathlib import Path

from tests.harness.winenv import WindowsPython
from tests.harness.winenv.winpython import to_windows_path

CODE = r"""
import os, stat, sys
from bundler.support.paths import remove_tree
folder = sys.argv[1]
os.makedirs(os.path.join(folder, "cudnn"))
for name in ("cudnn64_8.dll", "manifest.json"):
    path = os.path.join(folder, "cudnn", name)
    with open(path, "wb") as handle:
        handle.write(b"MZ")
    os.chmod(path, stat.S_IREAD)
remove_tree(folder)
print("gone" if not os.path.exists(folder) else "left: " + repr(os.listdir(folder)))
"""


def test_a_folder_of_read_only_files_is_removed_on_windows(win_python: WindowsPython,
                                                           tmp_path: Path) -> None:
    result = win_python.run_code(CODE, [to_windows_path(tmp_path / "retired")], check=True)
    assert result.stdout.strip() == "gone", result.stdout + result.stderr
