"""An edit re-packs in time proportional to what changed (issue 41): the store keeps,
sealed, each object's stamp when it last hashed (or linked) it, and a pack takes an
object whose stamp is still that one without reading it again (git's index). The
racy-stamp rule: a stamp not older than the record's clock is read again. A byte
changed in a stored object, even with its size and modification time put back, is
read, found damaged and the input read instead."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bundler.pack import reuse
from bundler.pack.store import hashed
from bundler.pack.store.seal import seal
from bundler.support.file_stamps import stamp
from tests.harness.packing import Workspace, run_cli

KEY = b"k" * 32
SHA = "ab" * 32


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def pack_json(capsys: pytest.CaptureFixture[str], workspace: Workspace, *more: object
              ) -> dict[str, object]:
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--json", *more)
    assert code == 0, err
    summary: dict[str, object] = json.loads(out)
    return summary


def reads_of_stored_files(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every file the reuse step hashes, as it hashes it."""
    read: list[Path] = []
    for name in ("sha256_file", "sha256_crc32_file"):
        real = getattr(reuse, name)

        def counted(path: Path, *args: object, real: object = real) -> object:
            read.append(path)
            return real(path, *args)   # type: ignore[operator]

        monkeypatch.setattr(reuse, name, counted)
    return read


def test_an_edit_repacks_without_reading_the_stored_runtime(
        workspace: Workspace, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    entry = workspace.root / "app" / "main.py"
    pack_json(capsys, workspace)
    read = reads_of_stored_files(monkeypatch)
    entry.write_text(entry.read_text() + "# one\n")
    first = pack_json(capsys, workspace)   # objects a cold pack added: read once
    assert first["runtime_origin"]["files"] == {"store": len(first["files"])}  # type: ignore[index,arg-type]
    assert read
    read.clear()
    entry.write_text(entry.read_text() + "# two\n")
    again = pack_json(capsys, workspace)
    assert again["runtime_origin"]["files"] == {"store": len(again["files"])}  # type: ignore[index,arg-type]
    assert read == []   # every stored object's stamp was the recorded one
    code, out, err = run_cli(capsys, "verify", again["out"])   # verify reads every byte
    assert code == 0, out + err


def test_a_stored_object_written_in_place_is_read_again(
        workspace: Workspace, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A byte changed with the size and modification time put back: the change time
    moved, the record does not hold, the object is read, found damaged and replaced
    from the input."""
    first = pack_json(capsys, workspace)
    pack_json(capsys, workspace, "--recheck")   # recorded
    entry = first["files"][0]   # type: ignore[index]
    stored = Path(os.environ["BUNDLER_STORE"]) / "objects" / entry["sha256"][:2] / \
        entry["sha256"]
    facts = stored.stat()
    stored.chmod(0o644)
    with open(stored, "r+b") as out:
        out.write(b"\x00" if out.read(1) != b"\x00" else b"\x01")
    stored.chmod(facts.st_mode & 0o777)
    os.utime(stored, ns=(facts.st_atime_ns, facts.st_mtime_ns))
    read = reads_of_stored_files(monkeypatch)
    again = pack_json(capsys, workspace, "--recheck")
    assert stored in read
    code, out, err = run_cli(capsys, "verify", again["out"])
    assert code == 0, out + err


def test_a_stamp_not_older_than_the_clock_is_not_recorded(tmp_path: Path) -> None:
    store = tmp_path / "store"
    file = tmp_path / "object"
    file.write_bytes(b"bytes")
    now = stamp(file)
    assert not hashed.remember(store, KEY, SHA, now, now[2])   # the same tick
    assert hashed.known(store, KEY, SHA, now) is None
    assert hashed.remember(store, KEY, SHA, now, now[2] + 1)
    assert hashed.known(store, KEY, SHA, now) is not None
    assert hashed.known(store, KEY, SHA, (*now[:2], now[2] + 1, *now[3:])) is None
    assert hashed.known(store, KEY, SHA, (now[0] + 1, *now[1:])) is None   # another size
    assert hashed.known(store, KEY, SHA, (*now[:3], now[3] + 1, now[4])) is None   # file
    assert hashed.known(store, b"x" * 32, SHA, now) is None   # another key's seal


def test_a_record_whose_clock_is_not_past_its_stamp_is_not_believed(tmp_path: Path) -> None:
    """Even sealed (written by a bundler without the rule, or a clock set back)."""
    store = tmp_path / "store"
    now = (5, 10, 20, 30, 40)
    path = store / hashed.FOLDER / SHA[:2] / f"{SHA}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(seal(KEY, "hashed-object", SHA,
                                    {"stamp": list(now), "at": 20, "crc": None})))
    assert hashed.known(store, KEY, SHA, now) is None
    path.write_text(json.dumps(seal(KEY, "hashed-object", SHA,
                                    {"stamp": list(now), "at": 21, "crc": None})))
    assert hashed.known(store, KEY, SHA, now) is not None


def test_a_link_after_the_proof_is_recorded_only_where_just_the_change_time_moved(
        tmp_path: Path) -> None:
    store = tmp_path / "store"
    file = tmp_path / "object"
    file.write_bytes(b"bytes")
    proven = stamp(file)
    os.link(file, tmp_path / "bundle-link")   # the change time moves, nothing else
    hashed.relinked(store, KEY, [hashed.Proof(SHA, file, proven, None)])
    assert hashed.known(store, KEY, SHA, stamp(file)) is not None
    file.write_bytes(b"other")   # written: its size and modification time differ
    hashed.forget(store, SHA)
    hashed.relinked(store, KEY, [hashed.Proof(SHA, file, proven, None)])
    assert hashed.known(store, KEY, SHA, stamp(file)) is None


def test_prune_drops_what_the_store_knew_of_the_objects_it_removes(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    pack_json(capsys, workspace)
    pack_json(capsys, workspace, "--recheck")   # the objects read: their stamps recorded
    records = Path(os.environ["BUNDLER_STORE"]) / hashed.FOLDER
    assert list(records.glob("*/*.json"))
    workspace.spec.with_name("app.spec.lock").unlink()   # nothing pins the objects now
    code, _, err = run_cli(capsys, "cache", "prune")
    assert code == 0, err
    assert not list(records.glob("*/*.json"))
