"""The bootstrap imports from the standard library, whatever the app's folder holds
(issue 42 #8), and a bundle run on another OS says so in one line (issue 40 item 3).

Python puts the entry script's folder first on sys.path: a `json.py` or a `ctypes/`
package beside main.py used to be what the bootstrap's own `import json` ran, before the
bootstrap, able to change what it loads. Here a Linux bundle, natively, with both
shadows beside main.py: each records whether it ran while the bootstrap was still
loading. The bootstrap loads the runtime with the standard library's modules; the app's
own `import json` afterwards still gets its json.py, as it would without the bootstrap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bundler.pack.emit import inject_entry, write_bootstrap
from bundler.targets.registry import all_platforms
from tests.harness.packing import run_cli
from tests.linux.test_linux_bundle import RECIPE, _cudnn_pair
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

# A shadow: says, on stderr, whether it ran before the bootstrap, while it was still
# loading, or after it.
SHADOW = '''import sys
_boot = sys.modules.get("_cudnn_bootstrap")
sys.stderr.write("shadow NAME ran " + ("BEFORE the bootstrap" if _boot is None else
                 "DURING the bootstrap" if not hasattr(_boot, "start") else
                 "after the bootstrap") + "\\n")
'''
MAIN = '''import sys
boot = sys.modules["_cudnn_bootstrap"]
sys.stdout.write("libraries %d\\n" % len(boot.report()["libraries"]))
import json, ctypes
sys.stdout.write("app's own: %s %s\\n" % (json.__file__, ctypes.__file__))
'''


def with_shadows(app: Path) -> None:
    """json.py and ctypes/ (the bootstrap's imports) and importlib/ (what the lines
    added to main.py used to import: not yet imported under -S) beside main.py."""
    (app / "json.py").write_text(SHADOW.replace("NAME", "json.py"))
    for package in ("ctypes", "importlib"):
        (app / package).mkdir()
        (app / package / "__init__.py").write_text(SHADOW.replace("NAME", f"{package}/"))


def shadowed_early(stderr: str) -> bool:
    return "BEFORE" in stderr or "DURING" in stderr


def run(script: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *flags, str(script)], capture_output=True,
                          text=True, check=False, cwd=script.parent, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})


@linux_with_gcc
@pytest.mark.parametrize("flags", [(), ("-S",)], ids=["site", "no-site"])
def test_a_json_py_and_ctypes_package_beside_main_cannot_stand_in_for_the_bootstraps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]) -> None:
    site = tmp_path / "site-packages" / "nvidia" / "cudnn" / "lib"
    _cudnn_pair(site, tmp_path / "decoys")
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text(MAIN)
    with_shadows(app)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    'recipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "site-packages" / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    bundle = tmp_path / "dist" / "app"
    done = run(bundle / "main.py", *flags)
    assert done.returncode == 0, done.stderr
    assert not shadowed_early(done.stderr), done.stderr
    assert "libraries 2" in done.stdout   # the runtime loaded, with the real ctypes
    # After the bootstrap the app's imports are what they were: its own modules.
    assert f"app's own: {bundle / 'json.py'} {bundle / 'ctypes' / '__init__.py'}" \
        in done.stdout, done.stdout
    assert done.stderr.count("after the bootstrap") == 2, done.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")
@pytest.mark.parametrize("shadowed", [False, True], ids=["plain", "shadowed"])
def test_a_bundle_for_windows_run_on_linux_says_so_in_one_line(tmp_path: Path,
                                                               shadowed: bool) -> None:
    """The Windows bootstrap, run here: nothing loads, and one line says why (the
    bundle's platform and this one) instead of nothing; the app still runs. The guard
    works there too: the imports happen before the loader finds it is not on Windows."""
    (windows,) = [p for p in all_platforms() if p.os_name == "Windows"]
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("print('the app ran')\n")
    inject_entry(app / "main.py")
    write_bootstrap(app / "_cudnn_bootstrap.py", "cudnn", windows)
    if shadowed:
        with_shadows(app)
    done = run(app / "main.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the app ran\n"
    said = [line for line in done.stderr.splitlines() if line.startswith("cuDNN runtime")]
    assert said == [f"cuDNN runtime warning: this app's bundled CUDA runtime is for "
                    f"{windows.label}, but it runs on {sys.platform} ({sys.executable}): the "
                    f"bundled runtime is not loaded; run the app on {windows.label}, or pack "
                    "it for this OS"], done.stderr
    assert not shadowed_early(done.stderr), done.stderr


def test_the_bootstrap_says_it_once_a_process(tmp_path: Path) -> None:
    (windows,) = [p for p in all_platforms() if p.os_name == "Windows"]
    write_bootstrap(tmp_path / "_cudnn_bootstrap.py", "cudnn", windows)
    script = tmp_path / "twice.py"
    script.write_text("import _cudnn_bootstrap as b\nb.activate()\nb.activate()\n"
                      "import json\nprint(json.dumps(b.report()['libraries']))\n")
    done = run(script)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cuDNN runtime warning") == (0 if sys.platform == "win32" else 1)
    assert json.loads(done.stdout) == []
