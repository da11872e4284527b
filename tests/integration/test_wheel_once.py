"""Issue 43 item 5: each runtime once on disk. A pinned wheel pip fetched is kept in the
wheel cache and its members in the store; the store also records them under the pin,
so a pack that finds no wheel takes them from the store (`--offline` too) and pip is
never asked; $BUNDLER_KEEP_WHEELS=none lets the wheel go once the store holds all of
it; `bundler cache` says what is held twice. A stored object that is gone or damaged
makes the next pack fetch the wheel again (or `--offline` refuse, naming it).

The real nvidia-cuda-runtime-cu11 wheel (1 MB) through a local index (real pip, no
network), as tests/integration/test_wheel_pack.py fetches it.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from bundler.recipe.load import find_recipe
from tests.harness.packing import run_cli
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.integration.test_wheel_pack import (  # noqa: F401 - local_index is a fixture
    CU11,
    local_index,
    record_sha256,
    write_spec,
)

# the module (the package's `fetch` is its function of that name)
fetch_module = importlib.import_module("bundler.pack.sources.fetch")
CUDART = "nvidia/cuda_runtime/bin/cudart64_110.dll"
PIN = find_recipe(CU11, PROJECT_ROOT).sources["cudart"].sha256
WANTED = "cudart (nvidia-cuda-runtime-cu11==11.8.89)"


@pytest.fixture
def index(tmp_path: Path, cudart_wheel: Path, local_index: Path,  # noqa: F811
          monkeypatch: pytest.MonkeyPatch) -> Path:
    """The local index holds the cudart wheel; pip calls are counted."""
    shutil.copyfile(cudart_wheel, local_index / cudart_wheel.name)
    monkeypatch.delenv("BUNDLER_KEEP_WHEELS", raising=False)
    monkeypatch.delenv("BUNDLER_CACHE_MAX", raising=False)
    return local_index


@pytest.fixture
def pip_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = fetch_module._run_pip

    def counted(download: fetch_module.Download, dest: Path) -> None:
        calls.append(download.requirement)
        real(download, dest)

    monkeypatch.setattr(fetch_module, "_run_pip", counted)
    return calls


def _pack(capsys: pytest.CaptureFixture[str], spec: Path, *extra: str) -> tuple[int, dict, str]:
    code, out, err = run_cli(capsys, "pack", spec, "--json", *extra)
    return code, (json.loads(out) if code == 0 else {}), err


def _bundle(tmp_path: Path) -> dict[str, bytes]:
    """The bundle's files and the lock, byte for byte."""
    dist = tmp_path / "dist" / "cudart-app"
    found = {p.relative_to(dist).as_posix(): p.read_bytes()
             for p in sorted(dist.rglob("*")) if p.is_file()}
    return {**found, "app.spec.lock": (tmp_path / "app.spec.lock").read_bytes()}


def _cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / PIN


def _object(sha256: str) -> Path:
    return Path(os.environ["BUNDLER_STORE"]) / "objects" / sha256[:2] / sha256


def _caches(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict]:
    code, out, err = run_cli(capsys, "cache", *args, "--json")
    assert code == 0, err
    return {cache["name"]: cache for cache in json.loads(out)["caches"]}


def test_keep_none_leaves_no_wheel_and_a_repack_needs_none(
        tmp_path: Path, index: Path, pip_calls: list[str], cudart_wheel: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BUNDLER_KEEP_WHEELS", "none")
    spec = write_spec(tmp_path)
    code, summary, err = _pack(capsys, spec)
    assert code == 0, err
    assert pip_calls == ["nvidia-cuda-runtime-cu11==11.8.89"]
    assert not _cache(tmp_path).exists()   # the runtime is in the store only
    assert _object(record_sha256(cudart_wheel, CUDART)).is_file()
    first = _bundle(tmp_path)
    (index / cudart_wheel.name).unlink()   # pip could not get it now
    # Nothing changed: up to date (the wheel's absence is what the pack found).
    code, again, err = _pack(capsys, spec)
    assert code == 0 and again["up_to_date"], err
    for extra in ((), ("--offline",)):
        code, summary, err = _pack(capsys, spec, "--recheck", *extra)
        assert code == 0, err
        assert summary["runtime_origin"]["files"] == {"store": 2}
        assert _bundle(tmp_path) == first
    # another app of the same runtime: the store's files, no wheel, no pip
    other = tmp_path / "other"
    other.mkdir()
    code, summary, err = _pack(capsys, write_spec(other), "--offline")
    assert code == 0, err
    assert _bundle(other) == first
    assert pip_calls == ["nvidia-cuda-runtime-cu11==11.8.89"]   # only the first pack's
    assert not (tmp_path / "cache" / PIN).exists()


def test_by_default_the_wheel_stays_and_cache_says_it_is_held_twice(
        tmp_path: Path, index: Path, pip_calls: list[str], cudart_wheel: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)
    assert _pack(capsys, spec)[0] == 0
    [wheel] = _cache(tmp_path).iterdir()
    assert wheel.read_bytes() == cudart_wheel.read_bytes()
    wheels = _caches(capsys)["wheels"]
    assert (wheels["in_store"], wheels["in_store_size"]) == (1, wheel.stat().st_size)
    assert wheels["removable"] == []   # the default keeps it (the lock names it)
    code, out, _ = run_cli(capsys, "cache")
    assert code == 0 and "also held unpacked in the runtime store: 1 recipe wheel(s)" in out
    # the setting applied by prune: the wheel goes, an --offline re-pack needs none
    monkeypatch.setenv("BUNDLER_KEEP_WHEELS", "none")
    shown = _caches(capsys, "prune", "--dry-run")["wheels"]
    assert [Path(p) for p, _ in shown["removable"]] == [_cache(tmp_path)]
    assert wheel.is_file()
    assert _caches(capsys, "prune")["wheels"]["removed"]
    assert not _cache(tmp_path).exists()
    first = _bundle(tmp_path)
    monkeypatch.delenv("BUNDLER_KEEP_WHEELS")
    code, summary, err = _pack(capsys, spec, "--recheck", "--offline")
    assert code == 0, err
    assert _bundle(tmp_path) == first and pip_calls == ["nvidia-cuda-runtime-cu11==11.8.89"]


def test_a_wheel_the_store_does_not_hold_whole_is_neither_counted_nor_pruned(
        tmp_path: Path, index: Path, cudart_wheel: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _pack(capsys, write_spec(tmp_path))[0] == 0
    _object(record_sha256(cudart_wheel, CUDART)).unlink()   # e.g. another pack's cap
    assert _caches(capsys)["wheels"]["in_store"] == 0
    monkeypatch.setenv("BUNDLER_KEEP_WHEELS", "none")
    assert _caches(capsys, "prune")["wheels"]["removable"] == []
    assert [p.name for p in _cache(tmp_path).iterdir()] == [cudart_wheel.name]


def test_a_stored_file_removed_makes_the_next_pack_fetch_or_offline_refuse(
        tmp_path: Path, index: Path, pip_calls: list[str], cudart_wheel: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BUNDLER_KEEP_WHEELS", "none")
    spec = write_spec(tmp_path)
    assert _pack(capsys, spec)[0] == 0
    first = _bundle(tmp_path)
    _object(record_sha256(cudart_wheel, CUDART)).unlink()
    code, _, err = _pack(capsys, spec, "--recheck", "--offline")
    assert code == 2
    assert f"--offline: source(s) {WANTED} are not in [sources] nor in the wheel cache" in err
    # refused as the sources are opened: the store was not taken to hold it
    assert "no longer every one intact" not in err
    assert _bundle(tmp_path) == first   # the bundle as it was
    code, summary, err = _pack(capsys, spec, "--recheck")
    assert code == 0, err
    assert "no longer proves" not in err   # fetched from the start
    # fetched: the wheel proves the previous bundle's files (which it hashes to)
    assert len(pip_calls) == 2 and summary["runtime_origin"]["files"] == {"previous": 2}
    assert _bundle(tmp_path) == first
    assert _object(record_sha256(cudart_wheel, CUDART)).is_file()   # the store refilled
    assert not _cache(tmp_path).exists()   # held whole again: gone again


def _damage(path: Path) -> None:
    """A byte changed in place (the object is read-only: made writable for it)."""
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    data = bytearray(path.read_bytes())
    data[4096] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_damaged_stored_file_makes_the_pack_fetch_or_offline_refuse(
        tmp_path: Path, index: Path, pip_calls: list[str], cudart_wheel: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BUNDLER_KEEP_WHEELS", "none")
    spec = write_spec(tmp_path)
    assert _pack(capsys, spec)[0] == 0
    sha = record_sha256(cudart_wheel, CUDART)
    _damage(_object(sha))   # also the bundle's file: the same inode
    code, summary, err = _pack(capsys, spec, "--recheck")
    assert code == 0, err
    assert "no longer proves every file of source 'cudart'" in err
    assert len(pip_calls) == 2 and summary["runtime_origin"]["files"] == {"read": 2}
    dll = tmp_path / "dist" / "cudart-app" / "cudnn" / "cudart64_110.dll"
    assert hashlib.sha256(dll.read_bytes()).hexdigest() == sha
    assert _object(sha).read_bytes() == dll.read_bytes()   # the store mended
    assert not _cache(tmp_path).exists()
    _damage(_object(sha))
    code, _, err = _pack(capsys, spec, "--recheck", "--offline")
    assert code == 2
    assert f"--offline: source(s) {WANTED} are not in [sources] nor in the wheel cache" in err
    assert "the runtime store held its files, but no longer every one intact" in err
    assert len(pip_calls) == 2


def test_an_unknown_keep_value_is_refused_before_any_work(
        tmp_path: Path, index: Path, pip_calls: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("BUNDLER_KEEP_WHEELS", "nnoe")
    code, _, err = _pack(capsys, write_spec(tmp_path))
    assert code == 2 and "BUNDLER_KEEP_WHEELS='nnoe' is neither 'all' nor 'none'" in err
    assert pip_calls == [] and not (tmp_path / "dist").exists()
