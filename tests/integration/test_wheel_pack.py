"""Packing from a real NVIDIA wheel: nvidia-cuda-runtime-cu11==11.8.89 (1 MB), fetched
once by bundler's own fetch into the test cache outside the repository (fixture
`cudart_wheel`; tests/setup.sh fetches it ahead).

Covers: a source left out of [sources] comes from the pinned cache (and --offline
is then fine), the RECORD hash of the taken member is checked, and a tampered
member, a wrong platform tag and a wheel that differs from the pin all exit 2
naming the problem, leaving the previous bundle as it was.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from bundler.cli import main
from bundler.pack.store.seal import seal
from bundler.recipe.load import find_recipe
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.wheels import wheel_cache

CU11 = "cudnn-8.9.4.25-cuda11-win-x64"
CUDART_MEMBER = "nvidia/cuda_runtime/bin/cudart64_110.dll"
@pytest.fixture
def use_cache(monkeypatch: pytest.MonkeyPatch, cudart_wheel: Path) -> Path:
    """BUNDLER_CACHE set to the harness's wheel cache, which holds the cudart wheel."""
    monkeypatch.setenv("BUNDLER_CACHE", str(wheel_cache()))
    return cudart_wheel


def write_spec(folder: Path, sources: str = "") -> Path:
    (folder / "app").mkdir(exist_ok=True)
    (folder / "app" / "main.py").write_text("print('hello')\n")
    spec = folder / "app.spec"
    spec.write_text(f'[app]\nname = "cudart-app"\npath = "app"\nentry = "main.py"\n'
                    f'[runtime]\nrecipe = "{CU11}"\ncomponents = ["cudart"]\n{sources}')
    return spec


def record_sha256(wheel: Path, member: str) -> str:
    with zipfile.ZipFile(wheel) as archive:
        record = next(n for n in archive.namelist() if n.endswith(".dist-info/RECORD"))
        rows = csv.reader(io.StringIO(archive.read(record).decode()))
        digest = next(r[1] for r in rows if r and r[0] == member).split("=", 1)[1]
    return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()


def rewrite_wheel(wheel: Path, target: Path, change: Callable[[str, bytes], bytes],
                  compression: int = zipfile.ZIP_DEFLATED) -> Path:
    """Copy a wheel member by member, letting `change` alter members' bytes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(target, "w", compression) as out:
        for info in source.infolist():
            out.writestr(info.filename, change(info.filename, source.read(info)))
    return target


def pack_cli(spec: Path, *extra: str) -> int:
    return main(["pack", str(spec), *extra])


def test_real_cudart_wheel_is_packed_from_the_cache_with_record_checked(
        tmp_path: Path, use_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)  # no [sources]: the pinned wheel comes from the cache
    assert pack_cli(spec, "--offline", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    files = {f["path"]: f for f in summary["files"]}
    dll = files["cudnn/cudart64_110.dll"]
    assert dll["sha256"] == record_sha256(use_cache, CUDART_MEMBER)
    assert (dll["machine"], dll["version"], dll["source"]) == ("AMD64", "6.14.11.11080",
                                                               "cudart")
    assert "cudnn/NVIDIA_CUDA_runtime_LICENSE.txt" in files  # the wheel's licence ships
    assert set(summary["component_sizes"]) == {"cudart", "licence"}
    assert summary["total_size"] == sum(summary["component_sizes"].values())
    lock = json.loads(spec.with_name("app.spec.lock").read_text())
    pin = find_recipe(CU11, PROJECT_ROOT).sources["cudart"].sha256
    assert lock["sources"]["cudart"] == {"kind": "wheel", "sha256": pin}


def test_tampered_member_is_refused_by_record(tmp_path: Path, use_cache: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)
    assert pack_cli(spec) == 0
    bundle = tmp_path / "dist" / "cudart-app" / "cudnn" / "cudart64_110.dll"
    before = bundle.read_bytes()

    def flip_a_byte(name: str, data: bytes) -> bytes:
        return data[:4096] + bytes([data[4096] ^ 0xFF]) + data[4097:] if (
            name == CUDART_MEMBER) else data

    tampered = rewrite_wheel(use_cache, tmp_path / "tampered" / use_cache.name, flip_a_byte)
    capsys.readouterr()
    assert pack_cli(spec, "--source", f"cudart={tampered}") == 2
    err = capsys.readouterr().err
    assert f"bundler: error: {tampered}: member {CUDART_MEMBER} does not match the " \
           "wheel's RECORD" in err
    assert "hint:" in err
    assert bundle.read_bytes() == before  # the previous bundle is untouched


@pytest.mark.parametrize("rename, expected", [
    (lambda n: n.replace("win_amd64", "manylinux2014_x86_64"),
     "wheel platform tag manylinux2014_x86_64 is not win_amd64"),
    (lambda n: n.replace("win_amd64", "win32"), "wheel platform tag win32 is not win_amd64"),
])
def test_wrong_platform_tag_is_refused(tmp_path: Path, use_cache: Path,
                                       capsys: pytest.CaptureFixture[str],
                                       rename: Callable[[str], str], expected: str) -> None:
    wrong = tmp_path / rename(use_cache.name)
    shutil.copyfile(use_cache, wrong)
    spec = write_spec(tmp_path, f'[sources]\ncudart = "{wrong.name}"\n')
    assert pack_cli(spec) == 2
    err = capsys.readouterr().err
    assert f"bundler: error: {wrong}: {expected}" in err
    assert "--platform win_amd64" in err  # the hint says how to get the right one
    assert not (tmp_path / "dist" / "cudart-app").exists()


def test_renamed_wheel_is_caught_by_its_wheel_metadata(
        tmp_path: Path, use_cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def linux_tags(name: str, data: bytes) -> bytes:
        return data.replace(b"win_amd64", b"manylinux2014_x86_64") if (
            name.endswith(".dist-info/WHEEL")) else data

    renamed = rewrite_wheel(use_cache, tmp_path / "w" / use_cache.name, linux_tags)
    spec = write_spec(tmp_path)
    assert pack_cli(spec, "--source", f"cudart={renamed}") == 2
    err = capsys.readouterr().err
    assert "WHEEL tags it py3-none-manylinux2014_x86_64, not win_amd64" in err


def test_wheel_differing_from_the_pin_is_refused(tmp_path: Path, use_cache: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Same members, same RECORD, stored instead of deflated: a different file.
    repacked = rewrite_wheel(use_cache, tmp_path / "r" / use_cache.name,
                             lambda _n, data: data, compression=zipfile.ZIP_STORED)
    spec = write_spec(tmp_path)
    assert pack_cli(spec, "--source", f"cudart={repacked}") == 2
    err = capsys.readouterr().err
    pin = find_recipe(CU11, PROJECT_ROOT).sources["cudart"].sha256
    assert f"{repacked}: sha256 " in err and f"differs from the recipe's pin {pin}" in err
    assert not (tmp_path / "dist" / "cudart-app").exists()


@pytest.fixture
def local_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder pip takes wheels from instead of PyPI (a real pip run, no network)."""
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("BUNDLER_CACHE", str(tmp_path / "cache"))
    return folder


def test_missing_wheel_is_fetched_with_pip_into_the_pinned_cache(
        tmp_path: Path, cudart_wheel: Path, local_index: Path) -> None:
    shutil.copyfile(cudart_wheel, local_index / cudart_wheel.name)
    spec = write_spec(tmp_path)
    assert pack_cli(spec) == 0
    pin = find_recipe(CU11, PROJECT_ROOT).sources["cudart"].sha256
    assert (tmp_path / "cache" / pin / cudart_wheel.name).read_bytes() == \
        cudart_wheel.read_bytes()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [pin]  # no leftovers
    assert (tmp_path / "dist" / "cudart-app" / "cudnn" / "cudart64_110.dll").is_file()


def test_fetched_wheel_differing_from_the_pin_is_refused_and_not_cached(
        tmp_path: Path, cudart_wheel: Path, local_index: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    rewrite_wheel(cudart_wheel, local_index / cudart_wheel.name, lambda _n, data: data,
                  compression=zipfile.ZIP_STORED)
    spec = write_spec(tmp_path)
    assert pack_cli(spec) == 2
    err = capsys.readouterr().err
    assert f"bundler: error: {cudart_wheel.name}: pip fetched a file whose sha256" in err
    assert "it was not kept" in err
    assert list((tmp_path / "cache").iterdir()) == []
    assert not (tmp_path / "dist" / "cudart-app").exists()


def test_a_forged_store_record_is_checked_against_the_wheels_record(
        tmp_path: Path, use_cache: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The store maps a wheel's fingerprint to its members' sha256; a record rewritten
    to name other bytes — even sealed with the store's key (a leaked one) — disagrees
    with the wheel's own RECORD, so a second app reads the wheel instead of shipping the
    stored bytes."""
    store = tmp_path / "store"
    monkeypatch.setenv("BUNDLER_STORE", str(store))
    first = tmp_path / "first"
    first.mkdir()
    assert pack_cli(write_spec(first), "--offline") == 0
    capsys.readouterr()
    evil = b"MZ not NVIDIA's cudart"
    sha = hashlib.sha256(evil).hexdigest()
    (store / "objects" / sha[:2]).mkdir(parents=True, exist_ok=True)
    (store / "objects" / sha[:2] / sha).write_bytes(evil)
    key = bytes.fromhex(os.environ["BUNDLER_STORE_KEY"])
    for record in (store / "sources").iterdir():
        body = json.loads(record.read_text())["body"]
        if CUDART_MEMBER in body["members"]:
            body["members"][CUDART_MEMBER] = sha
            record.write_text(json.dumps(seal(key, "source", record.name, body)))
    second = tmp_path / "second"
    second.mkdir()
    assert pack_cli(write_spec(second), "--offline", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    dll = next(f for f in summary["files"] if f["name"] == "cudart64_110.dll")
    assert dll["sha256"] == record_sha256(use_cache, CUDART_MEMBER)
    assert summary["runtime_origin"]["files"] == {"read": len(summary["files"])}
