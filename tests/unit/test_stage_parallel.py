"""Sources staged at once, one lane each (bundler/pack/stage.py): the same bytes, hashes
and order as one lane at a time, truly on several threads, the progress bar counting
every byte once, and a failing source stopping the others and named in the error."""

from __future__ import annotations

import hashlib
import random
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bundler.errors import SourceError
from bundler.pack import stage
from bundler.pack.sources import ArchiveSource
from bundler.pack.stage import StagedFile, stage_files
from bundler.recipe.load import RuntimeFile, SourceSpec
from bundler.support import progress


def _member(rng: random.Random, size: int) -> bytes:
    """Bytes that deflate somewhat, as a DLL's do: words from a small vocabulary."""
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(400)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words)
    return bytes(out[:size])


def _archives(folder: Path) -> dict[str, dict[str, bytes]]:
    rng = random.Random(19)
    contents = {}
    for index, sizes in enumerate([(3 << 20, 200_000, 1), (5 << 20,), (70_000, 2 << 20)]):
        members = {f"bin/f{index}_{n}.dll": _member(rng, size) for n, size in enumerate(sizes)}
        with zipfile.ZipFile(folder / f"s{index}.zip", "w", zipfile.ZIP_DEFLATED) as archive:
            for name, data in members.items():
                archive.writestr(name, data)
        contents[f"s{index}"] = members
    return contents


def _stage(folder: Path, contents: dict[str, dict[str, bytes]], out: Path,
           on_staged: Any = None) -> list[StagedFile]:
    files = [RuntimeFile(name=Path(member).name, source=sid, member=member, component="c")
             for sid, members in contents.items() for member in members]
    sources = {sid: ArchiveSource(SourceSpec(id=sid, kind="archive", contents=()),
                                  folder / f"{sid}.zip", "test",
                                  takes=set(members))
               for sid, members in contents.items()}
    try:
        return stage_files(files, sources, out, "rt", on_staged)
    finally:
        for source in sources.values():
            source.close()


def test_lanes_at_once_stage_what_one_lane_stages(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    contents = _archives(tmp_path)
    monkeypatch.setattr(stage, "lane_count", lambda sources: 1)
    one = _stage(tmp_path, contents, tmp_path / "one")
    threads: set[str] = set()
    monkeypatch.setattr(stage, "lane_count", lambda sources: sources)
    many = _stage(tmp_path, contents, tmp_path / "many",
                  lambda item: threads.add(threading.current_thread().name))
    assert len(threads) >= 2   # the sources really were swept on several threads
    assert [(s.file, s.relpath, s.size, s.sha256) for s in one] == \
        [(s.file, s.relpath, s.size, s.sha256) for s in many]
    for item in many:
        data = contents[item.file.source][item.file.member]
        assert item.path.read_bytes() == data == (tmp_path / "one" / item.file.name).read_bytes()
        assert item.sha256 == hashlib.sha256(data).hexdigest()


def test_the_bar_counts_every_byte_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    contents = _archives(tmp_path)
    bars: list[Any] = []
    real_bar = stage.byte_progress
    monkeypatch.setattr(progress, "_wanted", lambda: True)
    monkeypatch.setattr(stage, "byte_progress",
                        lambda total, what: bars.append(real_bar(total, what)) or bars[-1])
    monkeypatch.setattr(stage, "lane_count", lambda sources: sources)
    _stage(tmp_path, contents, tmp_path / "out")
    total = sum(len(data) for members in contents.values() for data in members.values())
    assert [(bar.n, bar.total) for bar in bars] == [(total, total)]


def test_a_failing_source_stops_the_others_and_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    contents = _archives(tmp_path)
    raw = bytearray((tmp_path / "s1.zip").read_bytes())
    raw[len(raw) // 2] ^= 0xFF   # inside s1's one large member
    (tmp_path / "s1.zip").write_bytes(bytes(raw))
    monkeypatch.setattr(stage, "lane_count", lambda sources: sources)
    before = set(threading.enumerate())   # other tests' threads may still be ending
    with pytest.raises(SourceError, match=r"s1\.zip: member bin/f1_0\.dll is corrupt"):
        _stage(tmp_path, contents, tmp_path / "out")
    left = {t for t in set(threading.enumerate()) - before
            if t.name != "tqdm_monitor"}   # tqdm's own monitor starts with the first bar
    assert left == set()   # every lane and helper ended
