"""`--zip` reuses work: each member's deflate stream is kept in the store's folder
(bundler/pack/store/zip_streams.py) and copied into the next zip instead of compressed again;
new members are compressed in pieces on a pool of threads (bundler/pack/zip/writer.py).
Real packs of the stand-in runtime; the zips are compared byte for byte."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import zipfile
from pathlib import Path

import pytest

from bundler.pack.store.zip_streams import FOLDER
from bundler.pack.zip import output as zip_output
from bundler.pack.zip import writer as zip_writer
from bundler.support.deflate import FAST, zip_compressor
from tests.harness.packing import Workspace, run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def zip_pack(capsys: pytest.CaptureFixture[str], workspace: Workspace, zipped: Path,
             *more: object) -> dict[str, int]:
    """Pack with --zip; how many members the zip has, reused and compressed."""
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped, "--json",
                             *more)
    assert code == 0, err
    counts = json.loads(out)["zip_members"]
    assert counts["members"] == counts["reused"] + counts["compressed"] + sum(
        1 for info in zipfile.ZipFile(zipped).infolist() if info.is_dir())
    return counts


def streams(kind: str) -> list[Path]:
    return sorted((Path(os.environ["BUNDLER_STORE"]) / FOLDER).glob(f"*/*.{kind}"))


def test_a_repack_compresses_nothing_and_gives_the_same_bytes(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    first, second, fresh = tmp_path / "1.zip", tmp_path / "2.zip", tmp_path / "3.zip"
    cold = zip_pack(capsys, workspace, first)
    assert cold["reused"] == 0 and cold["compressed"] >= 10
    assert len(streams("deflate")) == cold["compressed"]
    warm = zip_pack(capsys, workspace, second)
    assert warm["compressed"] == 0 and warm["reused"] == cold["compressed"]
    assert first.read_bytes() == second.read_bytes()
    # The runtime's files were hashed as they were staged: not read again to find their
    # streams; the app's files and the manifest are.
    runtime = json.loads(workspace.spec.with_name("app.spec.lock").read_text())["files"]
    assert len(runtime) >= 5 and warm["hashed"] == warm["reused"] - len(runtime)
    # Compressed anew, on one thread, with no store: the very same bytes.
    monkeypatch.setattr(zip_output, "default_workers", lambda: 1)
    monkeypatch.setenv("BUNDLER_STORE", "off")
    assert zip_pack(capsys, workspace, fresh)["reused"] == 0
    assert first.read_bytes() == fresh.read_bytes()
    with zipfile.ZipFile(first) as archive:
        assert archive.testzip() is None


def test_a_changed_file_alone_is_compressed_again(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zipped = tmp_path / "app.zip"
    cold = zip_pack(capsys, workspace, zipped)
    (workspace.root / "app" / "main.py").write_text("print('changed')\n" * 5000)
    warm = zip_pack(capsys, workspace, zipped)
    assert warm["compressed"] == 1 and warm["reused"] == cold["compressed"] - 1
    with zipfile.ZipFile(zipped) as archive:
        assert archive.read("app/main.py").endswith(b"print('changed')\n" * 5000)
        assert archive.testzip() is None


def test_a_damaged_or_forged_stream_is_not_copied(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "1.zip", tmp_path / "2.zip"
    cold = zip_pack(capsys, workspace, first)
    largest = max(streams("deflate"), key=lambda p: p.stat().st_size)
    damaged = bytearray(largest.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF   # same size: only the stream's hash tells
    largest.write_bytes(bytes(damaged))
    record = streams("json")[0]   # a record rewritten without the store's key
    body = json.loads(record.read_text())
    body["body"]["crc"] ^= 1
    record.write_text(json.dumps(body))
    warm = zip_pack(capsys, workspace, second)
    assert warm["compressed"] == (2 if record.with_suffix(".deflate") != largest else 1)
    assert warm["reused"] == cold["compressed"] - warm["compressed"]
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(second) as archive:
        assert archive.testzip() is None


def test_zip64_sizes_and_offsets_read_back(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Members and offsets beyond zip64's limit (lowered here: 4 GiB is too much for a
    test) get zip64 fields that zipfile and Info-ZIP's unzip read back."""
    plain, wide = tmp_path / "plain.zip", tmp_path / "wide.zip"
    zip_pack(capsys, workspace, plain)
    monkeypatch.setattr(zip_writer, "ZIP64_LIMIT", 1 << 10)
    zip_pack(capsys, workspace, wide)
    with zipfile.ZipFile(plain) as one, zipfile.ZipFile(wide) as other:
        assert any(info.extra for info in other.infolist())
        assert one.namelist() == other.namelist()
        for name in one.namelist():
            assert one.read(name) == other.read(name)
    listed = subprocess.run(["unzip", "-tq", str(wide)], capture_output=True, text=True)
    assert listed.returncode == 0, listed.stdout + listed.stderr


def test_streams_share_the_stores_size_cap(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Under a cap the store's objects already fill, the streams an earlier zip kept go;
    the ones this zip used stay (the next re-pack copies them)."""
    zipped = tmp_path / "app.zip"
    zip_pack(capsys, workspace, zipped)
    (workspace.root / "app" / "main.py").write_text("print('other')\n")
    monkeypatch.setenv("BUNDLER_STORE_MAX", "1")
    zip_pack(capsys, workspace, zipped)
    with zipfile.ZipFile(zipped) as archive:
        files = [info for info in archive.infolist() if not info.is_dir()]
    assert len(streams("deflate")) == len(files)   # the old main.py's stream is gone
    monkeypatch.delenv("BUNDLER_STORE_MAX")
    assert zip_pack(capsys, workspace, zipped)["compressed"] == 0


def test_a_progress_bar_while_zipping_silent_under_json(workspace: Workspace,
                                                        tmp_path: Path) -> None:
    """On a terminal the zip's bar is drawn on stderr; with --json it is not."""
    def stderr_on_a_terminal(*more: str) -> str:
        (tmp_path / "app.zip").unlink(missing_ok=True)   # written anew, not checked
        leader, follower = pty.openpty()   # 80 columns: a terminal of none shows no bar
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("4H", 24, 80, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUNDLER_NO_PROGRESS")}
        child = subprocess.Popen([sys.executable, "-m", "bundler", "pack",
                                  str(workspace.spec), "--zip", str(tmp_path / "app.zip"),
                                  *more], env={**env, "PYTHONPATH": str(ROOT)},
                                 stderr=follower, stdout=subprocess.DEVNULL)
        os.close(follower)
        seen = b""
        while True:   # read as it is written: a full terminal would stop the pack
            try:
                chunk = os.read(leader, 65536)
            except OSError:   # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        os.close(leader)
        assert child.wait(timeout=120) == 0, seen
        return seen.decode(errors="replace")

    drawn = stderr_on_a_terminal()
    assert "zipping app" in drawn, drawn
    # In full (--recheck): a pack that finds itself up to date zips nothing at all.
    assert "zipping app" in stderr_on_a_terminal("--recheck")
    quiet = stderr_on_a_terminal("--json", "--recheck")
    assert "zipping app" not in quiet, quiet
    quiet = stderr_on_a_terminal("--quiet", "--recheck")
    assert "zipping app" not in quiet, quiet


def test_a_stream_of_other_settings_is_not_reused(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Kept streams are keyed by the compressor's settings too: at another level every
    member is compressed again, and the zip is the one that level makes."""
    fast, one, fresh = tmp_path / "fast.zip", tmp_path / "1.zip", tmp_path / "fresh.zip"
    cold = zip_pack(capsys, workspace, fast)
    assert zip_pack(capsys, workspace, one, "--zip-level", "1")["compressed"] == \
        cold["compressed"]
    monkeypatch.setenv("BUNDLER_STORE", "off")
    zip_pack(capsys, workspace, fresh, "--zip-level", "1")
    assert one.read_bytes() == fresh.read_bytes() != fast.read_bytes()


def test_pieces_compress_on_several_threads_into_the_same_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A member of several pieces is deflated on every worker; the stream is the one a
    single worker makes, and inflates to the member."""
    member = tmp_path / "member.bin"
    member.write_bytes(os.urandom(1 << 20) + bytes(3 << 20) + b"tail" * 100_000)
    threads: set[str] = set()
    real = zip_writer._deflate_piece

    def noting_the_thread(*args: object) -> bytes:
        threads.add(__import__("threading").current_thread().name)
        __import__("time").sleep(0.05)   # so one worker cannot take every piece alone
        return real(*args)  # type: ignore[arg-type]

    def zipped(workers: int) -> bytes:
        out = tmp_path / f"{workers}.zip"
        with open(out, "wb") as raw:
            zip_writer.ZipWriter(raw, zip_compressor(FAST), None, workers,
                                 lambda _: None).write(
                [zip_writer.Member("m", 0o100644 << 16, str(member), member.stat().st_size)])
        return out.read_bytes()

    one = zipped(1)
    monkeypatch.setattr(zip_writer, "_deflate_piece", noting_the_thread)
    assert zipped(3) == one and len(threads) == 3
    with zipfile.ZipFile(tmp_path / "3.zip") as archive:
        assert archive.read("m") == member.read_bytes()


def test_progress_moves_piece_by_piece(tmp_path: Path) -> None:
    """A large member's progress is told as its pieces are written (a CI log's lines
    move during a 600 MB DLL), adding up to its size."""
    member = tmp_path / "member.bin"
    member.write_bytes(os.urandom(3 * zip_writer.PIECE + 12345))
    seen: list[int] = []
    with open(tmp_path / "m.zip", "wb") as raw:
        zip_writer.ZipWriter(raw, zip_compressor(FAST), None, 2, seen.append).write(
            [zip_writer.Member("m", 0o100644 << 16, str(member), member.stat().st_size)])
    assert seen == [zip_writer.PIECE] * 3 + [12345]
