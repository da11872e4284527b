"""A pack killed (SIGKILL) at any instant, and two packs at once: the bundle and its
lock are always the previous ones or the new ones, complete and matching; the next
pack removes the debris and succeeds. Real processes, real kills."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from bundler.formats.swap_journal import KILL_AT_ENV, PAUSE_AT_ENV
from tests.harness.packing import make_workspace, snapshot
from tests.harness.winenv.build import build_dll, cudart_spec, make_toolkit

ROOT = Path(__file__).resolve().parents[2]
# Every checkpoint of the pack: after staging, and between each step of the swap.
SWAP_POINTS = ["staged", "journal-written", "swap-retired", "swap-moved-in",
               "swap-lock-replaced", "swap-retired-removed"]


def bundler(*args: object, kill_at: str = "", cwd: Path | None = None
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), KILL_AT_ENV: kill_at}
    return subprocess.run([sys.executable, "-m", "bundler", *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def state(root: Path) -> dict[str, str]:
    """The bundle and the lock, file by file (debris beside them is checked apart)."""
    bundle = root / "dist" / "app"
    files = {f"app/{k}": v for k, v in snapshot(bundle).items()} if bundle.exists() else {}
    lock = root / "app.spec.lock"
    if lock.exists():
        files["app.spec.lock"] = snapshot(root)["app.spec.lock"]
    return files


def debris(root: Path) -> list[str]:
    return sorted(p.name for folder in (root, root / "dist") for p in folder.iterdir()
                  if p.name.startswith("."))


@pytest.fixture(scope="module")
def crash_case(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
               standin_toolkit: Path, standin_framework: Path, standin_runtime
               ) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    """A packed workspace (the pristine copy), a changed toolkit, and the states of the
    bundle before and after packing that toolkit into it, at one fixed path."""
    base = tmp_path_factory.mktemp("crash")
    pristine = make_workspace(base / "pristine", standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit}).root
    assert bundler("pack", pristine / "app.spec").returncode == 0
    toolkit = make_toolkit(standin_runtime.dir, base / "v10.1")
    shutil.copy(build_dll(cudart_spec(version=(6, 14, 11, 10096)), base / "new"),
                toolkit / "bin" / "cudart64_101.dll")
    work = base / "work"
    shutil.copytree(pristine, work)
    old = state(work)
    done = bundler("pack", work / "app.spec", "--source", f"cuda={toolkit}", "--update-lock")
    assert done.returncode == 0, done.stderr
    new = state(work)
    assert old != new
    return pristine, toolkit, old, new


def fresh(pristine: Path) -> Path:
    work = pristine.parent / "work"
    shutil.rmtree(work)
    shutil.copytree(pristine, work)
    return work


def check_recovered_and_repackable(work: Path, toolkit: Path, old: dict[str, str],
                                   new: dict[str, str]) -> None:
    verified = bundler("verify", work / "dist" / "app")  # completes or undoes the swap
    assert verified.returncode == 0, verified.stderr
    assert "Traceback" not in verified.stderr
    assert state(work) in (old, new)
    again = bundler("pack", work / "app.spec", "--source", f"cuda={toolkit}", "--update-lock")
    assert again.returncode == 0, again.stderr
    assert state(work) == new
    assert debris(work) == []


@pytest.mark.parametrize("point", SWAP_POINTS)
def test_a_pack_killed_at_each_step_of_the_swap_is_recovered(crash_case, point: str) -> None:
    pristine, toolkit, old, new = crash_case
    work = fresh(pristine)
    killed = bundler("pack", work / "app.spec", "--source", f"cuda={toolkit}",
                     "--update-lock", kill_at=point)
    assert killed.returncode == -signal.SIGKILL
    check_recovered_and_repackable(work, toolkit, old, new)


@pytest.mark.parametrize("point", ["swap-retired", "swap-moved-in", "swap-retired-removed"])
def test_a_recovery_killed_midway_is_recovered(crash_case, point: str) -> None:
    pristine, toolkit, old, new = crash_case
    work = fresh(pristine)
    pack = ("pack", work / "app.spec", "--source", f"cuda={toolkit}", "--update-lock")
    assert bundler(*pack, kill_at="journal-written").returncode == -signal.SIGKILL
    # verify recovers; kill it inside the recovery too, then recover for real
    assert bundler("verify", work / "dist" / "app", kill_at=point).returncode == -signal.SIGKILL
    check_recovered_and_repackable(work, toolkit, old, new)


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.4, 0.6, 0.8, 1.0])
def test_a_pack_killed_at_a_random_moment_is_recovered(crash_case, delay: float) -> None:
    pristine, toolkit, old, new = crash_case
    work = fresh(pristine)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "bundler", "pack", work / "app.spec",
                                "--source", f"cuda={toolkit}", "--update-lock"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    process.kill()
    process.wait()
    check_recovered_and_repackable(work, toolkit, old, new)


def test_a_killed_pack_leaves_no_debris_after_the_next_pack(crash_case) -> None:
    pristine, toolkit, old, _new = crash_case
    work = fresh(pristine)
    for _ in range(3):
        assert bundler("pack", work / "app.spec", "--source", f"cuda={toolkit}",
                       "--update-lock", kill_at="staged").returncode == -signal.SIGKILL
    assert any(".staging-" in name for name in debris(work))
    assert state(work) == old  # killed before the swap: nothing changed
    assert bundler("pack", work / "app.spec").returncode == 0
    assert debris(work) == []


def paused_pack(work: Path, toolkit: Path, point: str, flag: Path) -> subprocess.Popen[str]:
    """A real pack (changed inputs, --update-lock) that stops at `point` until `flag`
    exists; returned once it has stopped there."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), PAUSE_AT_ENV: f"{point}:{flag}"}
    process = subprocess.Popen([sys.executable, "-m", "bundler", "pack", work / "app.spec",
                                "--source", f"cuda={toolkit}", "--update-lock"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not Path(f"{flag}.paused").exists() and time.time() < deadline:
        time.sleep(0.05)
    return process


def test_a_second_pack_waits_for_the_first_and_then_checks_its_lock(crash_case) -> None:
    """Two real processes: the second waits (saying for whom) while the first holds the
    target, then sees the lock the first wrote, so its changed inputs are refused."""
    pristine, toolkit, _old, new = crash_case
    work = fresh(pristine)
    flag = work.parent / "go"
    flag.unlink(missing_ok=True)
    first = paused_pack(work, toolkit, "staged", flag)
    second = subprocess.Popen([sys.executable, "-m", "bundler", "pack", work / "app.spec"],
                              env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    assert second.poll() is None  # waiting, not interleaving
    flag.touch()
    assert first.wait(60) == 0
    _, err = second.communicate(timeout=60)
    assert f"waiting for another bundler (pid {first.pid})" in err
    assert second.returncode == 2 and "the inputs differ from the lock" in err
    assert state(work) == new and debris(work) == []


def test_a_stale_lock_file_of_a_dead_pack_is_taken_over(crash_case) -> None:
    pristine, *_ = crash_case
    work = fresh(pristine)
    (work / "dist" / ".app.pack-lock").write_text("999999\n")  # its holder is gone
    done = bundler("pack", work / "app.spec")
    assert done.returncode == 0, done.stderr
    assert "waiting" not in done.stderr and debris(work) == []


def test_out_on_another_filesystem_packs_again_and_again(crash_case) -> None:
    pristine, *_ = crash_case
    work = fresh(pristine)
    shm = Path("/dev/shm")
    if not shm.is_dir() or shm.stat().st_dev == work.stat().st_dev:
        pytest.skip("needs a second filesystem (/dev/shm)")
    out = Path(tempfile.mkdtemp(dir=shm)) / "app"
    try:
        for _ in range(3):
            done = bundler("pack", work / "app.spec", "--out", out)
            assert done.returncode == 0, done.stderr
        assert bundler("verify", out).returncode == 0
        assert [p.name for p in out.parent.iterdir()] == ["app"]
    finally:
        shutil.rmtree(out.parent)


def test_verify_of_the_folder_completes_an_interrupted_swap_inside_it(crash_case) -> None:
    pristine, toolkit, old, new = crash_case
    work = fresh(pristine)
    assert bundler("pack", work / "app.spec", "--source", f"cuda={toolkit}", "--update-lock",
                   kill_at="swap-retired").returncode == -signal.SIGKILL
    assert not (work / "dist" / "app").exists()  # aside, mid-swap
    verified = bundler("verify", work / "dist")
    assert verified.returncode == 0, verified.stderr
    assert "completed the swap" in verified.stderr and state(work) == new


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
@pytest.mark.parametrize("point", ["staged", "swap-moved-in"])
def test_a_terminated_pack_cleans_up_at_once(crash_case, signum: int, point: str) -> None:
    """SIGTERM/SIGHUP unwind like Ctrl-C: no staging folder is left even before the next
    pack, and a swap under way is undone."""
    pristine, toolkit, old, _new = crash_case
    work = fresh(pristine)
    flag = work.parent / "never"
    process = paused_pack(work, toolkit, point, flag)
    Path(f"{flag}.paused").unlink()
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signum, err
    assert "interrupted; nothing was changed" in err and "Traceback" not in err
    assert state(work) == old and debris(work) == []
