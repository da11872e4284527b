"""A one-file edit re-packs with `--zip` without reading the kept streams again (issue 41
item 4): a kept stream whose stamp is still the one sealed when its bytes last hashed to
its record (store/hashed.py's rule, records beside the streams in `zip-streams/`) is
copied into the new zip by the kernel, unread (support/file_copy.py); any other is read
and hashed as it is copied, then recorded. The zips stay byte for byte the ones a pack
without any kept stream writes. Real packs of the stand-in runtime."""

from __future__ import annotations

import errno
import json
import os
import zipfile
from pathlib import Path
from typing import BinaryIO

import pytest

from bundler.pack.store import hashed
from bundler.pack.store import zip_streams as streams_module
from bundler.pack.store.seal import seal, store_key
from bundler.pack.store.zip_streams import HASHED, KeptStream, StreamCache
from bundler.pack.zip import unchanged
from bundler.support import file_copy
from bundler.support.file_stamps import stamp
from tests.harness.packing import Workspace, run_cli
from tests.integration.test_zip_reuse import streams, zip_pack


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def edit(workspace: Workspace, text: str) -> None:
    entry = workspace.root / "app" / "main.py"
    entry.write_text(entry.read_text() + f"# {text}\n")


def kept(suffix: str) -> list[Path]:
    return streams(suffix.lstrip("."))


class Spy:
    """What the writer does with kept streams: the ranges the kernel copied, and the
    streams read and hashed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.copied: list[int] = []
        self.read: list[Path] = []
        real_copy = streams_module.copy_range
        real_read = streams_module.StreamCache._copied_read

        def copy_range(*args: int) -> int:
            done = real_copy(*args)
            self.copied.append(done)
            return done

        def copied_read(cache: StreamCache, kept: KeptStream, out: BinaryIO) -> bool:
            self.read.append(kept.path)
            return real_read(cache, kept, out)

        monkeypatch.setattr(streams_module, "copy_range", copy_range)
        monkeypatch.setattr(StreamCache, "_copied_read", copied_read)

    def clear(self) -> None:
        self.copied.clear()
        self.read.clear()


def fresh_zip(capsys: pytest.CaptureFixture[str], workspace: Workspace, zipped: Path,
              monkeypatch: pytest.MonkeyPatch) -> bytes:
    """The zip of the bundle as it is now, compressed anew without any store."""
    with monkeypatch.context() as patched:
        patched.setenv("BUNDLER_STORE", "off")
        assert zip_pack(capsys, workspace, zipped, "--recheck")["reused"] == 0
    return zipped.read_bytes()


def test_an_edit_copies_kept_streams_unread(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    cold = zip_pack(capsys, workspace, zipped)
    spy = Spy(monkeypatch)
    edit(workspace, "one")
    first = zip_pack(capsys, workspace, zipped)   # streams the cold zip made: read once
    assert first["compressed"] == 1 and first["reused"] == cold["compressed"] - 1
    assert first["unread"] == 0 and len(spy.read) == first["reused"] and not spy.copied
    assert len(kept(HASHED)) == first["reused"]   # each one's stamp recorded
    spy.clear()
    compared: list[tuple[object, ...]] = []   # the old zip's streams hashed to compare
    real_hash = unchanged._stream_sha256
    monkeypatch.setattr(unchanged, "_stream_sha256",
                        lambda *args: compared.append(args) or real_hash(*args))
    edit(workspace, "two")
    again = zip_pack(capsys, workspace, zipped)
    assert compared == []   # the walk met the edit first: no stream of the old zip hashed
    assert again["compressed"] == 1 and again["reused"] == first["reused"]
    assert again["unread"] == again["reused"]   # every kept stream copied unread...
    assert spy.read == []                       # ...none read and hashed...
    assert len(spy.copied) == again["reused"]   # ...each copied by the kernel, whole
    with zipfile.ZipFile(zipped) as archive:
        assert sum(spy.copied) == sum(info.compress_size for info in archive.infolist()
                                      if not info.filename.endswith("/main.py"))
        assert archive.testzip() is None
    # The very bytes a zip compressed anew, without a store, holds.
    assert zipped.read_bytes() == fresh_zip(capsys, workspace, tmp_path / "f.zip",
                                            monkeypatch)


def test_a_kept_stream_changed_in_place_is_read_and_compressed_anew(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """One stream's byte changed with its size and modification time put back (its
    change time moved: the record no longer holds): read, found wrong, dropped and its
    member compressed anew. Another's modification time alone changed: read, found
    right, copied and its record renewed. The rest: unread."""
    zipped = tmp_path / "app.zip"
    zip_pack(capsys, workspace, zipped)
    edit(workspace, "one")
    zip_pack(capsys, workspace, zipped)   # every kept stream read once: recorded
    damaged, touched = sorted(kept(".deflate"), key=lambda p: p.stat().st_size)[-2:]
    facts = damaged.stat()
    with open(damaged, "r+b") as out:
        out.seek(facts.st_size // 2)
        byte = out.read(1)
        out.seek(facts.st_size // 2)
        out.write(bytes([byte[0] ^ 0xFF]))
    os.utime(damaged, ns=(facts.st_atime_ns, facts.st_mtime_ns))
    assert damaged.stat().st_size == facts.st_size
    os.utime(touched, ns=(1_000_000_000, 1_000_000_000))
    spy = Spy(monkeypatch)
    edit(workspace, "two")
    again = zip_pack(capsys, workspace, zipped)
    assert again["compressed"] == 2   # main.py and the damaged stream's member
    assert sorted(spy.read) == sorted([damaged, touched])   # the only ones read
    assert again["unread"] == again["reused"] - 1
    with zipfile.ZipFile(zipped) as archive:
        assert archive.testzip() is None
    assert zipped.read_bytes() == fresh_zip(capsys, workspace, tmp_path / "f.zip",
                                            monkeypatch)
    spy.clear()
    edit(workspace, "three")   # the damaged member's new stream: no record yet, read once
    last = zip_pack(capsys, workspace, zipped)
    assert last["unread"] == last["reused"] - 1 and spy.read == [damaged]


def test_a_stream_written_while_the_kernel_copies_it_is_read_instead(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The stamp is taken again once a stream is copied unread: a write during the copy
    moves it, and the stream is read, found wrong and its member compressed anew."""
    zipped = tmp_path / "app.zip"
    zip_pack(capsys, workspace, zipped)
    edit(workspace, "one")
    zip_pack(capsys, workspace, zipped)
    largest = max(kept(".deflate"), key=lambda p: p.stat().st_size)
    real = file_copy.copy_range

    def written_meanwhile(source: int, target: int, *args: int) -> int:
        done = real(source, target, *args)
        if os.fstat(source).st_ino == largest.stat().st_ino:
            with open(largest, "r+b") as out:
                out.write(bytes([out.read(1)[0] ^ 0xFF]))
        return done

    monkeypatch.setattr(streams_module, "copy_range", written_meanwhile)
    edit(workspace, "two")
    again = zip_pack(capsys, workspace, zipped)
    assert again["compressed"] == 2 and again["unread"] == again["reused"]
    assert zipped.read_bytes() == fresh_zip(capsys, workspace, tmp_path / "f.zip",
                                            monkeypatch)


def test_a_record_of_another_kind_or_key_proves_no_stream(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A store object's record of its last hash, sealed with the store's key, put in a
    stream's place names the right stamp but is not a stream's: the stream is read."""
    zipped = tmp_path / "app.zip"
    zip_pack(capsys, workspace, zipped)
    edit(workspace, "one")
    zip_pack(capsys, workspace, zipped)
    record = max(kept(HASHED), key=lambda p: p.with_suffix(".deflate").stat().st_size)
    body = json.loads(record.read_text())["body"]
    record.write_text(json.dumps(seal(store_key(os.environ), "hashed-object", record.stem,
                                      body)))
    spy = Spy(monkeypatch)
    edit(workspace, "two")
    again = zip_pack(capsys, workspace, zipped)
    assert spy.read == [record.with_suffix(".deflate")]
    assert again["unread"] == again["reused"] - 1


def test_prune_and_the_size_cap_drop_the_record_with_the_stream(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    entry = workspace.root / "app" / "main.py"
    original = entry.read_text()
    zip_pack(capsys, workspace, zipped)
    edit(workspace, "one")
    zip_pack(capsys, workspace, zipped)   # the other streams read: their records written
    before = set(kept(HASHED))
    entry.write_text(original)   # the first main.py again: its stream read and recorded
    zip_pack(capsys, workspace, zipped)
    (recorded,) = set(kept(HASHED)) - before
    edit(workspace, "two")
    monkeypatch.setenv("BUNDLER_STORE_MAX", "1")   # the size cap: what this zip used stays
    zip_pack(capsys, workspace, zipped)
    assert not recorded.with_suffix(".deflate").exists()   # trimmed...
    assert not recorded.exists()                          # ...with its record
    assert {p.with_suffix(".deflate") for p in kept(HASHED)} <= set(kept(".deflate"))
    # A stream deleted by hand: prune removes the record of its last hash too.
    by_hand = kept(HASHED)[0].with_suffix(".deflate")
    by_hand.unlink()
    monkeypatch.delenv("BUNDLER_STORE_MAX")
    code, _, err = run_cli(capsys, "cache", "prune")
    assert code == 0, err
    assert by_hand.with_suffix(HASHED) not in kept(HASHED)
    assert kept(HASHED)   # the others' records stay
    # `bundler cache prune` under a cap every stream exceeds: streams and records go.
    monkeypatch.setenv("BUNDLER_STORE_MAX", "1")
    code, _, err = run_cli(capsys, "cache", "prune")
    assert code == 0, err
    assert kept(".deflate") == [] and kept(HASHED) == []


@pytest.mark.parametrize("refused", ["copy_file_range", "both", "nothing copied"])
def test_the_copy_falls_back_where_the_kernel_cannot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: str) -> None:
    """ENOSYS/EXDEV from copy_file_range: sendfile; from both: reads and writes; a
    kernel call that copies nothing: the next way. The same bytes every way."""
    source, target = tmp_path / "source", tmp_path / "target"
    data = os.urandom(3 << 20) + b"tail"
    source.write_bytes(data)
    target.write_bytes(b"head")

    def cannot(*args: object) -> int:
        raise OSError(errno.EXDEV if refused != "both" else errno.ENOSYS, "refused")

    if refused == "nothing copied":
        monkeypatch.setattr(os, "copy_file_range", lambda *args: 0, raising=False)
    else:
        monkeypatch.setattr(os, "copy_file_range", cannot, raising=False)
    if refused == "both":
        monkeypatch.setattr(os, "sendfile", cannot, raising=False)
    with open(source, "rb") as src, open(target, "r+b") as out:
        assert file_copy.copy_range(src.fileno(), out.fileno(), 5, 4, len(data)) == \
            len(data) - 5   # the source ends first
    assert target.read_bytes() == b"head" + data[5:]


def test_stream_records_use_the_stores_rule(tmp_path: Path) -> None:
    """The racy-stamp rule holds for stream records as for objects' (shared code)."""
    file = tmp_path / "stream"
    file.write_bytes(b"bytes")
    now = stamp(file)
    records = streams_module._HASHED
    key = b"k" * 32
    assert not hashed.remember(tmp_path, key, "cd" * 32, now, now[2], records=records)
    assert hashed.remember(tmp_path, key, "cd" * 32, now, now[2] + 1, records=records)
    assert hashed.known(tmp_path, key, "cd" * 32, now, records) is not None
    assert hashed.known(tmp_path, key, "cd" * 32, now) is None   # not an object's
