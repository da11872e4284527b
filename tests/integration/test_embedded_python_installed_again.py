"""Issue 41: an embedded-python re-pack of the same locked wheels takes the previous
bundle's site-packages again (hard links, each file proven) instead of unpacking the
wheels again (builders/installed_again.py): the Paddle 2.6.2 app's one-file edit
spent 11 s of its 18 s unpacking a 477 MB wheel it had unpacked the pack before.

Stand-in wheels (pure Python, built here), the seed's stand-in runtime. Each test counts
the wheels unpacked (wheel_install._install) and the site-packages files read to prove
them (installed_again's sha256_file).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from bundler.cli import main
from bundler.pack.builders import installed_again, wheel_install
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import snapshot
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace
from tests.integration.test_embedded_python_relock import make_wheel

SITE = Path("python") / "Lib" / "site-packages"


@pytest.fixture
def app(tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str], Counter[str]]:
    spec = embedded_workspace(tmp_path / "ws", standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = spec.parent / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "demo-a", "1.0")
    make_wheel(wheels, "demo-b", "2.0", "demo-a")
    spec.with_name("requirements.txt").write_text("--no-index\n--find-links wheels\ndemo-b\n")
    environ = {**bundler_cache(tmp_path / "cache"), "BUNDLER_STORE": str(tmp_path / "store")}
    counts: Counter[str] = Counter()
    real_install, real_hash = wheel_install._install, installed_again.sha256_file

    def counted_install(*args: object) -> None:
        counts["unpacked"] += 1
        real_install(*args)   # type: ignore[arg-type]

    def counted_hash(*args: object) -> str:
        counts["read"] += 1
        return real_hash(*args)   # type: ignore[arg-type]

    monkeypatch.setattr(wheel_install, "_install", counted_install)
    monkeypatch.setattr(installed_again, "sha256_file", counted_hash)
    return spec, environ, counts


def edit_and_pack(spec: Path, environ: dict[str, str], counts: Counter[str], text: str
                  ) -> tuple[Path, Counter[str]]:
    entry = spec.parent / "app" / "main.py"
    entry.write_text(entry.read_text() + f"# {text}\n")
    counts.clear()
    result = pack(load_spec(spec), environ=environ)
    return result.out, Counter(counts)


def test_a_repack_of_the_same_wheels_takes_the_site_packages_again(
        app: tuple[Path, dict[str, str], Counter[str]]) -> None:
    spec, environ, counts = app
    out, first = edit_and_pack(spec, environ, counts, "cold")
    assert first["unpacked"] == 2
    module = out / SITE / "demo_a" / "__init__.py"
    before = snapshot(out / SITE)
    # The pack that unpacked them recorded no stamps: the next reads each file once,
    # then links it; neither unpacks a wheel.
    out, second = edit_and_pack(spec, environ, counts, "first edit")
    assert second["unpacked"] == 0 and second["read"] == len(before), second
    inode = module.stat().st_ino
    out, third = edit_and_pack(spec, environ, counts, "second edit")
    assert third == Counter(), third   # nothing unpacked, nothing read
    assert module.stat().st_ino == inode   # the same file, linked again
    assert module.stat().st_nlink == 1   # the old bundle's link is gone with it
    assert snapshot(out / SITE) == before
    # The manifest names every file as it is (verify reads them all).
    assert verify(out) == 0


def test_a_site_packages_file_changed_in_the_bundle_is_not_taken(
        app: tuple[Path, dict[str, str], Counter[str]]) -> None:
    """An edit inside the previous bundle, its size and modification time put back: its
    change time shows it, the file is read, and the wheels are unpacked again."""
    spec, environ, counts = app
    out, _ = edit_and_pack(spec, environ, counts, "cold")
    edit_and_pack(spec, environ, counts, "first edit")
    module = out / SITE / "demo_a" / "__init__.py"
    wheel_bytes = module.read_bytes()
    was = module.stat()
    module.chmod(0o644)
    module.write_bytes(wheel_bytes.replace(b"1.0", b"6.6"))
    os.utime(module, ns=(was.st_atime_ns, was.st_mtime_ns))
    out, again = edit_and_pack(spec, environ, counts, "second edit")
    assert again["unpacked"] == 2, again
    assert module.read_bytes() == wheel_bytes
    assert verify(out) == 0


def test_another_wheel_set_is_unpacked(
        app: tuple[Path, dict[str, str], Counter[str]]) -> None:
    spec, environ, counts = app
    out, _ = edit_and_pack(spec, environ, counts, "cold")
    make_wheel(spec.parent / "wheels", "demo-a", "1.1")
    spec.with_name("requirements.txt").write_text(
        "--no-index\n--find-links wheels\ndemo-b\ndemo-a==1.1\n")
    out, again = edit_and_pack(spec, environ, counts, "new requirements")
    assert again["unpacked"] == 2, again
    assert sorted(p.name for p in (out / SITE).glob("*.dist-info")) == [
        "demo_a-1.1.dist-info", "demo_b-2.0.dist-info"]
    assert verify(out) == 0


def verify(out: Path) -> int:
    return main(["verify", str(out)])
