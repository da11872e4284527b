"""Issue 41: the app scan takes what it read from a binary of known sha256 from the store
(pack/scan_memo.py) instead of reading the bytes again: the embedded Paddle app's 71
binaries (2.0 GB) cost about 2 s of each one-file edit's re-pack.

A stand-in wheel ships the stand-in framework (it loads cudnn64_8.dll by name) as
`demo_gpu/native.pyd` into an embedded-python bundle's site-packages. The scan's reads
of a binary (app_scan._held) are counted.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from bundler.cli import main
from bundler.pack import app_scan, pipeline
from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.integration.test_embedded_python import bundler_cache, embedded_workspace
from tests.integration.test_embedded_python_relock import make_wheel

NATIVE = "python/Lib/site-packages/demo_gpu/native.pyd"


def gpu_wheel(folder: Path, version: str, native: bytes) -> Path:
    """demo-gpu VERSION (py3-none-any, as a build backend writes it) holding `native`."""
    return make_wheel(folder, "demo-gpu", version, extra={"demo_gpu/native.pyd": native})


@pytest.fixture
def app(tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, str], Counter[str]]:
    spec = embedded_workspace(tmp_path / "ws", standin_framework,
                              {"cudnn": standin_zip, "cuda": standin_toolkit})
    wheels = spec.parent / "wheels"
    wheels.mkdir()
    native = standin_framework.read_bytes()
    assert native.count(b"cudnn64_8.dll") == 1
    gpu_wheel(wheels, "1.0", native)
    gpu_wheel(wheels, "2.0", native.replace(b"cudnn64_8.dll", b"xxxxx64_8.dll"))
    spec.with_name("requirements.txt").write_text(
        "--no-index\n--find-links wheels\ndemo-gpu==1.0\n")
    environ = {**bundler_cache(tmp_path / "cache"), "BUNDLER_STORE": str(tmp_path / "store")}
    reads: Counter[str] = Counter()
    real = app_scan._held

    def counted(path: Path, *args: object) -> app_scan.Held:
        reads[path.name] += 1
        return real(path, *args)   # type: ignore[arg-type]

    monkeypatch.setattr(app_scan, "_held", counted)
    real_scan = pipeline.scan_app

    def kept(*args: object, **kwargs: object) -> app_scan.AppScan:
        scans.append(real_scan(*args, **kwargs))   # type: ignore[arg-type]
        return scans[-1]

    monkeypatch.setattr(pipeline, "scan_app", kept)
    return spec, environ, reads


scans: list[app_scan.AppScan] = []   # what each pack's scan found


def edit_and_pack(spec: Path, environ: dict[str, str], reads: Counter[str], text: str
                  ) -> app_scan.AppScan:
    """The pack's scan, after an edit of the entry script."""
    entry = spec.parent / "app" / "main.py"
    entry.write_text(entry.read_text() + f"# {text}\n")
    reads.clear()
    scans.clear()
    pack(load_spec(spec), environ=environ)
    (scan,) = scans
    return scan


def loaded_by_native(scan: app_scan.AppScan) -> bool:
    return app_scan.Need("cudnn64_8.dll", NATIVE, "loaded by name by") in scan.needs


def test_a_binary_of_known_bytes_is_not_read_again(
        app: tuple[Path, dict[str, str], Counter[str]]) -> None:
    spec, environ, reads = app
    first = edit_and_pack(spec, environ, reads, "cold")
    assert reads["native.pyd"] == 1 and loaded_by_native(first)
    again = edit_and_pack(spec, environ, reads, "edit")
    assert reads["native.pyd"] == 0, reads
    assert reads["framework.dll"] == 1   # the app folder's: no sha256 known, read
    assert loaded_by_native(again)
    assert again == first


def test_other_bytes_at_the_same_path_are_read(
        app: tuple[Path, dict[str, str], Counter[str]]) -> None:
    """Version 2.0's native.pyd names no cuDNN library: the scan reads it, not the
    record of 1.0's bytes at the same path."""
    spec, environ, reads = app
    assert loaded_by_native(edit_and_pack(spec, environ, reads, "cold"))
    spec.with_name("requirements.txt").write_text(
        "--no-index\n--find-links wheels\ndemo-gpu==2.0\n")
    result = edit_and_pack(spec, environ, reads, "2.0")
    assert reads["native.pyd"] == 1
    assert not loaded_by_native(result)


def test_cache_prune_drops_the_records_of_a_bundle_that_is_gone(
        app: tuple[Path, dict[str, str], Counter[str]], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The installed/ and scans/ records of a deleted bundle would only grow: prune
    removes them, and keeps those of a bundle that is still there."""
    spec, environ, _ = app
    result = pack(load_spec(spec), environ=environ)
    store = Path(environ["BUNDLER_STORE"])
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    assert main(["cache", "prune"]) == 0
    capsys.readouterr()
    installed = sorted((store / "installed").glob("*.json"))
    scans = sorted((store / "scans").glob("*/*.json"))
    assert len(installed) == 1 and scans   # the bundle is there: kept
    shutil.rmtree(result.out)
    assert main(["cache", "prune"]) == 0
    assert not list((store / "installed").glob("*.json"))
    assert not list((store / "scans").glob("*/*.json"))
