"""The README's two set-up commands are the ones CI runs and they name real files; what
it quotes the tool printing is what the tool prints."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness.packing import bundler_cli
from tests.harness.winenv import PROJECT_ROOT


def commands() -> list[str]:
    readme = (PROJECT_ROOT / "README.md").read_text()
    try_it = readme.split("## Try it", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", try_it)


def test_exactly_two_commands_and_ci_runs_the_second() -> None:
    quickstart, tests = commands()
    ci = (PROJECT_ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci == tests
    assert "BUNDLER_REQUIRE_WINE=1" in tests and "tests/setup.sh" in tests


def test_the_quickstart_command_names_files_that_exist() -> None:
    quickstart, _ = commands()
    assert quickstart.startswith("pip install -e . && bundler pack ")
    spec = quickstart.split("bundler pack ", 1)[1].split()[0]
    assert (PROJECT_ROOT / spec).is_file()


def try_it() -> str:
    return (PROJECT_ROOT / "README.md").read_text().split("## Try it", 1)[1].split("\n## ", 1)[0]


def test_the_quickstart_prints_the_counts_readme_quotes(tmp_path: Path) -> None:
    """README quotes what pack and verify print for the quickstart: the tool's own words."""
    runtime_files = re.search(r'\("(\d+ runtime files)"\)', try_it())
    files_match = re.search(r'\("(ok: \d+ files match) …"\)', try_it())
    assert runtime_files and files_match
    quickstart = tmp_path / "quickstart"
    shutil.copytree(PROJECT_ROOT / "examples" / "quickstart", quickstart,
                    ignore=shutil.ignore_patterns("dist", "*.lock"))
    pack = bundler_cli("pack", quickstart / "app.spec", capture=True)
    assert pack.returncode == 0 and runtime_files[1] in pack.stdout, pack.stderr
    verify = bundler_cli("verify", quickstart / "dist" / "quickstart", capture=True)
    assert verify.returncode == 0 and verify.stdout.startswith(files_match[1]), verify.stdout


def test_the_seed_is_where_readme_says(tmp_path: Path) -> None:
    """Under -q the random order's seed is printed at the end, in the words README quotes."""
    quoted = re.search(r"under `-q`\s+the seed is printed at the end \(`([^`]+)`\)", try_it())
    assert quoted
    line = re.compile(re.escape(quoted[1]).replace("N", r"\d+"))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "tests/meta/test_readme.py::test_exactly_two_commands_and_ci_runs_the_second"],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, check=False)
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 0 and any(line.fullmatch(x) for x in lines[-2:]), run.stdout
