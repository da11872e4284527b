"""One archive's members inflated on several lanes at once (ArchiveSource.sweeps): the
same files and hashes as one lane, truly on several threads, the archive's own sha256
still that of its bytes in order, and a pin it does not match still refused."""

from __future__ import annotations

import hashlib
import random
import shutil
import subprocess
import threading
import zipfile
from pathlib import Path

import pytest

from bundler.errors import SourceError
from bundler.pack import stage
from bundler.pack.sources import ArchiveSource, archive_source
from bundler.pack.stage import StagedFile, stage_files
from bundler.recipe.load import RuntimeFile, SourceSpec


def _archive(path: Path) -> dict[str, bytes]:
    rng = random.Random(30)
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(300)]
    members = {f"bin/m{n}.dll": b"".join(rng.choice(words) for _ in range(40_000 + n * 9000))
               for n in range(6)}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr("bin/unused.txt", b"not taken, still CRC-checked",
                          zipfile.ZIP_STORED)
    return members


def _stage(path: Path, members: dict[str, bytes], out: Path, cores: int,
           monkeypatch: pytest.MonkeyPatch, pin: str = "",
           threads: set[str] | None = None) -> tuple[list[StagedFile], str]:
    monkeypatch.setattr(stage, "cores", lambda: cores)
    monkeypatch.setattr(archive_source, "PARALLEL_FROM", 0)   # the stand-in is small
    files = [RuntimeFile(name=Path(m).name, source="lib", member=m, component="c")
             for m in members]
    source = ArchiveSource(SourceSpec(id="lib", kind="archive", contents=(), sha256=pin),
                           path, "test", takes=set(members))
    seen = threads if threads is not None else set()
    try:
        staged = stage_files(files, {"lib": source}, out, "rt",
                             lambda item: seen.add(threading.current_thread().name))
        return staged, source.identity({})
    finally:
        source.close()


def test_one_archive_on_several_lanes_stages_what_one_lane_stages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lib.zip"
    members = _archive(path)
    one, one_identity = _stage(path, members, tmp_path / "one", 1, monkeypatch)
    threads: set[str] = set()
    many, many_identity = _stage(path, members, tmp_path / "many", 4, monkeypatch,
                                 threads=threads)
    assert len(threads) >= 2   # the members really were inflated on several threads
    assert [(s.file, s.relpath, s.size, s.sha256) for s in one] == \
        [(s.file, s.relpath, s.size, s.sha256) for s in many]
    for item in many:
        data = members[item.file.member]
        assert item.path.read_bytes() == data
        assert item.sha256 == hashlib.sha256(data).hexdigest()
    assert one_identity == many_identity == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_pin_the_archive_misses_is_refused_on_several_lanes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "lib.zip"
    members = _archive(path)
    raw = bytearray(path.read_bytes())
    pin = hashlib.sha256(raw).hexdigest()
    raw[raw.index(b"not taken")] ^= 0x01   # stored member: its CRC now fails
    path.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match=r"bin/unused\.txt is corrupt"):
        _stage(path, members, tmp_path / "bad", 4, monkeypatch, pin)
    raw[raw.index(b"ot taken") - 1] ^= 0x01   # back as it was, then the pin changed
    path.write_bytes(bytes(raw))
    with pytest.raises(SourceError, match=f"sha256 {pin} differs from the recipe's pin 0+$"):
        _stage(path, members, tmp_path / "pinned", 4, monkeypatch, "0" * 64)


def _deflate64_archive(path: Path) -> dict[str, bytes]:
    """The same members, written by 7-Zip as Deflate64 (NVIDIA's legacy zips)."""
    members = _archive(path.with_suffix(".deflate.zip"))
    folder = path.with_suffix(".d")
    for name, data in members.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    subprocess.run(["7z", "a", "-tzip", "-mm=Deflate64", "-bd", "-bso0", "-bsp0",
                    str(path), *members], cwd=folder, check=True)
    return members


@pytest.mark.skipif(not shutil.which("7z"), reason="7-Zip writes Deflate64 (tests/setup.sh)")
def test_on_two_cores_a_deflate64_archive_is_cut_into_parts_and_a_deflate_one_is_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """inflate64 sets the pace of a Deflate64 archive's one pass, so from 2 cores its
    members inflate on two lanes; a deflate archive's one pass is as fast there."""
    monkeypatch.setattr(archive_source, "PARALLEL_FROM", 0)
    kinds = {"deflate": _archive(tmp_path / "deflate.zip"),
             "Deflate64": _deflate64_archive(tmp_path / "Deflate64.zip")}
    parts = {}
    for kind, members in kinds.items():
        source = ArchiveSource(SourceSpec(id="lib", kind="archive", contents=()),
                               tmp_path / f"{kind}.zip", "test", takes=set(members))
        try:
            parts[kind] = len(source.sweeps(2))
        finally:
            source.close()
    assert parts == {"deflate": 1, "Deflate64": 3}   # two shares and the hashing part
    path = tmp_path / "Deflate64.zip"
    one, one_identity = _stage(path, kinds["Deflate64"], tmp_path / "one", 1, monkeypatch)
    two, two_identity = _stage(path, kinds["Deflate64"], tmp_path / "two", 2, monkeypatch)
    assert [(s.relpath, s.sha256) for s in one] == [(s.relpath, s.sha256) for s in two]
    assert one_identity == two_identity == hashlib.sha256(path.read_bytes()).hexdigest()
