"""Issue 17, item 2: what the embedded-python builder adds is checked like the runtime.

The bundle's python/ folder (python.org's CPython, the wheels pip installed into it) and
its launcher are listed in the manifest (`built`), so `bundler verify` reports a changed,
missing or added file there as it does a runtime file; the requirements file's contents
are recorded in the lock, so editing it is a spec change: followed and said, refused
under --locked. Packed from the pinned embeddable CPython and numpy wheel, offline.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bundler.pack.pipeline import PackResult, pack
from bundler.pack.spec import load_spec
from tests.harness.packing import run_cli
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace

NUMPY_INIT = "python/Lib/site-packages/numpy/__init__.py"


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory, standin_zip: Path,
           standin_toolkit: Path, standin_framework: Path) -> tuple[Path, PackResult]:
    root = tmp_path_factory.mktemp("embedded-verify")
    spec = embedded_workspace(root, standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    return spec, pack(load_spec(spec), environ=bundler_cache(root / "cache"))


def bundle_copy(packed: tuple[Path, PackResult], tmp_path: Path) -> Path:
    """The bundle, copied (links into the store become files): each test damages its own."""
    copy = tmp_path / "demo"
    shutil.copytree(packed[1].out, copy)
    return copy


def verify(capsys: pytest.CaptureFixture[str], bundle: Path) -> tuple[int, dict]:
    code, out, _ = run_cli(capsys, "verify", str(bundle), "--json")
    return code, json.loads(out)


def test_the_manifest_lists_the_python_folder_and_the_launcher(
        packed: tuple[Path, PackResult]) -> None:
    out = packed[1].out
    built = {entry.path: entry for entry in packed[1].manifest.built}
    on_disk = {p.relative_to(out).as_posix() for p in (out / "python").rglob("*")
               if p.is_file()}
    assert set(built) == on_disk | {"demo.cmd"}
    assert {"python/python.exe", "python/python311._pth", NUMPY_INIT} <= set(built)
    assert len(built) > 500   # numpy's files, each one
    assert built[NUMPY_INIT].size == (out / NUMPY_INIT).stat().st_size
    written = json.loads((out / "cudnn" / "manifest.json").read_text())
    assert len(written["built"]) == len(built)
    # The runtime's files are what they were: python/ is not the runtime.
    assert not any(entry.path.startswith("python/") for entry in packed[1].manifest.files)


def test_verify_reports_a_changed_file_of_an_installed_wheel(
        packed: tuple[Path, PackResult], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundle_copy(packed, tmp_path)
    code, report = verify(capsys, bundle)
    assert code == 0 and report["ok"], report
    assert report["checked"] > len(packed[1].manifest.built)
    with open(bundle / NUMPY_INIT, "a", encoding="utf-8") as numpy_init:
        numpy_init.write("import os  # something that runs at import\n")
    code, report = verify(capsys, bundle)
    assert code != 0 and report["changed"] == [NUMPY_INIT]
    code, out, _ = run_cli(capsys, "verify", str(bundle))
    assert NUMPY_INIT in out


def test_verify_reports_missing_and_added_files_but_not_bytecode(
        packed: tuple[Path, PackResult], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundle_copy(packed, tmp_path)
    (bundle / "python" / "python311.dll").unlink()
    (bundle / "demo.cmd").write_text("@echo off\r\npython main.py\r\n")
    added = bundle / "python" / "Lib" / "site-packages" / "evil.pth"
    added.write_text("import os\n")
    # What Python writes as the app runs is not a change.
    cache = bundle / "python" / "Lib" / "site-packages" / "numpy" / "__pycache__"
    cache.mkdir(exist_ok=True)
    (cache / "version.cpython-311.pyc").write_bytes(b"bytecode")
    code, report = verify(capsys, bundle)
    assert code != 0
    assert report["missing"] == ["python/python311.dll"]
    assert report["changed"] == ["demo.cmd"]
    assert report["unexpected"] == ["python/Lib/site-packages/evil.pth"]


def test_a_deleted_python_folder_is_one_line(
        packed: tuple[Path, PackResult], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bundle = bundle_copy(packed, tmp_path)
    shutil.rmtree(bundle / "python")
    count = sum(1 for e in packed[1].manifest.built if e.path.startswith("python/"))
    code, report = verify(capsys, bundle)
    assert code != 0 and report["missing"] == [f"python/ (all {count} files)"]


def test_a_changed_requirements_file_is_a_spec_change_the_lock_follows(
        packed: tuple[Path, PackResult], tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "app.spec"
    shutil.copytree(packed[0].parent / "app", tmp_path / "app")
    spec.write_text(packed[0].read_text())
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(packed[0].with_name("requirements.txt").read_text())
    for name, value in bundler_cache(tmp_path / "cache").items():
        monkeypatch.setenv(name, value)
    code, _, err = run_cli(capsys, "pack", str(spec))
    assert code == 0, err
    lock = json.loads(spec.with_name("app.spec.lock").read_text())
    assert lock["spec"]["app"]["requirements"]["path"] == "requirements.txt"
    before = spec.with_name("app.spec.lock").read_bytes()

    requirements.write_text(requirements.read_text() + "# pinned for the release\n")
    code, _, err = run_cli(capsys, "pack", str(spec), "--locked")
    assert code == 2
    assert "--locked, but the lock would change: spec app.requirements changed (the " \
           "contents of requirements.txt)" in err
    assert spec.with_name("app.spec.lock").read_bytes() == before
    code, out, err = run_cli(capsys, "pack", str(spec))
    assert code == 0, err
    assert "spec app.requirements changed (the contents of requirements.txt)" in out + err
    assert spec.with_name("app.spec.lock").read_bytes() != before
    code, _, err = run_cli(capsys, "pack", str(spec), "--locked")   # settled again
    assert code == 0, err
