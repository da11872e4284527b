"""bundler unpacks the exact wheel set itself (bundler/pack/builders/wheel_install.py):
the same files, bytes and places as `pip install --target --no-deps --no-compile` of
the same wheel (what the builder ran before), less what pip writes for this machine
(`#!` scripts); a member that would land outside site-packages is refused."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.pack.builders.wheel_install import install_wheels

FILES = {
    "demo_c/__init__.py": b"VALUE = 1\n",
    "demo_c/native.pyd": b"MZ\x90\x00 not really a dll",
    "demo_c-3.0.data/purelib/demo_c_extra.py": b"EXTRA = 2\n",
    "demo_c-3.0.data/platlib/demo_c_plat/__init__.py": b"",
    "demo_c-3.0.data/data/share/demo_c/table.txt": b"a table\n",
    "demo_c-3.0.data/headers/demo_c.h": b"int demo(void);\n",
    "demo_c-3.0.data/scripts/demo-c.exe": b"MZ a launcher",
    "demo_c-3.0.data/scripts/demo-c-script": b"#!python\nprint(1)\n",
    "demo_c-3.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-c\nVersion: 3.0\n",
    "demo_c-3.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                  b"Root-Is-Purelib: false\nTag: py3-none-any\n",
    "demo_c-3.0.dist-info/RECORD": b"",
}


def wheel_of(folder: Path, files: dict[str, bytes]) -> Path:
    wheel = folder / "demo_c-3.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in folder.rglob("*") if p.is_file()}


def test_the_wheel_lands_where_pip_puts_it(tmp_path: Path) -> None:
    wheel = wheel_of(tmp_path, FILES)
    ours, pips = tmp_path / "ours", tmp_path / "pip"
    install_wheels([wheel], ours)
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                    "--no-compile", "--disable-pip-version-check", "--target", str(pips),
                    str(wheel)], check=True, capture_output=True)
    bookkeeping = ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json")
    mine, theirs = tree(ours), tree(pips)

    def kept(files: dict[str, bytes]) -> dict[str, bytes]:
        # Headers: where pip puts them under --target depends on the Python running pip
        # (include/python/<dist>/, but include/site/python3.X/<dist>/ from a venv's
        # sysconfig scheme), so they are compared apart, by content.
        return {name: data for name, data in files.items()
                if Path(name).name not in bookkeeping and not data.startswith(b"#!")
                and not name.startswith("include/")}
    assert kept(mine) == kept(theirs)
    headers = [data for name, data in theirs.items() if name.startswith("include/")]
    assert headers == [FILES["demo_c-3.0.data/headers/demo_c.h"]]
    assert mine["include/python/demo-c/demo_c.h"] == headers[0]
    assert "bin/demo-c-script" in theirs and "bin/demo-c-script" not in mine
    assert mine["demo_c-3.0.dist-info/INSTALLER"] == b"bundler\n"
    record = mine["demo_c-3.0.dist-info/RECORD"].decode().splitlines()
    assert set(line.split(",")[0] for line in record) == set(mine)
    assert "demo_c_extra.py,sha256=" in mine["demo_c-3.0.dist-info/RECORD"].decode()


@pytest.mark.parametrize("name", ["../escape.py", "/abs.py", "demo_c/..\\..\\x.py"])
def test_a_member_outside_site_packages_is_refused(tmp_path: Path, name: str) -> None:
    wheel = wheel_of(tmp_path, {**FILES, name: b"x"})
    with pytest.raises(SourceError, match="would be written outside site-packages"):
        install_wheels([wheel], tmp_path / "site")
    assert not (tmp_path / "escape.py").exists()
