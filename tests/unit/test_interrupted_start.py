"""Ctrl-C while bundler is still starting (importing its modules) exits 130 with one line
at most, as Ctrl-C during a command does: through `python -m bundler` and through the
console script pyproject.toml declares (run as the script pip generates for it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.support.toml_tables import tomllib
from tests.harness.winenv.paths import PROJECT_ROOT

# Loaded at start-up (sitecustomize) in the child: holds the import of one of bundler's
# modules, as a cold disk or a slow network share would, and says when it is held, so
# the Ctrl-C lands inside the import.
HELD_IMPORT = '''
import sys, time


class HeldImport:
    def find_spec(self, name, path=None, target=None):
        if name == "bundler.commands":
            print("importing", flush=True)
            # in slices: a SIGINT that lands after the interpreter's last check but
            # before one long sleep's system call would wait the whole sleep out
            for _ in range(1200):
                time.sleep(0.1)
        return None


sys.meta_path.insert(0, HeldImport())
'''

# What pip writes for a console script `name = "module:function"` (less the argv[0] fix).
CONSOLE_SCRIPT = '''import sys
from {module} import {function}
if __name__ == "__main__":
    sys.exit({function}())
'''


def console_script(folder: Path) -> Path:
    pyproject = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    module, function = pyproject["project"]["scripts"]["bundler"].split(":")
    script = folder / "bundler-script.py"
    script.write_text(CONSOLE_SCRIPT.format(module=module, function=function))
    return script


def _ctrl_c_delivered() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name == "nt",
                    reason="sends a POSIX SIGINT to a child process")
@pytest.mark.parametrize("started", ["python -m bundler", "console script"])
def test_ctrl_c_while_bundler_imports_exits_130_quietly(tmp_path: Path, started: str) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HELD_IMPORT)
    command = ([sys.executable, "-m", "bundler", "recipes"] if started == "python -m bundler"
               else [sys.executable, str(console_script(tmp_path)), "recipes"])
    path = os.pathsep.join(filter(None, (str(site), str(PROJECT_ROOT),
                                         os.environ.get("PYTHONPATH"))))
    # Ctrl-C as a terminal delivers it: a suite started in the background of a
    # non-interactive shell (`... &`, some CI runners) has SIGINT ignored, which every
    # child inherits, and an ignored SIGINT never interrupts anything.
    with subprocess.Popen(command, env={**os.environ, "PYTHONPATH": path}, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          preexec_fn=_ctrl_c_delivered) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == "importing\n"   # bundler is mid-import now
        child.send_signal(signal.SIGINT)
        try:
            _, err = child.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            child.kill()
            pytest.fail("the interrupted bundler did not exit")
    assert child.returncode == 130, err
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err
