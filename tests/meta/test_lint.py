"""The code stays clean: ruff on everything, mypy on the package."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.harness.winenv import PROJECT_ROOT


def test_ruff_is_clean() -> None:
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    result = subprocess.run(["ruff", "check", "bundler", "tests", "bench", "tools"],
                            cwd=PROJECT_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_mypy_is_clean() -> None:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    result = subprocess.run([sys.executable, "-m", "mypy"], cwd=PROJECT_ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout
