"""Filling in bundler's own templates (the bootstrap, the PyInstaller wrapper spec): a
template that lost its placeholder line is a BuildError naming it, also under
`python -O` (which drops asserts), never a bootstrap shipped with the default."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Under -O, with one file of bundler's package (argv[2]) read as damaged: it lost its
# placeholder line. Then the PyInstaller builder prepares its build, which fills in
# both templates. argv[1]: a folder holding a pyinstaller-builder spec.
_CHECK = """
import sys
from importlib import resources
from pathlib import Path
from bundler.pack.builders.pyinstaller import freeze
from bundler.errors import BuildError
from bundler.pack.spec import load_spec

folder, damaged = Path(sys.argv[1]), sys.argv[2]
real_files = resources.files

class Package:
    def __init__(self, package):
        self.package = package

    def joinpath(self, name):
        return Damaged() if name == damaged else real_files(self.package).joinpath(name)

class Damaged:
    def read_text(self, encoding=None):
        return "print('no placeholder here')\\n"

resources.files = Package
try:
    freeze(load_spec(folder / "app.spec"), folder / "staging", frozenset())
except BuildError as exc:
    print(exc.message)
"""


@pytest.mark.parametrize("damaged, line", [
    ("common.py", 'RUNTIME_DIR = "cudnn"'),   # the bootstrap's piece that holds it
    ("pyinstaller_wrapper.py", "PARAMS: dict = {}  # set by bundler pack"),
])
def test_a_template_without_its_placeholder_is_refused_even_under_O(
        tmp_path: Path, damaged: str, line: str) -> None:
    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "app.spec").write_text(
        '[app]\nname = "x"\nbuilder = "pyinstaller"\nscript = "main.py"\n'
        '[runtime]\nrecipe = "cudnn-8.0.3.33-cuda10.1-win-x64"\n')
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-O", "-c", _CHECK, str(tmp_path), damaged],
                          capture_output=True, text=True, cwd=root, check=True)
    assert done.stdout.strip() == f"bundler's {damaged} has no line {line!r} to fill in"
