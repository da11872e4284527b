"""`bundler verify --run` sees what the kernel saw, natively on Linux (issue 40, item 4).

Each decoy below passed the check that read what a process said of itself as it exited
(/proc/self/maps by file name, the app folder the process reported): a cuDNN copied under
another name (g.bin), deleted before exit, unloaded with dlclose, loaded in a forked
child that leaves through os._exit, an LD_PRELOAD interposer with an innocent name that
defines cudnnGetVersion, another copy of the app, a "libcudnn_graph.so.9 " twin (trailing
space) in the bundle's folder. Under ptrace (bundler/linux/process_trace.py) every one
fails verify --run, naming the object; the clean app passes; a timeout kills the whole
process tree and says that it timed out.

The libraries are tests/linux/test_linux_bundle.py's gcc-built stand-ins.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from bundler.linux.process_trace import tracing_unavailable
from tests.harness.packing import own_copy, run_cli
from tests.linux.test_linux_bootstrap_stops import _bundle
from tests.linux.test_linux_bundle import _library

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("gcc"),
                       reason="Linux with gcc"),
    pytest.mark.skipif(sys.platform.startswith("linux") and bool(tracing_unavailable()),
                       reason="ptrace is not permitted here")]


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the packed stand-in app, the decoys' folder: libcudnn.so.9 and its graph)."""
    class _Capture:   # _bundle's capsys: run_cli reads it around the pack
        def readouterr(self) -> tuple[str, str]:
            return "", ""
    return _bundle(tmp_path_factory.mktemp("decoys"), _Capture())  # type: ignore[arg-type]


def _verify(capsys: pytest.CaptureFixture[str], app: Path, code: str, *options: str
            ) -> tuple[int, dict]:
    """verify --run APP --json -- python -c CODE (CODE runs the packed main.py first)."""
    main = f"import runpy\nrunpy.run_path({str(app / 'main.py')!r}, run_name='__main__')\n"
    status, out, err = run_cli(capsys, "verify", "--run", app, "--json", *options, "--",
                               sys.executable, "-c", main + code)
    return status, json.loads(out)


def _foreign(report: dict) -> dict[str, dict]:
    return {m["path"]: m for m in report["modules"] if not m["from_bundle"]}


def test_the_clean_app_passes_traced(packed: tuple[Path, Path],
                                     capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = packed
    code, report = _verify(capsys, app, "")
    assert code == 0 and report["ok"] and report["traced"], report
    assert sorted(m["name"] for m in report["modules"]) == ["libcudnn.so.9",
                                                            "libcudnn_graph.so.9"]
    assert report["traced_processes"] == report["processes"]


def test_a_decoy_renamed_g_bin_is_known_by_its_soname(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, decoys = packed
    renamed = tmp_path / "g.bin"
    shutil.copy(decoys / "libcudnn.so.9", renamed)
    code, report = _verify(capsys, app, f"import ctypes\nctypes.CDLL({str(renamed)!r})\n")
    assert code == 1 and not report["ok"]
    module = _foreign(report)[str(renamed)]
    assert module["name"] == "libcudnn.so.9"
    assert "the file declares itself libcudnn.so.9" in module["why"]
    pid = report["processes"][0]
    assert f"{pid}: libcudnn.so.9: " in report["doubled"][0]


def test_a_decoy_deleted_before_exit_is_read_through_the_process(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Renamed and deleted: only the bytes read through the process's fd say cuDNN."""
    app, decoys = packed
    gone = tmp_path / "tmp0815.bin"
    shutil.copy(decoys / "libcudnn.so.9", gone)
    code, report = _verify(capsys, app, f"import ctypes, os\nctypes.CDLL({str(gone)!r})\n"
                                        f"os.unlink({str(gone)!r})\n")
    assert code == 1 and not gone.exists()
    module = _foreign(report)[str(gone)]
    assert module["deleted"] and module["name"] == "libcudnn.so.9", module
    assert module["sha256"] == _sha256(decoys / "libcudnn.so.9")


def test_a_cuda_library_unloaded_with_dlclose_is_seen(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = packed
    cublas = _library(tmp_path / "toolkit", "libcublas.so.13",
                      "int cublasMarker(void) { return 13; }\n")
    code, report = _verify(capsys, app, f"import ctypes, _ctypes\nlib = ctypes.CDLL("
                                        f"{str(cublas)!r})\n_ctypes.dlclose(lib._handle)\n"
                                        "assert 'libcublas' not in open('/proc/self/maps')"
                                        ".read()\n")
    assert code == 1 and report["exit_code"] == 0, report
    assert _foreign(report)[str(cublas)]["why"] == "mapped from outside the bundle"


def test_a_decoy_in_a_forked_child_that_leaves_through_os_exit_is_seen(
        packed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """As a multiprocessing pool's workers do: the child never runs atexit."""
    app, decoys = packed
    decoy = decoys / "libcudnn_graph.so.9"
    code, report = _verify(capsys, app, f"import ctypes, os\npid = os.fork()\nif pid == 0:\n"
                                        f"    ctypes.CDLL({str(decoy)!r})\n    os._exit(0)\n"
                                        "os.waitpid(pid, 0)\n")
    assert code == 1 and report["exit_code"] == 0
    [child] = [p for p in report["traced_processes"] if p not in report["processes"]]
    assert report["foreign"] == [f"{child}: {decoy}"]
    assert report["doubled"] == [f"{child}: libcudnn_graph.so.9: "
                                 f"{app / 'cudnn' / 'libcudnn_graph.so.9'}, {decoy}"]


def test_a_decoy_in_a_multiprocessing_pool_worker_is_seen(
        packed: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A fork pool's worker loads the decoy; workers leave through os._exit."""
    app, decoys = packed
    decoy = decoys / "libcudnn.so.9"
    code, report = _verify(capsys, app, "import ctypes, multiprocessing\n"
                                        "def work(path):\n    ctypes.CDLL(path)\n"
                                        "    return 0\n"
                                        "with multiprocessing.get_context('fork').Pool(1) "
                                        f"as pool:\n    pool.map(work, [{str(decoy)!r}])\n")
    assert code == 1 and report["exit_code"] == 0, report
    [worker] = {int(f.split(":")[0]) for f in report["foreign"]}
    assert worker not in report["processes"] and report["foreign"] == [f"{worker}: {decoy}"]


def test_a_preloaded_interposer_with_an_innocent_name_is_named(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    app, _ = packed
    helper = _library(tmp_path / "helpers", "libhelper.so",
                      "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 1; }\n")
    monkeypatch.setenv("LD_PRELOAD", str(helper))   # the app's processes inherit it
    code, report = _verify(capsys, app, "")
    assert code == 1, report
    module = _foreign(report)[str(helper)]
    assert module["exports"] == ["cudnnGetVersion"] and module["name"] == "libhelper.so"
    assert "defines cudnnGetVersion under the name libhelper.so" in module["why"]
    monkeypatch.delenv("LD_PRELOAD")
    code, _, err = run_cli(capsys, "verify", "--run", app)
    assert code == 0, err   # the control


def test_another_copy_of_the_app_is_not_the_bundle(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`verify --run dist/app -- python3 /other/copy/main.py`: the bundle is the folder
    given, never the one the process reports for itself."""
    app, _ = packed
    other = own_copy(app, tmp_path)
    status, out, _ = run_cli(capsys, "verify", "--run", app, "--json", "--",
                             sys.executable, str(other / "main.py"))
    report = json.loads(out)
    assert status == 1 and report["exit_code"] == 0 and len(report["modules"]) == 2
    assert all(m["why"] == "mapped from outside the bundle" and
               m["path"].startswith(str(other)) for m in report["modules"]), report


def test_a_trailing_space_twin_in_the_bundle_folder_is_not_the_bundles_file(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, decoys = packed
    app = own_copy(app, tmp_path)
    twin = app / "cudnn" / "libcudnn_graph.so.9 "
    shutil.copy(decoys / "libcudnn_graph.so.9", twin)
    code, report = _verify(capsys, app, f"import ctypes\nctypes.CDLL({str(twin)!r})\n")
    assert code == 1
    assert _foreign(report)[str(twin)]["why"].startswith(
        "a file the bundle's manifest does not list")


def test_a_timeout_kills_the_whole_tree_and_says_it_timed_out(
        packed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app, _ = packed
    mark = tmp_path / "grandchild.pid"
    grandchild = (f"import os, time\nopen({str(mark)!r}, 'w').write(str(os.getpid()))\n"
                  "os.setsid()\ntime.sleep(60)\n")
    started = time.monotonic()
    code, out, err = run_cli(capsys, "verify", "--run", app, "--timeout", "2", "--",
                             sys.executable, "-c", "import subprocess, sys, time\n"
                             f"subprocess.Popen([sys.executable, '-c', {grandchild!r}])\n"
                             "time.sleep(60)\n")
    assert code == 1 and time.monotonic() - started < 20
    assert "timed out: the app still ran after 2 s; every process it started was killed" \
        in err
    assert "the running app timed out; hint: give a longer --timeout" in err
    assert "loads NVIDIA's libraries from elsewhere" not in err
    pid = int(mark.read_text())
    assert _gone(pid), f"the grandchild {pid} still runs"


def test_where_ptrace_is_refused_the_check_says_it_did_not_trace(
        packed: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback judges what each process reported of itself, and never passes
    silently: the ok line and stderr say NOT TRACED and why."""
    import bundler.linux.process_trace as tracer
    monkeypatch.setattr(tracer, "tracing_unavailable", lambda: "ptrace is refused (test)")
    app, _ = packed
    code, out, err = run_cli(capsys, "verify", "--run", app)
    assert code == 0, err
    assert "; reported, NOT TRACED) map 2 cuDNN/CUDA libraries" in out
    assert "not traced: ptrace is refused (test); judged from what each process reported " \
        "of itself" in err
    code, report = _verify(capsys, app, "")
    assert report["traced"] is False and report["untraced_why"] == "ptrace is refused (test)"
    code, _, err = run_cli(capsys, "verify", "--run", app, "--timeout", "1", "--",
                           sys.executable, "-c", "import time; time.sleep(30)")
    assert code == 1 and "timed out: the app still ran after 1 s; its session was killed" \
        in err


def _gone(pid: int) -> bool:
    for _ in range(50):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):   # killed, not yet reaped by its new parent
            return True
        time.sleep(0.1)
    os.kill(pid, 9)
    return False


def _sha256(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()

