"""The commands, one module each (`cmd_<name>.py`: its `add_parser(commands, shared)` and
its `run(args)`); `options.py` holds the options several share, `output.py` the printing
they share. `bundler/cli.py` builds the parser from COMMANDS, in this order (the order
`bundler --help` lists them)."""

from __future__ import annotations

from types import ModuleType

from bundler.commands import (
    cmd_cache,
    cmd_doctor,
    cmd_init,
    cmd_inspect,
    cmd_pack,
    cmd_recipes,
    cmd_verify,
)

COMMANDS: tuple[ModuleType, ...] = (cmd_init, cmd_pack, cmd_cache, cmd_verify, cmd_inspect,
                                    cmd_doctor, cmd_recipes)
