"""The offline quickstart: its committed stand-ins are what tests/harness/standin builds, it
packs with no network and no NVIDIA download, and the packed app runs under Wine."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from bundler.windows.pe_file import read_pe
from tests.harness.packing import bundler_cli
from tests.harness.winenv import WindowsPython, require_toolchain
from tests.harness.winenv.quickstart import QUICKSTART, build_inputs


def dll_behaviour(path: Path) -> tuple[object, ...]:
    """What a DLL is to bundler and the loader: machine, version resource, imports and
    exports. Not its bytes: another mingw-w64 release builds other bytes."""
    info = read_pe(path, exports=True)
    return (info.machine, info.file_version, info.product_version, sorted(info.imports),
            sorted(info.delay_imports), sorted(info.exports))


def unpacked(archive: Path, dest: Path) -> dict[str, object]:
    """Each member of a (Deflate64) zip: a DLL by its behaviour, any other file (text
    written by tests/harness/winenv/build.py, byte for byte the same anywhere) by its sha256."""
    subprocess.run(["7z", "x", "-y", "-bd", "-bso0", f"-o{dest}", str(archive)], check=True)
    return described(dest)


def described(folder: Path) -> dict[str, object]:
    return {p.relative_to(folder).as_posix(): dll_behaviour(p) if p.suffix == ".dll"
            else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_committed_standins_match_their_sources(tmp_path: Path) -> None:
    require_toolchain()
    zip_path, toolkit = build_inputs(tmp_path / "fresh")
    committed_zip = QUICKSTART / "downloads" / zip_path.name
    with zipfile.ZipFile(committed_zip) as committed, zipfile.ZipFile(zip_path) as fresh:
        assert [(i.filename, i.compress_type) for i in committed.infolist()] == [
            (i.filename, i.compress_type) for i in fresh.infolist()]
    assert unpacked(committed_zip, tmp_path / "a") == unpacked(zip_path, tmp_path / "b")
    assert described(QUICKSTART / "standin-cuda") == described(toolkit.parent)


@pytest.fixture(scope="module")
def quickstart_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("qs") / "quickstart"
    shutil.copytree(QUICKSTART, copy, ignore=shutil.ignore_patterns("dist", "*.lock"))
    result = bundler_cli("pack", copy / "app.spec", cwd=copy.parent, capture=True)
    assert result.returncode == 0, result.stderr
    assert "packed cudnn-8.0.3.33-cuda10.1-win-x64" in result.stdout
    # pack counts the runtime's files; verify also checks the bootstrap and the entry
    # script (13 files): say so.
    assert ("11 runtime files; verify also checks the bootstrap _cudnn_bootstrap.py and "
            "the entry script main.py"
            in result.stdout)
    # The stand-ins are not NVIDIA-signed: the spec says so, and so does the output.
    assert "NOT SIGNED: 7 files lack the signature the recipe asks for" in result.stdout
    assert "this runtime is a stand-in" in result.stdout
    return copy / "dist" / "quickstart"


def test_quickstart_packs_and_verifies(quickstart_copy: Path) -> None:
    result = bundler_cli("verify", quickstart_copy, capture=True)
    assert result.returncode == 0  # 12 runtime files and the entry script:
    assert result.stdout.startswith("ok: 13 files match"), result.stdout


def test_quickstart_app_runs_on_windows(quickstart_copy: Path,
                                       app_python: WindowsPython) -> None:
    result = app_python.run([quickstart_copy / "main.py"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "cudnnGetVersion() = 8003" in result.stdout
    assert "cudnn64_8.dll" in result.stdout
