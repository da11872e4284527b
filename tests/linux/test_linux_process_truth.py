"""One copy in the process, natively on Linux (issue 27, items 4 and 5).

The bootstrap knows an already-loaded copy by SONAME and file identity: a decoy cuDNN
reached through `libcudnn.so.9 -> libcudnn.so.9.1.0` (LD_PRELOAD, or dlopened before the
bootstrap) is mapped as libcudnn.so.9.1.0, yet glibc hands it to every later
dlopen("libcudnn.so.9"); the bootstrap refuses it, and takes the bundle's own file
reached through another path. `bundler verify --run` starts the app and judges what the
process mapped: the clean case, a decoy, a second copy the app loads itself by absolute
path (as JAX's `_load_nvidia_libraries` does), a CUDA library from outside the bundle,
and a command whose process never reported.

The libraries are tests/linux/test_linux_bundle.py's gcc-built stand-ins of NVIDIA's shape.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.linux.test_linux_bootstrap_stops import _bundle
from tests.linux.test_linux_bundle import SHIM, _library

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("gcc"),
                                reason="Linux with gcc")


def _versioned_decoy(folder: Path) -> Path:
    """libcudnn.so.9.1.0 (SONAME libcudnn.so.9) and the link libcudnn.so.9 to it, as
    NVIDIA's tarballs and distributions lay cuDNN out. Returns the link."""
    folder.mkdir(parents=True)
    (folder / "shim.c").write_text(SHIM)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-Wl,-soname,libcudnn.so.9", "-o",
                    str(folder / "libcudnn.so.9.1.0"), str(folder / "shim.c"), "-ldl"],
                   check=True)
    (folder / "libcudnn.so.9").symlink_to("libcudnn.so.9.1.0")
    return folder / "libcudnn.so.9"


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                          capture_output=True, text=True, check=False, timeout=60)


def _run_main(app: Path, first: str = "") -> str:
    """Python code: `first`, then the packed app's main.py as a script."""
    return f"{first}import runpy\nrunpy.run_path({str(app / 'main.py')!r}, run_name='__main__')\n"


REFUSED = ("cuDNN runtime error: another libcudnn.so.9 is already loaded from {decoy}; this "
           "app needs its bundled {bundled}")


def test_a_versioned_decoy_preloaded_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LD_PRELOAD=.../libcudnn.so.9, a link to libcudnn.so.9.1.0: /proc/self/maps names
    libcudnn.so.9.1.0 only, so a check by file name let the app run on the decoy."""
    app, _ = _bundle(tmp_path, capsys)
    link = _versioned_decoy(tmp_path / "versioned")
    done = _python(_run_main(app), LD_PRELOAD=str(link))
    assert done.returncode == 1
    assert REFUSED.format(decoy=link.resolve(), bundled=app / "cudnn" / "libcudnn.so.9") in \
        done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "cudnnGetVersion" not in done.stdout
    assert '"version"' not in done.stdout   # the app itself never ran


def test_a_versioned_decoy_dlopened_before_the_bootstrap_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = _bundle(tmp_path, capsys)
    real = _versioned_decoy(tmp_path / "versioned").resolve()
    done = _python(_run_main(app, f"import ctypes\nctypes.CDLL({str(real)!r})\n"))
    assert done.returncode == 1
    assert REFUSED.format(decoy=real, bundled=app / "cudnn" / "libcudnn.so.9") in done.stderr


def test_the_bundles_own_file_through_another_path_is_not_a_decoy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Identity is the file (st_dev, st_ino), not the path: the bundle's libcudnn.so.9
    loaded first through a hard link elsewhere is the same library, and the app runs."""
    app, _ = _bundle(tmp_path, capsys)
    (tmp_path / "elsewhere").mkdir()
    other = tmp_path / "elsewhere" / "libcudnn.so.9"
    os.link(app / "cudnn" / "libcudnn.so.9", other)
    done = _python(_run_main(app, f"import ctypes, os\nctypes.CDLL({str(other)!r}, "
                                  "os.RTLD_GLOBAL)\n"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["version"] == 91900


def _verify_run(capsys: pytest.CaptureFixture[str], app: Path, *command: str
                ) -> tuple[int, dict]:
    code, out, err = run_cli(capsys, "verify", "--run", app, "--json",
                             *(("--", *command) if command else ()))
    return code, json.loads(out)


def test_verify_run_passes_a_clean_app_and_lists_what_it_maps(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = _bundle(tmp_path, capsys)
    code, report = _verify_run(capsys, app)   # the entry, import-only
    assert code == 0, report
    assert report["ok"] and report["import_only"] and len(report["processes"]) == 1
    assert sorted((m["name"], m["path"], m["from_bundle"]) for m in report["modules"]) == [
        ("libcudnn.so.9", str(app / "cudnn" / "libcudnn.so.9"), True),
        ("libcudnn_graph.so.9", str(app / "cudnn" / "libcudnn_graph.so.9"), True)]
    code, report = _verify_run(capsys, app, sys.executable, "main.py")   # the app's run
    assert code == 0 and report["ok"] and not report["import_only"], report
    code, out, _ = run_cli(capsys, "verify", "--run", app)
    assert code == 0 and "ok: 1 process(es) of " in out and " map 2 cuDNN/CUDA libraries, " \
        "each once, all from the bundle" in out


def test_import_only_stops_before_the_apps_own_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = _bundle(tmp_path, capsys)
    main = app / "main.py"
    main.write_text(main.read_text() + "\nopen('ran', 'w').close()\n")
    code, report = _verify_run(capsys, app)
    assert report["processes"] and not (app / "ran").exists()
    _verify_run(capsys, app, sys.executable, "main.py")   # the control: the app runs
    assert (app / "ran").exists()


def test_import_only_runs_no_line_above_the_bootstrap_lines_either(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Import-only runs the entry's bootstrap lines alone: a line put above them (an
    edit after packing) is app code too, and does not run."""
    app, _ = _bundle(tmp_path, capsys)
    main = app / "main.py"
    main.write_text("open('ran-above', 'w').close()\n" + main.read_text())
    code, report = _verify_run(capsys, app)
    assert report["import_only"] and report["processes"], report
    assert sorted(m["name"] for m in report["modules"]) == ["libcudnn.so.9",
                                                             "libcudnn_graph.so.9"], report
    assert not (app / "ran-above").exists() and not (tmp_path / "ran-above").exists()
    _verify_run(capsys, app, sys.executable, "main.py")   # the control: the line runs
    assert (app / "ran-above").exists()


def test_verify_run_fails_on_a_second_copy_the_app_loads_by_absolute_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As JAX's plugin does with site-packages/nvidia/*/lib, after the bootstrap ran: the
    versioned file is another name on disk, the same SONAME in the process."""
    app, _ = _bundle(tmp_path, capsys)
    real = _versioned_decoy(tmp_path / "site" / "nvidia" / "cudnn" / "lib").resolve()
    code, report = _verify_run(capsys, app, sys.executable, "-c", _run_main(
        app) + f"import ctypes\nctypes.CDLL({str(real)!r})\n")
    assert code == 1 and not report["ok"] and report["exit_code"] == 0
    pid = report["processes"][0]
    assert report["doubled"] == [
        f"{pid}: libcudnn.so.9: {app / 'cudnn' / 'libcudnn.so.9'}, {real}"] or \
        report["doubled"] == [f"{pid}: libcudnn.so.9: {real}, {app / 'cudnn' / 'libcudnn.so.9'}"]
    assert report["foreign"] == [f"{pid}: {real}"]


def test_verify_run_fails_on_a_cuda_library_from_outside_the_bundle(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """libcublas.so.13 is CUDA by the platform's naming (linux.toml), not the bundle's."""
    app, _ = _bundle(tmp_path, capsys)
    cublas = _library(tmp_path / "toolkit", "libcublas.so.13", "int cublasMarker(void) "
                      "{ return 13; }\n")
    code, report = _verify_run(capsys, app, sys.executable, "-c", _run_main(
        app) + f"import ctypes\nctypes.CDLL({str(cublas)!r})\n")
    assert code == 1 and report["doubled"] == []
    assert report["foreign"] == [f"{report['processes'][0]}: {cublas}"]


def test_verify_run_reports_a_decoy_loaded_first(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The versioned decoy preloaded: the bootstrap stops the app, and verify --run fails
    saying so (never an "ok" without a process that reported)."""
    app, _ = _bundle(tmp_path, capsys)
    link = _versioned_decoy(tmp_path / "versioned")
    monkeypatch.setenv("LD_PRELOAD", str(link))   # the app's process inherits it
    code, report = _verify_run(capsys, app)
    assert code == 1 and report["processes"] == [] and not report["ok"]
    assert report["output"][-1].startswith(REFUSED.format(
        decoy=link.resolve(), bundled=app / "cudnn" / "libcudnn.so.9"))
    assert report["problems"] == [f"the app exited with status 1: {report['output'][-1]}"]


def test_verify_run_fails_when_no_process_reported(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A command that never runs the bootstrap exits 0, and still nothing was verified."""
    app, _ = _bundle(tmp_path, capsys)
    code, report = _verify_run(capsys, app, sys.executable, "-c", "pass")
    assert code == 1 and report["processes"] == [] and report["exit_code"] == 0
    code, _, err = run_cli(capsys, "verify", "--run", app, "--", sys.executable, "-c", "pass")
    assert code == 1 and "no process of the app reported what it mapped" in err
    code, _, err = run_cli(capsys, "verify", "--run", app, "--", str(tmp_path / "nothing"))
    assert code == 1 and "did not start" in err


def test_verify_run_checks_a_frozen_app_by_its_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A PyInstaller build: the bootstrap runs in sys._MEIPASS (dist/app/_internal) from the
    runtime hook; its executable is the command. Without one, verify says what to give."""
    pytest.importorskip("PyInstaller")
    from tests.linux.test_linux_bundle import APP, RECIPE, _cudnn_pair
    _cudnn_pair(tmp_path / "nvidia" / "cudnn" / "lib", tmp_path / "decoys")
    (tmp_path / "main.py").write_text(APP)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\nbuilder = "pyinstaller"\nscript = "main.py"\n'
                    '[runtime]\nrecipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    app = tmp_path / "dist" / "app"
    code, report = _verify_run(capsys, app, str(app / "app"))
    assert code == 0 and report["ok"], report
    assert sorted(m["path"] for m in report["modules"]) == [
        str(app / "_internal" / "cudnn" / name) for name in ("libcudnn.so.9",
                                                             "libcudnn_graph.so.9")]
    code, _, err = run_cli(capsys, "verify", "--run", app)
    assert code == 2 and "give the command that starts it" in err


def test_a_copy_known_by_the_soname_the_bundled_file_declares_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bundled file whose SONAME is not its file name (libcudnn_graph.so.9 declaring
    libcudnn_graph.so.9.1), and a decoy of that SONAME under another name loaded first:
    only the SONAME the loaded file declares finds it (read from its dynamic section)."""
    from tests.linux.test_linux_bundle import APP, GRAPH, RECIPE

    def graph(folder: Path, name: str, marker: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "graph.c").write_text(GRAPH.replace("MARKER", marker))
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcudnn_graph.so.9.1", "-o",
                        str(folder / name), str(folder / "graph.c")], check=True)

    site = tmp_path / "nvidia" / "cudnn" / "lib"
    graph(site, "libcudnn_graph.so.9", "1")
    _library(site, "libcudnn.so.9", SHIM, "-ldl")
    graph(tmp_path / "decoy", "other.so", "2")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text(APP)
    (tmp_path / "standin.toml").write_text(RECIPE)
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
                    'recipe = "standin.toml"\n[sources]\n'
                    f'nvidia = "{(tmp_path / "nvidia").as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    app = tmp_path / "dist" / "app"
    decoy = tmp_path / "decoy" / "other.so"
    done = _python(_run_main(app, f"import ctypes\nctypes.CDLL({str(decoy)!r})\n"))
    assert done.returncode == 1
    assert (f"another libcudnn_graph.so.9.1 is already loaded from {decoy}; this app needs "
            f"its bundled {app / 'cudnn' / 'libcudnn_graph.so.9'}") in done.stderr, done.stderr
    assert _python(_run_main(app)).returncode == 0   # the control: nothing loaded first
