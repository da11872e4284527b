"""The Windows bootstrap, under Wine's Windows CPython with the script's folder first on
sys.path as a regular python.exe puts it (issue 42 #8): a `json.py` and a `ctypes/`
package beside main.py do not run while the bootstrap loads, the runtime DLLs are
preloaded by the real ctypes, and the app's own imports afterwards get its own modules.
tests/linux/test_bootstrap_shadows.py shows the same natively on Linux. And the Linux
bootstrap run on Windows says so in one line (issue 40 item 3), as the Windows one does
on Linux."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.cli import main
from bundler.pack.emit import inject_entry, write_bootstrap
from bundler.targets.registry import all_platforms
from tests.harness.packing import make_workspace
from tests.harness.winenv import WindowsPython, require_wine
from tests.linux.test_bootstrap_shadows import MAIN, shadowed_early, with_shadows


@pytest.fixture(scope="module")
def shadowed_bundle(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
                    standin_toolkit: Path, standin_framework: Path) -> Path:
    workspace = make_workspace(tmp_path_factory.mktemp("ws"), standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    app = workspace.root / "app"
    (app / "main.py").write_text(MAIN)
    with_shadows(app)
    assert main(["pack", str(workspace.spec)]) == 0
    return workspace.dist


def test_shadows_beside_main_do_not_run_in_the_windows_bootstrap(
        shadowed_bundle: Path, win_python: WindowsPython) -> None:
    require_wine()
    done = win_python.run([shadowed_bundle / "main.py"], cwd=shadowed_bundle)
    assert done.returncode == 0, done.stderr
    assert not shadowed_early(done.stderr), done.stderr
    assert "libraries 10" in done.stdout, done.stdout   # the 7 cuDNN and 3 CUDA DLLs
    own = done.stdout.split("app's own: ")[1].lower()
    assert own.split() == [r"z:" + str(shadowed_bundle / "json.py").replace("/", "\\").lower(),
                           r"z:" + str(shadowed_bundle / "ctypes" / "__init__.py")
                           .replace("/", "\\").lower()], done.stdout
    assert done.stderr.count("after the bootstrap") == 2, done.stderr


def test_a_linux_bundle_run_on_windows_says_so_in_one_line(
        tmp_path: Path, win_python: WindowsPython) -> None:
    require_wine()
    (linux,) = [p for p in all_platforms() if p.os_name == "Linux"]
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("print('the app ran')\n")
    inject_entry(app / "main.py")
    write_bootstrap(app / "_cudnn_bootstrap.py", "cudnn", linux)
    done = win_python.run([app / "main.py"], cwd=app)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the app ran"
    said = [line for line in done.stderr.splitlines() if line.startswith("cuDNN runtime")]
    assert len(said) == 1 and said[0].startswith(
        f"cuDNN runtime warning: this app's bundled CUDA runtime is for {linux.label}, but it "
        "runs on win32 ("), done.stderr
