"""The store is a cache, under races too: a stored file that another pack's eviction,
`bundler cache prune` or the size cap removes (or that is replaced) between the moment a
pack checked it and the moment it links or copies it into the new bundle costs a read
of the input, never the pack, and never the bundle's bytes (issue 28 item 6).

The race is made deterministic: the link step itself is wrapped so that the store's
own eviction (store.remove_read_only, what prune and the cap call) runs right before
it places the chosen file, after the pack hashed it and decided to reuse it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import bundler.pack.reuse as reuse
from bundler.formats.manifest import find_manifest
from bundler.pack.pipeline import PackResult, pack
from bundler.pack.spec import load_spec
from bundler.pack.store.store import Store, place, remove_read_only
from tests.harness.packing import Workspace, make_workspace, run_cli

_NOTE = "vanished or changed between its check and its link"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Store:
    monkeypatch.setenv("BUNDLER_STORE", str(tmp_path / "store"))
    return Store(tmp_path / "store", bytes.fromhex(os.environ["BUNDLER_STORE_KEY"]))


@pytest.fixture
def workspace(tmp_path: Path, store: Store, standin_zip: Path, standin_toolkit: Path,
              standin_framework: Path) -> Workspace:
    source = tmp_path / standin_zip.name
    shutil.copyfile(standin_zip, source)
    return make_workspace(tmp_path / "ws", standin_framework,
                          {"cudnn": source, "cuda": standin_toolkit})


def _pack(workspace: Workspace, **options: Any) -> PackResult:
    return pack(load_spec(workspace.spec), **options)


def _evict(path: Path) -> None:
    remove_read_only(path)


def _replace_with_other_bytes(path: Path) -> None:
    """Removed, and another file put at its name (a damaged re-add): the check the pack
    made no longer holds for what the name gives."""
    data = bytearray(path.read_bytes())
    remove_read_only(path)
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _race(monkeypatch: pytest.MonkeyPatch, chosen: set[Path], nth: int,
          strike: Callable[[Path], None]) -> list[Path]:
    """Wrap the link step: right before the `nth` (from 0) of the `chosen` files is
    placed, `strike` it. Returns what was struck."""
    real_place = reuse.place
    seen: list[Path] = []
    struck: list[Path] = []

    def racing_place(origin: Path, *args: Any) -> bool:
        if origin in chosen:
            seen.append(origin)
            if len(seen) == nth + 1:
                strike(origin)
                struck.append(origin)
        return real_place(origin, *args)

    monkeypatch.setattr(reuse, "place", racing_place)
    return struck


def _cudnn_entries(result: PackResult) -> list[Any]:
    return [e for e in result.manifest.files if e.source == "cudnn"]


@pytest.mark.parametrize(("strike", "copy"), [
    (_evict, False), (_evict, True), (_replace_with_other_bytes, False),
    (_replace_with_other_bytes, True)],
    ids=["evicted-link", "evicted-copy", "replaced-link", "replaced-copy"])
def test_a_stored_file_lost_between_check_and_link_costs_a_read(
        workspace: Workspace, store: Store, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], strike: Callable[[Path], None],
        copy: bool) -> None:
    first = _pack(workspace, copy=copy)
    cudnn = _cudnn_entries(first)
    # The second is struck: the one placed before it is taken back.
    struck = _race(monkeypatch, {store.object_path(e.sha256) for e in cudnn}, 1, strike)
    again = _pack(workspace, copy=copy)
    assert len(struck) == 1
    assert again.manifest.files == first.manifest.files   # the same bundle, byte for byte
    assert again.origin.files == {"store": len(first.manifest.files) - len(cudnn),
                                  "read": len(cudnn)}
    assert any(_NOTE in w and "was read instead" in w for w in again.warnings)
    monkeypatch.setattr(reuse, "place", place)   # no more races
    code, out, _ = run_cli(capsys, "verify", str(again.out))
    assert code == 0, out
    # The store is whole again by the next pack at the latest (a replacement with other
    # bytes stays until a pack's check drops it, as any damaged entry).
    assert _pack(workspace, copy=copy).manifest.files == first.manifest.files
    assert store.checked_object(struck[0].name) is not None


def test_a_previous_bundles_file_lost_before_its_link_costs_a_read(
        workspace: Workspace, store: Store, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The same fallback where the files come from the previous bundle (store off)."""
    monkeypatch.setenv("BUNDLER_STORE", "off")
    first = _pack(workspace)
    cudnn = _cudnn_entries(first)
    root = find_manifest(first.out).root
    struck = _race(monkeypatch, {root / e.path for e in cudnn}, 1, lambda path: path.unlink())
    again = _pack(workspace)
    assert len(struck) == 1
    assert again.manifest.files == first.manifest.files
    assert again.origin.files.get("read") == len(cudnn)
    assert any(_NOTE in w for w in again.warnings)
    code, out, _ = run_cli(capsys, "verify", str(again.out))
    assert code == 0, out


def test_the_cli_says_so_on_stderr_and_exits_0(
        workspace: Workspace, store: Store, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    first = _pack(workspace)
    chosen = {store.object_path(e.sha256) for e in _cudnn_entries(first)}
    struck = _race(monkeypatch, chosen, 0, _evict)
    code, out, err = run_cli(capsys, "pack", str(workspace.spec))
    assert code == 0, out + err
    assert f"bundler: warning: {struck[0]}" in err and _NOTE in err
    assert "read from the inputs" in out
