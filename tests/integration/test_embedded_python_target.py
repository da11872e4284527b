"""Issue 40 item 1: an embedded-python app packed on Linux for Windows ships the
dependency set pip on Windows would install: its requirements are resolved with the
target's environment markers (uv, --python-platform x86_64-pc-windows-msvc,
--python-version 3.11.9), not this machine's.

The wheels are built here, pure Python: demo-app's METADATA names a dependency for
each branch of platform_system, sys_platform, os_name and python_full_version; only
the Windows / CPython 3.11.9 branch may ship. No network: the requirements say
--no-index and --find-links.
"""

from __future__ import annotations

import base64
import codecs
import hashlib
import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest

from bundler.errors import LockError, SourceError
from bundler.pack.builders import pip_wheels
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import snapshot
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace

WINDOWS_SET = {"demo-app", "win-only", "win32-only", "nt-only", "amd64-only", "py3119-only"}
REQUIRES = ('win-only; platform_system == "Windows"',
            'posix-only; platform_system != "Windows"',
            'win32-only; sys_platform == "win32"',
            'linux-only; sys_platform == "linux"',
            'nt-only; os_name == "nt"',
            'posix-os-only; os_name == "posix"',
            'amd64-only; platform_machine == "AMD64"',
            'x86-64-only; platform_machine == "x86_64"',
            'py3119-only; python_full_version == "3.11.9"',
            'py3117-only; python_full_version == "3.11.7"')


def make_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = (),
               platform: str = "any") -> Path:
    """A wheel (py3-none-PLATFORM) whose METADATA has these Requires-Dist."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                + "".join(f"Requires-Dist: {line}\n" for line in requires))
    files = {f"{module}/__init__.py": f"VERSION = {version!r}\n".encode(),
             f"{info}/METADATA": metadata.encode(),
             f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              + f"Tag: py3-none-{platform}\n".encode()}
    record = "".join(
        f"{path},sha256="
        f"{base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
        f"{len(data)}\n" for path, data in files.items()) + f"{info}/RECORD,,\n"
    wheel = folder / f"{module}-{version}-py3-none-{platform}.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in [*files.items(), (f"{info}/RECORD", record.encode())]:
            archive.writestr(zipfile.ZipInfo(path, (2024, 1, 1, 0, 0, 0)), data)
    return wheel


@pytest.fixture
def app(tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        monkeypatch: pytest.MonkeyPatch) -> Path:
    """An embedded-python spec whose requirements name demo-app, from wheels/ only;
    every resolve is logged in resolves.log."""
    spec = embedded_workspace(tmp_path / "ws", standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = spec.parent / "wheels"
    wheels.mkdir()
    make_wheel(wheels, "demo-app", "1.0", REQUIRES)
    for line in REQUIRES:
        make_wheel(wheels, line.split(";")[0], "1.0")
    # markers on the requirement lines themselves are the target's too
    spec.with_name("requirements.txt").write_text(
        "--no-index\n--find-links wheels\ndemo-app\n"
        "x86-64-only; platform_machine == 'x86_64'\nwin-only; sys_platform == 'win32'\n")
    real = pip_wheels.resolve

    def logged(*args: object, **kwargs: object) -> object:
        with open(tmp_path / "resolves.log", "a") as log:
            log.write("offline\n" if kwargs.get("offline_from") else "online\n")
        return real(*args, **kwargs)   # type: ignore[arg-type]

    monkeypatch.setattr(pip_wheels, "resolve", logged)
    return spec


def resolves(spec: Path) -> list[str]:
    """The resolves since the last call (and forget them)."""
    log = spec.parent.parent / "resolves.log"
    found = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return found


def installed(out: Path) -> set[str]:
    return {p.name.split("-")[0].replace("_", "-")
            for p in (out / "python" / "Lib" / "site-packages").glob("*.dist-info")}


def lock(spec: Path) -> dict:
    return json.loads(spec.with_name("app.spec.lock").read_text())


def test_packed_on_linux_for_windows_exactly_the_windows_set_ships_and_is_locked(
        app: Path) -> None:
    environ = bundler_cache(app.parent / "cache")
    first = pack(load_spec(app), environ=environ)
    assert resolves(app) == ["online"]
    assert installed(first.out) == WINDOWS_SET
    recorded = lock(app)
    assert set(recorded["wheels"]) == WINDOWS_SET
    assert recorded["wheels_for"] == {"platform": "x86_64-pc-windows-msvc",
                                      "python": "3.11.9"}
    wheels = app.with_name("wheels")
    for name, pin in recorded["wheels"].items():
        assert pin["sha256"] == hashlib.sha256((wheels / pin["file"]).read_bytes()
                                               ).hexdigest(), name
    before = snapshot(first.out)
    # A re-pack installs the lock's set without resolving ...
    again = pack(load_spec(app), environ=environ)
    assert resolves(app) == [] and snapshot(again.out) == before
    # ... and so does an offline one with the wheels' own folder gone.
    shutil.rmtree(wheels)
    offline = pack(load_spec(app), environ=environ, offline=True, locked=True)
    assert resolves(app) == [] and snapshot(offline.out) == before
    assert lock(app) == recorded
    # Resolved again offline (--update-lock), from the wheel cache alone: the same set.
    pack(load_spec(app), environ=environ, offline=True, update_lock=True)
    assert resolves(app) == ["offline"]
    assert lock(app) == recorded


def test_a_lock_resolved_for_the_packing_machine_is_resolved_again_for_the_target(
        app: Path) -> None:
    """A lock written before the target was recorded holds the set pip resolved with
    this machine's markers: the next pack resolves for Windows and says so."""
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    resolves(app)
    old = lock(app)
    del old["wheels_for"]
    old["wheels"].pop("win-only")
    old["wheels"]["posix-only"] = {"version": "1.0", "file": "posix_only-1.0-py3-none-any.whl",
                                   "sha256": "0" * 64}
    app.with_name("app.spec.lock").write_text(json.dumps(old))
    with pytest.raises(LockError, match=r"--locked, but the lock would change: wheels "
                       r"resolved for x86_64-pc-windows-msvc, CPython 3\.11\.9 \(were for "
                       "the packing machine's markers\\)"):
        pack(load_spec(app), environ=environ, locked=True)
    assert json.loads(app.with_name("app.spec.lock").read_text()) == old
    resolves(app)
    result = pack(load_spec(app), environ=environ)
    assert resolves(app) == ["online"]
    assert installed(result.out) == WINDOWS_SET
    assert result.lock_changes[:3] == (
        "wheels resolved for x86_64-pc-windows-msvc, CPython 3.11.9 (were for the packing "
        "machine's markers)", "wheel posix-only removed", "wheel win-only 1.0 added")
    assert lock(app)["wheels_for"]["platform"] == "x86_64-pc-windows-msvc"


def test_utf16_requirements_with_a_nested_constraint_and_its_change_seen(
        app: Path) -> None:
    """What PowerShell 5's `pip freeze > requirements.txt` writes (UTF-16 with a BOM,
    CRLF), naming a UTF-16 constraints file with -c; editing the constraint resolves
    again."""
    wheels = app.with_name("wheels")
    make_wheel(wheels, "demo-pinned", "1.1")
    make_wheel(wheels, "demo-pinned", "1.0")

    def utf16(path: Path, text: str) -> None:
        path.write_bytes(codecs.BOM_UTF16_LE + text.replace("\n", "\r\n").encode("utf-16-le"))

    utf16(app.with_name("requirements.txt"),
          "--no-index\n--find-links wheels\n-c constraints/cons.txt\ndemo-pinned\n")
    app.with_name("constraints").mkdir()
    utf16(app.with_name("constraints") / "cons.txt", "demo-pinned==1.0\n")
    environ = bundler_cache(app.parent / "cache")
    first = pack(load_spec(app), environ=environ)
    assert installed(first.out) == {"demo-pinned"}
    assert lock(app)["wheels"]["demo-pinned"]["version"] == "1.0"
    assert list(lock(app)["spec"]["app"]["requirements"]["nested"]) == [
        "constraints/cons.txt"]
    resolves(app)
    utf16(app.with_name("constraints") / "cons.txt", "demo-pinned==1.1\n")
    second = pack(load_spec(app), environ=environ)
    assert resolves(app) == ["online"]
    assert lock(app)["wheels"]["demo-pinned"]["version"] == "1.1"
    assert "wheel demo-pinned 1.0 -> 1.1" in second.lock_changes


def test_a_requirement_with_only_a_source_distribution_is_refused(app: Path) -> None:
    sdist = app.with_name("wheels") / "demo-sdist-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        data = b"from setuptools import setup\nsetup(name='demo-sdist', version='1.0')\n"
        info = tarfile.TarInfo("demo-sdist-1.0/setup.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    app.with_name("requirements.txt").write_text("--no-index\n--find-links wheels\n"
                                                 "demo-sdist\n")
    with pytest.raises(SourceError) as caught:
        pack(load_spec(app), environ=bundler_cache(app.parent / "cache"))
    assert "uv could not resolve the app's requirements for x86_64-pc-windows-msvc, " \
           "CPython 3.11.9" in caught.value.message
    assert "demo-sdist" in caught.value.message and "no usable wheels" in \
        caught.value.message
    assert "a source distribution cannot be built for the target" in caught.value.hint
    assert not app.with_name("app.spec.lock").exists()


def test_offline_the_files_index_is_not_asked(app: Path) -> None:
    """--offline resolves from the wheel cache: an --index-url in the requirements (an
    address nothing answers at) is not asked, the set is the cache's."""
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    shutil.rmtree(app.with_name("wheels"))
    app.with_name("requirements.txt").write_text("--index-url http://127.0.0.1:9/simple\n"
                                                 "demo-app\n")
    result = pack(load_spec(app), environ=environ, offline=True)
    assert resolves(app)[-1:] == ["offline"]
    assert installed(result.out) == WINDOWS_SET


def test_a_wheel_unlike_its_hash_pin_is_refused(app: Path) -> None:
    app.with_name("requirements.txt").write_text(
        "--no-index\n--find-links wheels\nwin-only==1.0 --hash=sha256:" + "0" * 64 + "\n")
    with pytest.raises(SourceError, match="no --hash given for win-only matches"):
        pack(load_spec(app), environ=bundler_cache(app.parent / "cache"))


def test_of_several_wheels_for_the_target_the_installer_picks_the_windows_one(
        app: Path) -> None:
    """uv names every wheel of the version the target can install (here a pure one and a
    win_amd64 one); pip, given their hashes and the target's tags, takes the most
    specific, as pip on Windows would."""
    wheels = app.with_name("wheels")
    make_wheel(wheels, "demo-two", "1.0")
    make_wheel(wheels, "demo-two", "1.0", platform="win_amd64")
    make_wheel(wheels, "demo-two", "1.0", platform="manylinux_2_17_x86_64")
    app.with_name("requirements.txt").write_text("--no-index\n--find-links wheels\n"
                                                 "demo-two\n")
    environ = bundler_cache(app.parent / "cache")
    pack(load_spec(app), environ=environ)
    assert lock(app)["wheels"]["demo-two"]["file"] == "demo_two-1.0-py3-none-win_amd64.whl"
