"""A bundle is usable by every user who may read the folder it is in (issue 28, item 6):
PyInstaller's Linux build was moved into the staging folder, a mkdtemp() (mode 0700),
which then became the bundle's top folder: another user could not run the app."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.linux.test_linux_bundle import APP, RECIPE, _cudnn_pair

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux")


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder other users can enter (pytest's are private to their user):
    PyInstaller's bootloader finds its files by absolute path, so every folder above
    the bundle must be open to the user running it."""
    folder = Path(tempfile.mkdtemp(prefix="bundler-modes-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(folder: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """`command` run as `nobody` from inside `folder`."""
    import pwd  # POSIX only

    nobody = pwd.getpwnam("nobody")
    script = (f"import os, sys\nos.chdir(sys.argv[1])\nos.setgid({nobody.pw_gid})\n"
              f"os.setuid({nobody.pw_uid})\nos.execv(sys.argv[2], sys.argv[2:])\n")
    return subprocess.run([sys.executable, "-c", script, str(folder), *command],
                          capture_output=True, text=True, check=False, timeout=120)


def test_a_pyinstaller_bundle_on_linux_is_open_to_other_users(
        open_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("PyInstaller")
    tmp_path = open_tmp
    _cudnn_pair(tmp_path / "nvidia" / "cudnn" / "lib", tmp_path / "decoys")
    (tmp_path / "main.py").write_text(APP)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\nbuilder = "pyinstaller"\nscript = "main.py"\n'
                    '[runtime]\nrecipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    old_umask = os.umask(0o022)
    try:
        code, _, err = run_cli(capsys, "pack", spec)
    finally:
        os.umask(old_umask)
    assert code == 0, err
    app = tmp_path / "dist" / "app"
    folders = [app, *(p for p in app.rglob("*") if p.is_dir() and not p.is_symlink())]
    closed = [str(f) for f in folders if stat.S_IMODE(f.stat().st_mode) & 0o055 != 0o055]
    assert closed == []
    assert stat.S_IMODE(app.stat().st_mode) == 0o755
    if os.getuid() == 0:
        done = _as_nobody(app, "./app")
        assert done.returncode == 0, done.stderr
