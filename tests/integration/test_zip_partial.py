"""`--zip`: a pack killed between the bundle's swap and the zip's rename leaves its
finished zip as a temporary file beside PATH; the next pack of that zip removes it, and
never ships it meanwhile (an app folder of "." holds dist/ and what was written there).
The kill is real: the pack runs as its own process, SIGKILLed at the swap's last step
(bundler's crash-test checkpoints, as tests/integration/test_crash_safety.py does)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from bundler.formats.swap_journal import zip_note_path
from tests.harness.packing import Workspace, run_cli
from tests.integration.test_crash_safety import bundler

KILLED_AFTER_THE_SWAP = "swap-lock-replaced"   # the bundle and lock in place, not the zip


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def partials(folder: Path, zip_name: str = "app.zip") -> list[str]:
    return sorted(p.name for p in folder.iterdir()
                  if p.name.startswith(f".{zip_name}.") and p.name.endswith(".partial"))


def killed_pack(workspace: Workspace, zipped: Path) -> str:
    """Pack with --zip, killed once the bundle is swapped in: the zip's temporary file."""
    result = bundler("pack", workspace.spec, "--zip", zipped, kill_at=KILLED_AFTER_THE_SWAP)
    assert result.returncode != 0 and not zipped.exists(), result.stderr
    [left] = partials(zipped.parent)
    with zipfile.ZipFile(zipped.parent / left) as archive:   # finished, not renamed
        assert archive.testzip() is None
    return left


def test_the_next_pack_removes_the_zip_a_killed_pack_left(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "out" / "app.zip"
    killed_pack(workspace, zipped)
    # Not this zip's (another zip's, or not named as mkstemp names them): left alone.
    others = [".other.zip.abcd1234.partial", ".app.zip.mine.partial"]
    for name in others:
        (zipped.parent / name).write_bytes(b"someone else's")
    code, _, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped)
    assert code == 0, err
    assert partials(zipped.parent) == [".app.zip.mine.partial"]
    assert (zipped.parent / ".other.zip.abcd1234.partial").exists()
    with zipfile.ZipFile(zipped) as archive:
        archive.extractall(tmp_path / "unzipped")
    code, out, _ = run_cli(capsys, "verify", tmp_path / "unzipped" / "app")
    assert code == 0 and out.startswith("ok:"), out


def test_a_killed_packs_zip_in_the_app_folder_is_not_shipped(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """App folder ".": the temporary zip lies in dist/, inside the app folder, when the
    next pack copies the app (before it writes its own zip)."""
    spec = workspace.spec
    spec.write_text(spec.read_text().replace('path = "app"', 'path = "."')
                    .replace('entry = "main.py"', 'entry = "app/main.py"'))
    zipped = workspace.root / "dist" / "app.zip"
    left = killed_pack(workspace, zipped)
    # Its note removed: the zip is as another bundle's pack (or an older bundler) left
    # it, which this pack does not remove before it copies the app.
    zip_note_path(workspace.dist).unlink()
    code, out, err = run_cli(capsys, "pack", spec, "--zip", zipped)
    assert code == 0, err
    assert f"dist/{left} (a zip bundler made" in out   # named as left out, not copied
    assert not [p for p in workspace.dist.rglob("*") if ".app.zip." in p.name]
    assert partials(zipped.parent) == []
    with zipfile.ZipFile(zipped) as archive:
        assert not [name for name in archive.namelist() if ".app.zip." in name]


def test_the_specs_app_zip_is_written_by_every_pack_and_cleaned_after_a_kill(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`[app] zip = "dist/app.zip"` (relative to the spec) is `--zip` for every pack of
    the spec; `--zip PATH` given on the command line wins."""
    spec = workspace.spec
    spec.write_text(spec.read_text().replace('path = "app"\n',
                                             'path = "app"\nzip = "dist/app.zip"\n'))
    zipped = workspace.root / "dist" / "app.zip"
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    assert f"  zip: {zipped}" in out.splitlines()
    with zipfile.ZipFile(zipped) as archive:
        assert "app/cudnn/manifest.json" in archive.namelist()
    zipped.unlink()
    elsewhere = tmp_path / "handed-over.zip"
    assert run_cli(capsys, "pack", spec, "--zip", elsewhere)[0] == 0
    assert elsewhere.is_file() and not zipped.exists()
    # A pack of the spec killed after its swap: the next plain pack cleans up.
    result = bundler("pack", spec, kill_at=KILLED_AFTER_THE_SWAP)
    assert result.returncode != 0 and len(partials(zipped.parent)) == 1, result.stderr
    assert run_cli(capsys, "pack", spec)[0] == 0
    assert zipped.is_file() and partials(zipped.parent) == []


@pytest.mark.parametrize("app_folder", ["app", "."])
def test_any_later_pack_removes_a_killed_zip_without_zipping(
        workspace: Workspace, tmp_path: Path, app_folder: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`--zip PATH` given once, killed while the zip was written: the next pack of the
    bundle, without --zip, knows PATH from the note beside the bundle and removes the
    temporary zip (before it copies an app folder of "." that holds it)."""
    spec = workspace.spec
    if app_folder == ".":
        spec.write_text(spec.read_text().replace('path = "app"', 'path = "."')
                        .replace('entry = "main.py"', 'entry = "app/main.py"'))
    zipped = tmp_path / "handed-over" / "app.zip"
    if app_folder == ".":
        zipped = workspace.root / "dist" / "app.zip"
    result = bundler("pack", spec, "--zip", zipped, kill_at="zip-member-written")
    assert result.returncode != 0 and not zipped.exists(), result.stderr
    assert len(partials(zipped.parent)) == 1
    assert zip_note_path(workspace.dist).read_text() == str(zipped)
    code, out, err = run_cli(capsys, "pack", spec)   # no --zip
    assert code == 0, err
    assert partials(zipped.parent) == [] and not zip_note_path(workspace.dist).exists()
    assert ".partial" not in out
    assert not [p for p in workspace.dist.rglob("*") if ".partial" in p.name]
