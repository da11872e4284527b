"""store/pins.py: a wheel's members recorded under its pin count as held whole only
where the record lists every member the recipes name of the wheel and the store holds
each object; a record another key sealed, or one naming a removed object, holds nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bundler.pack.store import pins
from bundler.pack.store.store import Store
from bundler.pack.store.upkeep import trim

PIN = "ab" * 32
KEY = bytes.fromhex("5e" * 32)


def _store(root: Path) -> Store:
    return Store(root, KEY)


def _object(store: Store, data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    source = store.root / "in" / sha
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_bytes(data)
    store.add(source, sha)
    return sha


def test_held_whole_only_with_every_wanted_member_and_object(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    a, b = _object(store, b"a" * 100), _object(store, b"b" * 200)
    pins.remember(store, PIN, {"lib/a.dll": a}, {"lib/a.dll", "lib/b.dll"})   # a subset
    assert not pins.held_whole(store, PIN)
    assert pins.covering(store, PIN, ["lib/a.dll"]) is not None   # serves the subset
    assert pins.covering(store, PIN, ["lib/a.dll", "lib/b.dll"]) is None
    pins.remember(store, PIN, {"lib/b.dll": b}, {"lib/a.dll"})   # another pack, the rest
    assert pins.held_whole(store, PIN)
    record = pins.read(store, PIN)
    assert record is not None and record.wanted == {"lib/a.dll", "lib/b.dll"}
    store.object_path(b).unlink()
    assert not pins.held_whole(store, PIN)
    assert pins.covering(store, PIN, ["lib/b.dll"]) is None


def test_a_record_sealed_with_another_key_is_none(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    a = _object(store, b"a" * 100)
    pins.remember(store, PIN, {"lib/a.dll": a}, {"lib/a.dll"})
    other = Store(store.root, bytes.fromhex("6f" * 32))
    assert pins.read(other, PIN) is None and not pins.held_whole(other, PIN)
    moved = store.root / pins.FOLDER / ("cd" * 32)   # a record moved to another pin
    moved.write_text((store.root / pins.FOLDER / PIN).read_text())
    assert pins.read(store, "cd" * 32) is None
    body = json.loads((store.root / pins.FOLDER / PIN).read_text())
    assert set(body) == {"body", "seal"}


def test_the_cap_removing_an_object_drops_its_pin_record(tmp_path: Path) -> None:
    store = _store(tmp_path / "store")
    a, b = _object(store, b"a" * 100), _object(store, b"b" * 200)
    pins.remember(store, PIN, {"lib/a.dll": a}, {"lib/a.dll"})
    assert trim(store, 250, frozenset({b})) == [a]
    assert pins.read(store, PIN) is None


def test_keep_wheels_reads_the_setting() -> None:
    assert pins.keep_wheels({})
    assert pins.keep_wheels({"BUNDLER_KEEP_WHEELS": "all"})
    assert not pins.keep_wheels({"BUNDLER_KEEP_WHEELS": "None"})
