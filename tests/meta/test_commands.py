"""Each command is one module of bundler/commands/ (`cmd_<name>.py`, exporting
`add_parser` and `run`), and `bundler`'s parser is built from that list and nothing else:
a command added as a module and listed in COMMANDS is a command, one left out is not."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import bundler.cli
import bundler.commands
from bundler.commands import COMMANDS

FOLDER = Path(bundler.commands.__file__).parent


def _subcommands(parser: object) -> list[str]:
    actions = [a for a in parser._actions if a.dest == "command"]  # type: ignore[attr-defined]
    return list(actions[0].choices)


def test_every_command_is_one_module_with_add_parser_and_run() -> None:
    modules = sorted(p.stem for p in FOLDER.glob("cmd_*.py"))
    assert modules == sorted(m.__name__.rsplit(".", 1)[1] for m in COMMANDS)
    assert set(modules) == {"cmd_pack", "cmd_cache", "cmd_verify", "cmd_inspect",
                            "cmd_doctor", "cmd_recipes", "cmd_init"}
    for module in COMMANDS:
        assert callable(module.add_parser) and callable(module.run), module.__name__
        assert list(inspect.signature(module.add_parser).parameters) == ["commands", "shared"]
        assert list(inspect.signature(module.run).parameters) == ["args"]


def test_the_parser_is_built_from_the_list() -> None:
    parser = bundler.cli.build_parser()
    assert _subcommands(parser) == [m.__name__.rsplit("_", 1)[1] for m in COMMANDS]
    for module in COMMANDS:   # each command runs its own module's run
        name = module.__name__.rsplit("_", 1)[1]
        words = {"pack": ["x.spec"], "verify": ["d"], "inspect": ["p"], "init": ["a"]}
        assert parser.parse_args([name, *words.get(name, [])]).run is module.run


def test_a_command_left_out_of_the_list_is_no_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundler.cli, "COMMANDS", COMMANDS[1:])
    assert COMMANDS[0].__name__.rsplit("_", 1)[1] not in _subcommands(bundler.cli.build_parser())


def test_cli_holds_no_command_of_its_own() -> None:
    """cli.py builds the parser from the list and turns errors into one line: it adds no
    subcommand itself and imports no product."""
    tree = ast.parse(Path(bundler.cli.__file__).read_text(encoding="utf-8"))
    calls = {n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert "add_parser" in calls   # only through the modules: command.add_parser(...)
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {m for m in imported if m and m.startswith(("bundler.pack", "bundler.diagnose",
                                                           "bundler.init"))}
    assert not (FOLDER.parent / "commands.py").exists()
