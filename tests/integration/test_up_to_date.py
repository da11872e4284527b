"""A re-pack with nothing changed since the last pack answers "up to date" without
packing (bundler/pack/up_to_date.py): nothing read, written or swapped. Any change to
what the bundle was made from or consists of, and `--recheck`, packs in full. Real packs
of the stand-in runtime through the command line."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from bundler.commands import cmd_pack
from bundler.formats.swap_journal import zip_note_path
from bundler.pack import up_to_date
from bundler.support import file_stamps
from tests.harness.packing import Workspace, run_cli

PACK = up_to_date.PackKey("p", {"the spec's path": "app.spec"})


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def pack_json(capsys: pytest.CaptureFixture[str], workspace: Workspace, *more: object
              ) -> dict[str, object]:
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--json", *more)
    assert code == 0, err
    summary: dict[str, object] = json.loads(out)
    return summary


def test_an_unchanged_repack_is_up_to_date_at_once(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    cold = pack_json(capsys, workspace, "--zip", zipped)
    assert cold["up_to_date"] is False
    bundle = Path(str(cold["out"]))
    before = (bundle.stat().st_ino, zipped.stat().st_mtime_ns,
              workspace.spec.with_name("app.spec.lock").stat().st_mtime_ns)

    def no_pack(*args: object, **kwargs: object) -> None:
        raise AssertionError("an unchanged re-pack packed")

    monkeypatch.setattr(cmd_pack, "pack", no_pack)
    warm = pack_json(capsys, workspace, "--zip", zipped)
    assert warm["up_to_date"] is True
    assert warm["files"] == cold["files"] and warm["out"] == cold["out"]
    assert warm["zip_members"] == {**cold["zip_members"], "reused": 0,   # type: ignore[dict-item]
                                   "compressed": 0, "hashed": 0, "unchanged": True}
    assert (bundle.stat().st_ino, zipped.stat().st_mtime_ns,
            workspace.spec.with_name("app.spec.lock").stat().st_mtime_ns) == before
    used = Path(os.environ["BUNDLER_STORE"]) / "used"   # the size cap's last use: now
    assert {entry["sha256"] for entry in warm["files"]} <= {   # type: ignore[attr-defined]
        marker.name for marker in used.iterdir()
        if marker.stat().st_mtime_ns > before[1]}
    # --locked answers at once too: the lock is the one that pack wrote
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped, "--locked")
    assert code == 0, err
    assert out.startswith(f"up to date: {bundle}: nothing changed since the pack of ")
    assert "their bytes were not read again: `bundler verify` reads them" in out
    assert f"  zip: {zipped}" in out


def _edit_app(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    entry = workspace.root / "app" / "main.py"
    entry.write_text(entry.read_text() + "# edited\n")


def _add_to_bundle(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    (bundle / "stray.txt").write_text("not the pack's\n")


def _same_size_same_time(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    """The entry script's bytes changed in place, its size and modification time put
    back: only its change time tells."""
    target = bundle / "main.py"
    facts = target.stat()
    with open(target, "r+b") as out:
        out.write(b"#" * facts.st_size)
    os.utime(target, ns=(facts.st_atime_ns, facts.st_mtime_ns))
    assert (target.stat().st_ino, target.stat().st_size, target.stat().st_mtime_ns) == \
        (facts.st_ino, facts.st_size, facts.st_mtime_ns)


def _remove_zip(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    zipped.unlink()


def _edit_spec(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    workspace.spec.write_text(workspace.spec.read_text() + "# a comment\n")


def _remove_lock(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    workspace.spec.with_name("app.spec.lock").unlink()


def _edit_own_code(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    (up_to_date.own_code() / "version.py").write_text("__version__ = '0.0.0'\n")


def _killed_zip(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    """What a pack killed while writing its zip leaves: the note beside the bundle and
    the .partial it names (a later pack removes both)."""
    partial = zipped.with_name(f".{zipped.name}.abcd1234.partial")
    partial.write_bytes(b"PK half a zip")
    zip_note_path(bundle).write_text(str(zipped), encoding="utf-8")


def _forge_record(workspace: Workspace, bundle: Path, zipped: Path) -> None:
    """A record whose body was changed after it was sealed is not one."""
    record = next(Path(os.environ["BUNDLER_STORE"]).glob(f"{up_to_date.FOLDER}/*.json"))
    data = json.loads(record.read_text())
    data["body"]["packed_at"] = "1999-01-01 00:00:00"
    record.write_text(json.dumps(data))


CHANGES: dict[str, Callable[[Workspace, Path, Path], None]] = {
    "an app file edited": _edit_app, "a file added to the bundle": _add_to_bundle,
    "the entry's bytes, its size and time kept": _same_size_same_time,
    "the zip removed": _remove_zip, "the spec edited": _edit_spec,
    "the lock removed": _remove_lock, "bundler's own code changed": _edit_own_code,
    "a forged record": _forge_record, "a killed --zip's debris": _killed_zip}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_any_change_packs_in_full(
        change: str, workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    own = tmp_path / "own-code"   # bundler's files as the pack sees them, to change one
    shutil.copytree(up_to_date.own_code(), own,
                    ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(up_to_date, "_OWN_CODE", own)
    zipped = tmp_path / "app.zip"
    cold = pack_json(capsys, workspace, "--zip", zipped)
    assert pack_json(capsys, workspace, "--zip", zipped)["up_to_date"] is True
    bundle = Path(str(cold["out"]))
    CHANGES[change](workspace, bundle, zipped)
    again = pack_json(capsys, workspace, "--zip", zipped)
    assert again["up_to_date"] is False, change
    assert not (bundle / "stray.txt").exists() and zipped.is_file()
    assert not list(tmp_path.glob("*.partial")) and not zip_note_path(bundle).exists()
    code, out, err = run_cli(capsys, "verify", bundle)
    assert code == 0, out + err
    assert pack_json(capsys, workspace, "--zip", zipped)["up_to_date"] is True


@pytest.mark.parametrize("other", ["--recheck", "another --zip", "no --zip", "--copy",
                                   "a PIP_ variable"])
def test_other_options_pack_in_full(
        other: str, workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    pack_json(capsys, workspace, "--zip", zipped)
    more: list[object] = {"--recheck": ["--zip", zipped, "--recheck"],
                          "another --zip": ["--zip", tmp_path / "other.zip"],
                          "no --zip": [], "--copy": ["--zip", zipped, "--copy"],
                          "a PIP_ variable": ["--zip", zipped]}[other]
    if other == "a PIP_ variable":
        monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    assert pack_json(capsys, workspace, *more)["up_to_date"] is False


def test_files_beside_the_bundle_and_zip_change_nothing(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A copy of the zip beside it, another bundle beside this one: still up to date."""
    zipped = tmp_path / "app.zip"
    cold = pack_json(capsys, workspace, "--zip", zipped)
    shutil.copyfile(zipped, tmp_path / "copy.zip")
    (Path(str(cold["out"])).parent / "other-app").mkdir()
    assert pack_json(capsys, workspace, "--zip", zipped)["up_to_date"] is True


def test_a_stamp_in_the_clock_tick_of_the_record_waits_for_the_next(
        tmp_path: Path) -> None:
    """A file written just before the record: the record waits until the file system's
    clock has moved past it, so a write right after the record still shows."""
    store, key = tmp_path / "store", b"k" * 32
    written = tmp_path / "file"
    for _ in range(20):
        started = up_to_date.clock(store)
        written.write_bytes(b"one")
        made = up_to_date.MadeFrom((written,), (), outputs=(written,))
        assert up_to_date.remember(store, key, PACK, made, {"out": "x"}, started)
        written.write_bytes(b"two")   # the same size, at once
        assert isinstance(up_to_date.check(store, key, PACK), up_to_date.Stale)


def test_prune_removes_the_records_of_packs_whose_lock_is_gone(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pack_json(capsys, workspace)
    records = Path(os.environ["BUNDLER_STORE"]) / up_to_date.FOLDER
    assert len(list(records.glob("*.json"))) == 1
    code, _, err = run_cli(capsys, "cache", "prune")
    assert code == 0, err
    assert len(list(records.glob("*.json"))) == 1   # its lock is there: kept
    workspace.spec.with_name("app.spec.lock").unlink()
    code, _, err = run_cli(capsys, "cache", "prune")
    assert code == 0, err
    assert not list(records.glob("*.json"))


def test_a_file_whose_stamp_cannot_be_read_is_never_up_to_date(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Present but unreadable (no access: a stamp is an open on Windows) is not absent:
    that pack keeps no record, and a record naming it does not hold. Both as a file the
    record names and as an entry of a recorded folder."""
    store, key = tmp_path / "store", b"k" * 32
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "lib.dll").write_bytes(b"one")
    (tmp_path / "app.spec").write_text("[app]\n")
    for made in (up_to_date.MadeFrom((), (folder,)),
                 up_to_date.MadeFrom((tmp_path / "app.spec",), ())):
        monkeypatch.undo()
        assert up_to_date.remember(store, key, PACK, made, {"out": "x"},
                                   up_to_date.clock(store))
        assert isinstance(up_to_date.check(store, key, PACK), up_to_date.Fresh)

        def denied(path: str, follow_links: bool,
                   readable: Callable[[str, bool], object] = file_stamps._posix_stamp
                   ) -> object:
            if path.endswith(("lib.dll", "app.spec")):
                raise PermissionError(13, "Permission denied", path)
            return readable(path, follow_links)

        monkeypatch.setattr(file_stamps, "_posix_stamp", denied)
        monkeypatch.setattr(file_stamps, "_stamp", denied)
        assert isinstance(up_to_date.check(store, key, PACK), up_to_date.Stale)
        other = up_to_date.PackKey("q", PACK.parts)
        assert not up_to_date.remember(store, key, other, made, {"out": "x"},
                                       up_to_date.clock(store))
        assert not (store / up_to_date.FOLDER / "q.json").exists()
