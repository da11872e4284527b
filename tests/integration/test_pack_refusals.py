"""Bad inputs: each is refused with exit 2 and a message naming the problem, and the
previous bundle (and lock) stay byte-for-byte as they were."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness.packing import Workspace, make_workspace, run_cli, snapshot
from tests.harness.winenv.build import (
    build_dll,
    build_runtime,
    cudart_spec,
    make_nvidia_zip,
    make_toolkit,
    nvidia_zip_members,
)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path, standin_toolkit: Path,
         standin_framework: Path) -> Workspace:
    workspace = make_workspace(tmp_path_factory.mktemp("good"), standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit})
    from bundler.cli import main
    assert main(["pack", str(workspace.spec)]) == 0
    return workspace


def rezip(runtime_dir: Path, out: Path, edit: Callable[[dict[str, bytes]], None]) -> Path:
    members = nvidia_zip_members(runtime_dir)
    edit(members)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out


def truncated(ctx: dict, tmp: Path) -> tuple[str, str]:
    data = ctx["zip"].read_bytes()
    (tmp / "t.zip").write_bytes(data[: len(data) * 2 // 3])
    return "cudnn", str(tmp / "t.zip")


def corrupted(ctx: dict, tmp: Path) -> tuple[str, str]:
    zip_path = make_nvidia_zip(ctx["runtime"].dir, tmp / "c.zip", "store")
    data = bytearray(zip_path.read_bytes())
    dll = (ctx["runtime"].dir / "cudnn_cnn_infer64_8.dll").read_bytes()
    at = data.index(dll) + len(dll) // 2
    data[at] ^= 0xFF
    zip_path.write_bytes(bytes(data))
    return "cudnn", str(zip_path)


def corrupted_deflate64(ctx: dict, tmp: Path) -> tuple[str, str]:
    data = bytearray(ctx["zip"].read_bytes())
    with zipfile.ZipFile(ctx["zip"]) as archive:
        info = archive.getinfo("cuda/bin/cudnn64_8.dll")
    at = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    data[at:at + 4] = bytes(b ^ 0xA5 for b in data[at:at + 4])
    (tmp / "d64.zip").write_bytes(bytes(data))
    return "cudnn", str(tmp / "d64.zip")


def thirty_two_bit(ctx: dict, tmp: Path) -> tuple[str, str]:
    x86 = ctx["x86"].read_bytes()
    return "cudnn", str(rezip(ctx["runtime"].dir, tmp / "x86.zip",
                              lambda m: m.update({"cuda/bin/cudnn64_8.dll": x86})))


def cuda11_build(ctx: dict, tmp: Path) -> tuple[str, str]:
    return "cudnn", str(rezip(ctx["cuda11"].dir, tmp / "cu11.zip", lambda m: None))


def damaged_dll(ctx: dict, tmp: Path) -> tuple[str, str]:
    return "cudnn", str(rezip(ctx["runtime"].dir, tmp / "damaged.zip", lambda m: m.update(
        {"cuda/bin/cudnn_ops_train64_8.dll": b"MZ" + bytes(500)})))


def other_release(ctx: dict, tmp: Path) -> tuple[str, str]:
    dlls = build_runtime(tmp / "dlls", cudnn_version=(8, 0, 5, 39))
    return "cudnn", str(rezip(dlls.dir, tmp / "805.zip", lambda m: None))


def zip_slip(ctx: dict, tmp: Path) -> tuple[str, str]:
    return "cudnn", str(rezip(ctx["runtime"].dir, tmp / "slip.zip",
                              lambda m: m.update({"cuda/../../evil.dll": b"MZ"})))


def dll_missing(ctx: dict, tmp: Path) -> tuple[str, str]:
    return "cudnn", str(rezip(ctx["runtime"].dir, tmp / "missing.zip",
                              lambda m: m.pop("cuda/bin/cudnn_cnn_infer64_8.dll")))


def toolkit_without_cublas(ctx: dict, tmp: Path) -> tuple[str, str]:
    toolkit = tmp / "v10.1"
    shutil.copytree(ctx["toolkit"], toolkit)
    (toolkit / "bin" / "cublas64_10.dll").unlink()
    return "cuda", str(toolkit)


CASES = [
    (truncated, "not a complete zip archive"),
    (corrupted, "cudnn_cnn_infer64_8.dll is corrupt"),
    (corrupted_deflate64, "cudnn64_8.dll is corrupt"),
    (thirty_two_bit, "cudnn64_8.dll is a I386 DLL, not AMD64 (32-bit)"),
    (cuda11_build, "imports cublas64_11.dll, a CUDA 11 library"),
    (damaged_dll, "cudnn_ops_train64_8.dll is not a valid Windows DLL"),
    (other_release, "cudnn_ops_infer64_8.dll: its cudnnGetVersion returns 8005, the recipe "
                    "expects 8003"),
    (zip_slip, "escapes the archive's folder"),
    (dll_missing, "lacks 1 expected file(s): bin/cudnn_cnn_infer64_8.dll"),
    (toolkit_without_cublas, "lacks 1 expected file(s): bin/cublas64_10.dll"),
]


@pytest.mark.parametrize("make_bad, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_bad_input_is_refused_and_changes_nothing(
        good: Workspace, standin_runtime, standin_runtime_cuda11, standin_cudnn_x86: Path,
        standin_zip: Path, standin_toolkit: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], make_bad, expected: str) -> None:
    ctx = {"runtime": standin_runtime, "cuda11": standin_runtime_cuda11,
           "x86": standin_cudnn_x86, "zip": standin_zip, "toolkit": standin_toolkit}
    source, path = make_bad(ctx, tmp_path)
    before = snapshot(good.root)
    code, _, err = run_cli(capsys, "pack", good.spec, "--source", f"{source}={path}")
    assert code == 2, err
    first, hint = err.splitlines()[:2]
    assert first.startswith("bundler: error: ") and expected in first, err
    assert path in first or Path(path).name in first
    assert hint.startswith("hint: ")
    assert snapshot(good.root) == before  # bundle, lock and inputs untouched
    assert not [p for p in (good.root / "dist").iterdir() if p.name.startswith(".")]


def test_malformed_spec_is_refused_and_changes_nothing(
        good: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(good.root)
    spec_text = good.spec.read_text()
    try:
        good.spec.write_text(spec_text.replace("[runtime]", "[runtime]\ncomponent = 1"))
        code, _, err = run_cli(capsys, "pack", good.spec)
    finally:
        good.spec.write_text(spec_text)
    assert code == 2
    assert "unknown key 'runtime.component' (did you mean 'components'?)" in err
    assert snapshot(good.root) == before


def test_changed_input_is_refused_by_the_lock_until_updated(
        good: Workspace, standin_runtime, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    toolkit = make_toolkit(standin_runtime.dir, tmp_path / "v10.1")
    # A different cudart (another build number) in an otherwise identical toolkit.
    rebuilt = build_dll(cudart_spec(version=(6, 14, 11, 10099)), tmp_path / "rebuilt")
    shutil.copy(rebuilt, toolkit / "bin" / "cudart64_101.dll")
    before = snapshot(good.root)
    code, _, err = run_cli(capsys, "pack", good.spec, "--source", f"cuda={toolkit}")
    assert code == 2
    assert "differ from the lock" in err and "file cudnn/cudart64_101.dll changed" in err
    assert "source cuda changed" in err and "--update-lock" in err
    assert snapshot(good.root) == before
    code, _, err = run_cli(capsys, "pack", good.spec, "--source", f"cuda={toolkit}",
                           "--update-lock")
    assert code == 0, err
    assert snapshot(good.dist)["cudnn/cudart64_101.dll"] == snapshot(
        toolkit)["bin/cudart64_101.dll"]
    # and the updated lock now accepts the new input as it is
    assert run_cli(capsys, "pack", good.spec, "--source", f"cuda={toolkit}")[0] == 0


def failing_replace(monkeypatch: pytest.MonkeyPatch, fails_on: Callable[[Path, Path], bool]
                    ) -> None:
    """Make bundler's os.replace fail like Windows does for a folder whose DLLs are in use."""
    real = os.replace

    def replace(source: os.PathLike, destination: os.PathLike) -> None:
        if fails_on(Path(source), Path(destination)):
            raise PermissionError(13, "The process cannot access the file", str(source))
        real(source, destination)

    monkeypatch.setattr("bundler.pack.output.os.replace", replace)


@pytest.mark.parametrize("fails_on", [
    lambda src, dst: dst.name.startswith(".app.old-") or src.name == "app",  # bundle in use
    lambda src, dst: src.name.startswith(".app.spec.lock."),               # lock not writable
], ids=["bundle-in-use", "lock-unwritable"])
def test_a_failed_swap_keeps_the_previous_bundle_and_lock(
        good: Workspace, standin_runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], fails_on: Callable[[Path, Path], bool]) -> None:
    toolkit = make_toolkit(standin_runtime.dir, tmp_path / "v10.1")
    shutil.copy(build_dll(cudart_spec(version=(6, 14, 11, 10098)), tmp_path / "new"),
                toolkit / "bin" / "cudart64_101.dll")
    before = snapshot(good.root)
    failing_replace(monkeypatch, fails_on)
    code, _, err = run_cli(capsys, "pack", good.spec, "--source", f"cuda={toolkit}",
                           "--update-lock")
    assert code == 2, err
    assert err.startswith("bundler: error: ") and "Traceback" not in err
    assert snapshot(good.root) == before  # no leftovers, old bundle and lock in place


@pytest.mark.parametrize("damage", [
    lambda m: m["files"][0].pop("sha256"),
    lambda m: m.update(bootstrap="x"),
    lambda m: m.update(files="x"),
    lambda m: m["bootstrap"].pop("sha256"),
    lambda m: m.update(runtime_dir="a/" * 40 + "cudnn"),
    lambda m: m.update(runtime_dir="../../.."),
    lambda m: m["files"][0].update(path="../../outside.dll"),
], ids=["entry-without-sha256", "bootstrap-not-a-table", "files-not-a-list",
        "bootstrap-without-sha256", "runtime-dir-too-deep", "runtime-dir-escapes",
        "file-path-escapes"])
def test_verify_names_a_damaged_manifest(good: Workspace, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], damage) -> None:
    workspace = tmp_path / "ws"  # a copy: other tests move the shared lock on
    shutil.copytree(good.root, workspace)
    copy = workspace / "dist" / "app"
    manifest_path = copy / "cudnn" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    damage(manifest)
    manifest_path.write_text(json.dumps(manifest))
    for command in ("verify", "doctor"):
        code, _, err = run_cli(capsys, command, copy)
        assert code == 2, err
        assert "manifest is damaged" in err and "Traceback" not in err
    # ... and packing again, as the hint says, replaces the damaged bundle
    code, _, err = run_cli(capsys, "pack", workspace / "app.spec", "--update-lock")
    assert code == 0, err
    assert run_cli(capsys, "verify", copy)[0] == 0


def test_an_output_path_that_is_a_file_is_one_line(good: Workspace, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "afile").write_text("x")
    code, _, err = run_cli(capsys, "pack", good.spec, "--out", tmp_path / "afile")
    assert code == 2
    assert err.startswith(f"bundler: error: {tmp_path / 'afile'}") and "Traceback" not in err


def test_a_bundle_with_another_runtime_dir_is_still_ours_to_replace(
        good: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "ws"
    shutil.copytree(good.root, copy)
    spec = copy / "app.spec"
    spec.write_text(spec.read_text().replace("[runtime]", '[runtime]\ndir = "rt"'))
    code, _, err = run_cli(capsys, "pack", spec, "--update-lock")
    assert code == 0, err
    assert (copy / "dist" / "app" / "rt" / "manifest.json").is_file()
    assert not (copy / "dist" / "app" / "cudnn").exists()


def test_a_swap_that_cannot_be_undone_says_where_the_previous_bundle_is(
        good: Workspace, standin_runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "ws"
    shutil.copytree(good.root, copy)
    before = snapshot(copy / "dist" / "app")
    lock_before = (copy / "app.spec.lock").read_bytes()
    toolkit = make_toolkit(standin_runtime.dir, tmp_path / "v10.1")
    shutil.copy(build_dll(cudart_spec(version=(6, 14, 11, 10097)), tmp_path / "new"),
                toolkit / "bin" / "cudart64_101.dll")
    # The lock cannot be written, and then the new bundle cannot be moved back out.
    failing_replace(monkeypatch, lambda src, dst: src.name.startswith(".app.spec.lock.")
                    or dst.name.startswith(".app.staging-"))
    code, _, err = run_cli(capsys, "pack", copy / "app.spec", "--source", f"cuda={toolkit}",
                           "--update-lock")
    assert code == 2 and "could not be fully put back" in err
    retired = Path(err.split("it is in ", 1)[1].split()[0])
    assert snapshot(retired / "app") == before  # nothing of the previous bundle is lost
    assert (copy / "app.spec.lock").read_bytes() == lock_before  # the lock was put back


@pytest.mark.parametrize("points_to", ["another-bundle", "nothing"])
@pytest.mark.parametrize("given", ["default", "--out"])
def test_an_output_folder_that_is_a_symbolic_link_is_refused(
        good: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str], points_to: str,
        given: str) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(good.root, workspace, symlinks=True)
    # app B's bundle, and dist/app (app A's output) a link to it
    other = tmp_path / "b" / "dist" / "b"
    if points_to == "another-bundle":
        shutil.copytree(good.dist, other)
    before = snapshot(tmp_path / "b") if other.exists() else {}
    link = workspace / "dist" / "app"
    shutil.rmtree(link)
    link.symlink_to(other, target_is_directory=True)
    args = ["--out", link] if given == "--out" else []
    code, _, err = run_cli(capsys, "pack", workspace / "app.spec", *args)
    assert code == 2, err
    assert err.startswith(f"bundler: error: {link}: the output folder is a symbolic link")
    assert "hint: remove the link" in err and "Traceback" not in err
    assert link.is_symlink() and os.readlink(link) == str(other)
    assert (snapshot(tmp_path / "b") if other.exists() else {}) == before
    assert not (tmp_path / "b").exists() or points_to == "another-bundle"


def test_a_typo_in_app_entry_names_the_users_path_and_the_closest_script(
        tmp_path: Path, standin_framework: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Said before any input is read: the sources here do not even exist."""
    workspace = make_workspace(tmp_path, standin_framework, {"cudnn": tmp_path / "no.zip"})
    (workspace.root / "app" / "server.py").write_text("print('other')\n")
    text = workspace.spec.read_text()
    workspace.spec.write_text(text.replace('entry = "main.py"', 'entry = "mian.py"'))
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2
    assert (f"bundler: error: {workspace.spec}: app.entry = 'mian.py': app/mian.py does not "
            "exist (did you mean 'main.py'?)\n") in err
    assert "staging" not in err and "hint: set app.entry" in err
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize("dist_before", [False, True])
def test_a_failed_first_pack_leaves_no_output_folder_it_made(
        tmp_path: Path, standin_runtime, standin_toolkit: Path, standin_framework: Path,
        capsys: pytest.CaptureFixture[str], dist_before: bool) -> None:
    """The pack fails while staging (a member's CRC): dist/ goes if this pack made it,
    an empty dist/ that was there before stays."""
    bad = corrupted({"runtime": standin_runtime}, tmp_path)[1]
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": Path(bad), "cuda": standin_toolkit})
    if dist_before:
        (workspace.root / "dist").mkdir()
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--out",
                           workspace.root / "dist" / "nested" / "app")
    assert code == 2 and "cudnn_cnn_infer64_8.dll is corrupt" in err
    assert (workspace.root / "dist").exists() == dist_before
    assert not (workspace.root / "dist" / "nested").exists()
    assert sorted(p.name for p in workspace.root.iterdir()) == [
        "app", "app.spec", *(["dist"] if dist_before else [])]


@pytest.mark.parametrize("kind", ["missing", "a file"])
def test_a_toolkit_path_that_is_no_folder_says_which(
        tmp_path: Path, standin_zip: Path, standin_framework: Path,
        capsys: pytest.CaptureFixture[str], kind: str) -> None:
    toolkit = tmp_path / "v10.1"
    if kind == "a file":
        toolkit.write_text("not a toolkit")
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": toolkit})
    code, _, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 2
    said = ("no such folder (source 'cuda', from app.spec)" if kind == "missing"
            else "source 'cuda' (from app.spec) is not a folder")
    assert err.startswith(f"bundler: error: {toolkit}: {said}\n"), err
