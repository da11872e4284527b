"""`--zip` compresses with ISA-L by default (`--zip-level fast`), with zlib's levels 1-9
on request, zlib's level 1 where ISA-L is not installed (bundler/support/deflate.py);
the compressor, its version and level key the kept streams and the up-to-date record.
Real packs of the stand-in runtime."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from bundler.cli import main
from bundler.support import deflate
from tests.harness.packing import Workspace, run_cli

SAMPLE_SHA256 = "3a90330c5beaf9855ebf6f4d05d4454a3932f0b9e773941dc564b18a6191dbda"


@pytest.fixture
def workspace(standin_workspace: Workspace) -> Workspace:
    return standin_workspace


def zip_pack(capsys: pytest.CaptureFixture[str], workspace: Workspace, zipped: Path,
             *more: object) -> dict:
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--zip", zipped, "--json",
                             *more)
    assert code == 0, err
    return json.loads(out)


def files_of(zipped: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(zipped) as archive:
        assert archive.testzip() is None   # every member inflates to its CRC
        return {info.filename: archive.read(info) for info in archive.infolist()
                if not info.is_dir()}


def test_the_default_is_isa_l_level_2_and_level_9_is_zlib(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both zips hold the same files; the summary names the compressor and its version."""
    fast, nine = tmp_path / "fast.zip", tmp_path / "nine.zip"
    counts = zip_pack(capsys, workspace, fast)["zip_members"]
    assert counts["compressor"].startswith("isal ") and "ISA-L" in counts["compressor"]
    assert " level 2, sample " in counts["compressor"], counts
    counts = zip_pack(capsys, workspace, nine, "--zip-level", "9")["zip_members"]
    assert counts["compressor"].startswith("zlib ") and \
        counts["compressor"].endswith(" level 9"), counts
    assert counts["reused"] == 0   # ISA-L's streams are not zlib 9's
    assert files_of(fast) == files_of(nine)
    assert fast.read_bytes() != nine.read_bytes()


def test_without_isa_l_fast_is_zlib_level_1(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Where `isal` has no wheel, the default is zlib's fastest level, and the zip is
    the one `--zip-level 1` writes."""
    monkeypatch.setattr(deflate, "isal", None)
    assert deflate.zip_compressor("fast") == deflate.Compressor("zlib", 1)
    without, one = tmp_path / "without.zip", tmp_path / "one.zip"
    counts = zip_pack(capsys, workspace, without)["zip_members"]
    assert counts["compressor"].startswith("zlib ") and \
        counts["compressor"].endswith(" level 1"), counts
    monkeypatch.setenv("BUNDLER_STORE", "off")
    zip_pack(capsys, workspace, one, "--zip-level", "1")
    assert without.read_bytes() == one.read_bytes()


@pytest.mark.parametrize("level", ["0", "10", "fastest", "", "\u0663", "isal"])
def test_a_zip_level_that_is_not_one_exits_2(
        workspace: Workspace, tmp_path: Path, level: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything is packed, naming what is accepted."""
    with pytest.raises(SystemExit) as exit:
        main(["pack", str(workspace.spec), "--zip", str(tmp_path / "app.zip"),
              "--zip-level", level])
    assert exit.value.code == 2
    assert "expected fast or a level from 1 to 9" in capsys.readouterr().err
    assert not (tmp_path / "app.zip").exists()
    assert not workspace.spec.with_name(workspace.spec.name + ".lock").exists()


def test_another_zip_level_is_no_longer_up_to_date(
        workspace: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The level is an output option: a re-pack at another one writes that zip, and the
    one after it (same level, nothing changed) is up to date."""
    zipped = tmp_path / "app.zip"
    zip_pack(capsys, workspace, zipped)
    fast = zipped.read_bytes()
    summary = zip_pack(capsys, workspace, zipped, "--zip-level", "9")
    assert summary["up_to_date"] is False
    assert zipped.read_bytes() != fast
    assert summary["zip_members"]["compressor"].endswith(" level 9")
    assert zip_pack(capsys, workspace, zipped, "--zip-level", "9")["up_to_date"] is True


def test_a_stream_another_isal_version_kept_is_compressed_again(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A new ISA-L may deflate the same bytes differently: the streams the old one kept
    are not copied into a zip the new one writes."""
    assert deflate.isal is not None
    cold = zip_pack(capsys, workspace, tmp_path / "old.zip")["zip_members"]
    version = deflate.isal.__version__
    monkeypatch.setattr(deflate.isal, "__version__", "0.0.1")
    again = zip_pack(capsys, workspace, tmp_path / "new.zip", "--recheck")["zip_members"]
    assert again["reused"] == 0 and again["compressed"] == cold["compressed"]
    monkeypatch.setattr(deflate.isal, "__version__", version)
    warm = zip_pack(capsys, workspace, tmp_path / "old.zip", "--recheck")["zip_members"]
    assert warm["compressed"] == 0 and warm["reused"] == cold["compressed"]


def test_a_stream_another_processor_made_is_compressed_again(
        workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """ISA-L's code depends on the processor (level 3 deflates differently with AVX-512,
    AVX2 or SSE4.2; levels 1 and 2 without SSE4.2): a store that another processor's
    packs filled (a shared or copied home) gives none of its streams to this one's zip.
    What a processor makes of a fixed sample tells them apart; another answer is
    another compressor."""
    cold = zip_pack(capsys, workspace, tmp_path / "here.zip")["zip_members"]
    monkeypatch.setattr(deflate, "_sample_digest", lambda compressor: "0123456789abcdef")
    there = zip_pack(capsys, workspace, tmp_path / "there.zip")["zip_members"]
    assert there["reused"] == 0 and there["compressed"] == cold["compressed"]
    assert there["compressor"].endswith(" level 2, sample 0123456789abcdef")


def test_the_sample_is_the_same_bytes_on_any_python() -> None:
    """The sample is made by sha256 alone: its hash is fixed (a sample that changed
    would only cost one cold zip, but it must not change from run to run)."""
    sample = deflate._sample()
    assert len(sample) == 1 << 18
    assert hashlib.sha256(sample).hexdigest() == SAMPLE_SHA256
