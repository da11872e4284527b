"""The README's two set-up commands are the ones CI runs and they name real files."""

from __future__ import annotations

import re

from tests.winenv import PROJECT_ROOT


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
