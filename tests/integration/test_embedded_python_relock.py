"""Issue 30 item 1 (and issue 28's nested requirement files): an embedded-python re-pack
with unchanged requirements installs the wheel set the lock records from the wheel
cache, with no resolve and no index.

The requirements are real wheels built here (pure Python, py3-none-any, the form pip
installs for any platform): demo-b needs demo-a, and a nested -r / -c file picks
demo-a's version. Every resolve (uv, for the target) is logged, and every pip process
bundler starts is logged by a sitecustomize on PYTHONPATH (in that process only), so a
test sees whether bundler resolved, downloaded or only installed exact files; pip's
index is an address nothing answers at, so a download from it fails, and the
requirements say --no-index (uv fails where an index is unreachable). uv resolves,
pip only downloads exact pins; bundler unpacks the wheels.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import zipfile
from collections.abc import Mapping
from pathlib import Path

import pytest

from bundler.errors import SourceError, SpecError
from bundler.pack.builders import pip_wheels
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import run_cli, snapshot
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace

NOWHERE = "http://127.0.0.1:9/simple"   # the discard port: nothing answers
PIP_LOG = '''\
import json, os, sys
if os.environ.get("RELOCK_PIP_LOG") and sys.argv[1:2] in (["install"], ["download"]):
    with open(os.environ["RELOCK_PIP_LOG"], "a") as log:
        log.write(json.dumps(sys.argv[1:]) + "\\n")
'''


def make_wheel(folder: Path, name: str, version: str, requires: str = "",
               extra: Mapping[str, bytes] | None = None) -> Path:
    """A wheel as a build backend writes it (METADATA, WHEEL, RECORD), pure Python but
    for the `extra` files it also holds (a .pyd, say)."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    files = {f"{module}/__init__.py": f"VERSION = {version!r}\n".encode(), **(extra or {}),
             f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                  + (f"Requires-Dist: {requires}\n" if requires else "")
                                  ).encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              b"Tag: py3-none-any\n"}
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},{len(data)}\n"
        for path, data in files.items()) + f"{info}/RECORD,,\n"
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in [*files.items(), (f"{info}/RECORD", record.encode())]:
            archive.writestr(zipfile.ZipInfo(path, (2024, 1, 1, 0, 0, 0)), data)
    return wheel


@pytest.fixture
def app(tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        monkeypatch: pytest.MonkeyPatch) -> Path:
    """An embedded-python spec whose requirements.txt names demo-b and, with -r, base.txt
    (demo-a) which names cons.txt with -c (demo-a==1.0); the wheels lie in wheels/,
    named by the requirements file's --find-links. pip's index goes nowhere."""
    spec = embedded_workspace(tmp_path / "ws", standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = spec.parent / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "demo-a", "1.0")
    make_wheel(wheels, "demo-a", "1.1")
    make_wheel(wheels, "demo-b", "2.0", "demo-a")
    spec.with_name("requirements.txt").write_text(
        "--no-index\n--find-links wheels\n-r base.txt  # demo-a\ndemo-b\n")
    spec.with_name("base.txt").write_text("-c cons.txt\ndemo-a\n")
    spec.with_name("cons.txt").write_text("demo-a==1.0\n")
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(PIP_LOG)
    monkeypatch.setenv("PYTHONPATH", str(shim))
    monkeypatch.setenv("RELOCK_PIP_LOG", str(tmp_path / "pip.log"))
    real_resolve = pip_wheels.resolve

    def logged_resolve(*args: object, **kwargs: object) -> object:
        with open(tmp_path / "pip.log", "a") as log:
            log.write(json.dumps(["resolve"]) + "\n")
        return real_resolve(*args, **kwargs)   # type: ignore[arg-type]

    monkeypatch.setattr(pip_wheels, "resolve", logged_resolve)
    monkeypatch.setenv("PIP_INDEX_URL", NOWHERE)
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_TIMEOUT", "2")
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    return spec


def pip_calls(spec: Path) -> list[list[str]]:
    """The resolves and pip commands bundler ran since the last call (and forget them)."""
    log = spec.parent.parent / "pip.log"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return calls


def lock(spec: Path) -> dict:
    return json.loads(spec.with_name("app.spec.lock").read_text())


def installed(out: Path) -> set[str]:
    return {p.name for p in (out / "python" / "Lib" / "site-packages").glob("*.dist-info")}


def test_a_repack_installs_the_locked_wheels_without_resolving(app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    first = pack(load_spec(app), environ=environ)
    # The first pack resolved (uv, for Windows) and recorded the set and every file;
    # the wheels were copied from --find-links (no pip) and bundler unpacked them.
    assert [call[0] for call in pip_calls(app)] == ["resolve"]
    recorded = lock(app)
    wheels = app.with_name("wheels")
    assert recorded["wheels"] == {
        name: {"version": version, "file": file,
               "sha256": hashlib.sha256((wheels / file).read_bytes()).hexdigest()}
        for name, version, file in [("demo-a", "1.0", "demo_a-1.0-py3-none-any.whl"),
                                    ("demo-b", "2.0", "demo_b-2.0-py3-none-any.whl")]}
    requirements = recorded["spec"]["app"]["requirements"]
    assert requirements["nested"] == {
        "base.txt": hashlib.sha256(app.with_name("base.txt").read_bytes()).hexdigest(),
        "cons.txt": hashlib.sha256(app.with_name("cons.txt").read_bytes()).hexdigest()}
    assert installed(first.out) == {"demo_a-1.0.dist-info", "demo_b-2.0.dist-info"}
    before = snapshot(first.out)
    # The wheels' own folder gone: only the cache can serve them, and no resolve could.
    shutil.rmtree(wheels)
    again = pack(load_spec(app), environ=environ, locked=True)
    assert pip_calls(app) == []   # no pip process at all
    assert snapshot(again.out) == before   # the same site-packages, byte for byte
    assert lock(app) == recorded


def test_offline_repack_needs_only_the_cache(app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    shutil.rmtree(app.with_name("wheels"))
    pip_calls(app)
    again = pack(load_spec(app), environ=environ, offline=True)
    assert pip_calls(app) == []
    assert installed(again.out) == {"demo_a-1.0.dist-info", "demo_b-2.0.dist-info"}


def test_a_nested_change_is_refused_under_locked_at_once_and_resolved_without(
        app: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    pip_calls(app)
    lock_bytes = app.with_name("app.spec.lock").read_bytes()
    app.with_name("cons.txt").write_text("demo-a==1.1\n")
    # Before any work: with no embeddable CPython in reach, the refusal still comes first.
    monkeypatch.setenv("BUNDLER_CACHE", str(app.parent / "empty"))
    code, _, err = run_cli(capsys, "pack", app, "--locked", "--offline")
    assert code == 2, err
    assert "--locked, but the lock would change: spec app.requirements changed (the " \
           "contents of cons.txt)" in err
    assert pip_calls(app) == [] and app.with_name("app.spec.lock").read_bytes() == lock_bytes
    # Without --locked the change is followed: uv resolves again, the lock says so.
    result = pack(load_spec(app), environ=environ)
    assert [call[0] for call in pip_calls(app)] == ["resolve"]
    assert installed(result.out) == {"demo_a-1.1.dist-info", "demo_b-2.0.dist-info"}
    assert lock(app)["wheels"]["demo-a"]["version"] == "1.1"
    assert "wheel demo-a 1.0 -> 1.1" in result.lock_changes
    assert any("cons.txt" in change for change in result.lock_changes)


def test_update_lock_resolves_again(app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    pip_calls(app)
    pack(load_spec(app), environ=environ, update_lock=True)
    assert [call[0] for call in pip_calls(app)] == ["resolve"]


def test_a_wheel_missing_from_the_cache_is_named_offline_and_fetched_by_pin_online(
        app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    cached = next((app.parent / "cache").rglob("demo_a-1.0-py3-none-any.whl"))
    cached.unlink()
    pip_calls(app)
    with pytest.raises(SourceError) as caught:
        pack(load_spec(app), out=app.parent / "offline", environ=environ, offline=True)
    assert "lacks 1 wheel(s) the lock names: demo_a-1.0-py3-none-any.whl" in \
        caught.value.message
    assert caught.value.hint.startswith("pack once without --offline")
    assert pip_calls(app) == []
    # A damaged copy is as good as none: online, exactly that pin is fetched, by hash
    # (into another bundle: a re-pack of the same one takes its site-packages again,
    # reading no wheel, builders/installed_again.py).
    cached.write_bytes(b"not a wheel")
    again = pack(load_spec(app), out=app.parent / "online", environ=environ)
    calls = pip_calls(app)
    assert [call[0] for call in calls] == ["download"]
    assert {"--no-deps", "--require-hashes"} <= set(calls[0])
    assert Path(calls[0][calls[0].index("-r") + 1]).name == "pins.txt"   # not a resolve
    assert installed(again.out) == {"demo_a-1.0.dist-info", "demo_b-2.0.dist-info"}
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == \
        lock(app)["wheels"]["demo-a"]["sha256"]


def test_a_failed_download_suggests_offline_when_the_cache_keeps_wheels(app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    # The wheels' folder and the lock gone: uv must resolve, and cannot.
    shutil.rmtree(app.with_name("wheels"))
    app.with_name("app.spec.lock").unlink()
    with pytest.raises(SourceError) as caught:
        pack(load_spec(app), environ=environ)
    assert "uv could not resolve the app's requirements" in caught.value.message
    assert "holds every wheel they need (2 kept): pack --offline" in caught.value.hint
    result = pack(load_spec(app), environ=environ, offline=True)   # ... and it works
    assert installed(result.out) == {"demo_a-1.0.dist-info", "demo_b-2.0.dist-info"}
    assert lock(app)["wheels"]["demo-b"]["version"] == "2.0"
    # A requirement the cache cannot satisfy: the hint does not send the user offline.
    app.with_name("base.txt").write_text("demo-a\ndemo-z\n")
    with pytest.raises(SourceError) as caught:
        pack(load_spec(app), environ=environ)
    assert "--offline" not in caught.value.hint


def test_a_missing_nested_file_is_named(app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    app.with_name("base.txt").write_text("-r gone.txt\n")   # the lock's record is compared
    with pytest.raises(SpecError, match=r"base\.txt: names gone\.txt with -r/-c, but "):
        pack(load_spec(app), environ=environ)


def test_a_lock_without_the_record_gains_it(app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    recorded = lock(app)
    del recorded["wheels"]
    app.with_name("app.spec.lock").write_text(json.dumps(recorded))
    result = pack(load_spec(app), environ=environ)
    assert "the resolved wheels recorded" in result.lock_changes
    assert "wheels" in lock(app)


def test_an_unchanged_repack_is_up_to_date_and_a_nested_edit_is_not(
        app: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """Through the command line, as a user re-packs: nothing changed is `up to date` with
    no pip process and the index unreachable; an edit of a nested -c file (the same
    size) packs in full and resolves again (bundler/pack/up_to_date.py)."""
    monkeypatch.setenv("BUNDLER_CACHE", bundler_cache(app.parent / "cache")["BUNDLER_CACHE"])
    code, out, err = run_cli(capsys, "pack", app, "--json")
    assert code == 0, err
    assert json.loads(out)["up_to_date"] is False
    assert [call[0] for call in pip_calls(app)] == ["resolve"]
    code, out, err = run_cli(capsys, "pack", app, "--json")
    assert code == 0, err
    assert json.loads(out)["up_to_date"] is True and pip_calls(app) == []
    app.with_name("cons.txt").write_text("demo-a==1.1\n")
    code, out, err = run_cli(capsys, "pack", app, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["up_to_date"] is False
    assert [call[0] for call in pip_calls(app)] == ["resolve"]
    assert installed(Path(summary["out"])) == {"demo_a-1.1.dist-info", "demo_b-2.0.dist-info"}
