"""Wheel sources without the network: the name/WHEEL/RECORD checks on small wheels
built here, the one-pass file digest, the wheel recipes' facts, and --offline."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from bundler.cli import main
from bundler.errors import RecipeError, SourceError
from bundler.pack.sources import WheelSource
from bundler.pack.sources.fetch import cached, offline_error
from bundler.recipe.load import SourceSpec, find_recipe, load_recipe_file, shipped_recipes
from bundler.support.hashing import PiggybackDigest
from tests.harness import wheelkit
from tests.harness.winenv.paths import PROJECT_ROOT

CU11 = "cudnn-8.9.4.25-cuda11-win-x64"
CU12 = "cudnn-9.28.0.42-cuda12-win-x64"
DLL = "demo/bin/demo64_1.dll"


def make_wheel(folder: Path, members: dict[str, bytes], **options: object) -> Path:
    return wheelkit.make_wheel(folder, members, **{"name": "demo_pkg", "version": "1.0",
                                                   **options})  # type: ignore[arg-type]


def wheel_spec(**changes: str) -> SourceSpec:
    fields = {"id": "demo", "kind": "wheel", "contents": (DLL,), "package": "demo-pkg",
              "version": "1.0", "platform_tag": "win_amd64"}
    return SourceSpec(**{**fields, **changes})  # type: ignore[arg-type]


def read_taken(source: WheelSource) -> dict[str, bytes]:
    """One sweep of the source: the bytes of each member it takes (it checks the rest)."""
    return {member: b"".join(chunks) for member, chunks in source.sweep()}


def test_wheel_member_streams_and_matches_record(tmp_path: Path) -> None:
    payload = os.urandom(3 << 20)
    path = make_wheel(tmp_path, {DLL: payload, "demo/readme.txt": b"hi"})
    source = WheelSource(wheel_spec(), path, "test", takes={DLL})
    try:
        data = read_taken(source)[DLL]
        assert data == payload
        source.confirm(DLL, hashlib.sha256(data).hexdigest())
        assert source.identity({}) == hashlib.sha256(path.read_bytes()).hexdigest()
    finally:
        source.close()


def test_member_altered_after_build_fails_record(tmp_path: Path) -> None:
    # The zip CRC is right (zipfile wrote it): only RECORD can tell.
    path = make_wheel(tmp_path, {DLL: b"altered"}, recorded={DLL: b"original"})
    source = WheelSource(wheel_spec(), path, "test", takes={DLL})
    try:
        data = read_taken(source)[DLL]
        with pytest.raises(SourceError, match=f"member {DLL} does not match the wheel's "
                                              "RECORD"):
            source.confirm(DLL, hashlib.sha256(data).hexdigest())
    finally:
        source.close()


def test_record_is_checked_under_a_source_root(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, {DLL: b"altered"}, recorded={DLL: b"original"})
    spec = wheel_spec(root="demo", contents=("bin/demo64_1.dll",))
    source = WheelSource(spec, path, "test", takes={"bin/demo64_1.dll"})
    try:
        data = read_taken(source)["bin/demo64_1.dll"]
        with pytest.raises(SourceError, match=f"member {DLL} does not match"):
            source.confirm("bin/demo64_1.dll", hashlib.sha256(data).hexdigest())
    finally:
        source.close()


@pytest.mark.parametrize("platform, tag_platform, expected", [
    ("manylinux2014_x86_64", "", "platform tag manylinux2014_x86_64 is not win_amd64"),
    ("win32", "", "platform tag win32 is not win_amd64"),
    ("win_amd64", "manylinux2014_x86_64", "WHEEL tags it py3-none-manylinux2014_x86_64"),
])
def test_wrong_platform_is_refused(tmp_path: Path, platform: str, tag_platform: str,
                                   expected: str) -> None:
    path = make_wheel(tmp_path, {DLL: b"x"}, platform=platform, tag_platform=tag_platform)
    with pytest.raises(SourceError, match=expected) as caught:
        WheelSource(wheel_spec(), path, "test")
    assert str(path) in caught.value.message
    assert "pip download" in caught.value.hint


def test_other_package_or_version_is_refused(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, {DLL: b"x"}, version="2.0")
    with pytest.raises(SourceError, match="is demo_pkg 2.0, the recipe needs demo-pkg 1.0"):
        WheelSource(wheel_spec(), path, "test")


def test_member_missing_from_record_is_refused(tmp_path: Path) -> None:
    path = make_wheel(tmp_path, {DLL: b"x"})
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("demo/bin/extra.dll", b"y")
    with pytest.raises(SourceError, match="not in the wheel's RECORD"):
        WheelSource(wheel_spec(contents=(DLL, "demo/bin/extra.dll")), path, "test")


def test_piggyback_digest_equals_a_full_hash_in_any_read_order(tmp_path: Path) -> None:
    path = tmp_path / "blob"
    data = os.urandom(5 << 20)
    path.write_bytes(data)
    ranges = [(0, 100), (100, 4000), (9000, 50_000), (3 << 20, (3 << 20) + 77)]
    for order in (ranges, list(reversed(ranges)), ranges + ranges):
        digest = PiggybackDigest(path)
        for start, stop in order:
            digest.see(start, data[start:stop])
        assert digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_wheel_recipes_name_their_parts() -> None:
    cu11 = find_recipe(CU11, PROJECT_ROOT)
    assert (cu11.cudnn, cu11.cuda, cu11.min_driver, cu11.min_driver_compat) == (
        "8.9.4.25", "11.8", "520.06", "452.39")
    shipped = {f.name for f in cu11.files_for(cu11.select(["cnn_infer"]))}
    assert shipped == {"cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_cnn_infer64_8.dll",
                       "cublas64_11.dll", "cublasLt64_11.dll", "cudart64_110.dll",
                       "NVIDIA_cuDNN_LICENSE.txt", "NVIDIA_cuBLAS_LICENSE.txt",
                       "NVIDIA_CUDA_runtime_LICENSE.txt"}
    assert "nvblas64_11.dll" not in {f.name for f in cu11.files.values()}
    cu12 = find_recipe(CU12, PROJECT_ROOT)
    assert {f.name for f in cu12.files.values() if f.source == "cudnn"} == {
        "cudnn64_9.dll", "cudnn_graph64_9.dll", "cudnn_engines_precompiled64_9.dll",
        "cudnn_engines_runtime_compiled64_9.dll", "cudnn_engines_tensor_ir64_9.dll",
        "cudnn_heuristic64_9.dll", "cudnn_ops64_9.dll", "cudnn_cnn64_9.dll",
        "cudnn_adv64_9.dll", "cudnn_ext64_9.dll"}
    for recipe in (cu11, cu12):
        for source in recipe.sources.values():
            assert source.kind == "wheel" and len(source.sha256) == 64
            assert source.platform_tag == "win_amd64"


def test_every_run_time_load_is_a_file_of_its_recipe() -> None:
    for recipe in shipped_recipes():
        names = {f.name.lower() for f in recipe.files.values()}
        for runtime_file in recipe.files.values():
            assert {n.lower() for n in runtime_file.loads} <= names, runtime_file.name


def test_licences_of_alike_name_must_be_renamed_apart(tmp_path: Path) -> None:
    text = find_recipe(CU11, PROJECT_ROOT).path.read_text().replace(
        ', as = "NVIDIA_cuBLAS_LICENSE.txt"', ', as = "NVIDIA_cuDNN_LICENSE.txt"')
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError, match="NVIDIA_cuDNN_LICENSE.txt would be shipped twice"):
        load_recipe_file(path)


def test_wheel_source_must_name_package_and_version(tmp_path: Path) -> None:
    text = find_recipe(CU11, PROJECT_ROOT).path.read_text()
    path = tmp_path / "bad.toml"
    path.write_text(text.replace('platform_tag = "win_amd64"\n', ""))
    unstated = load_recipe_file(path)  # the tag follows the recipe's platform
    assert {s.platform_tag for s in unstated.sources.values()} == {"win_amd64"}
    path.write_text(text.replace('package = "nvidia-cublas-cu11"\n', ""))
    with pytest.raises(RecipeError, match=r"\[sources.cublas\] is a wheel but lacks"):
        load_recipe_file(path)


def test_cache_is_keyed_by_the_pin(tmp_path: Path) -> None:
    spec = find_recipe(CU11, PROJECT_ROOT).sources["cudart"]
    assert cached(spec, tmp_path) is None
    (tmp_path / spec.sha256).mkdir()
    (tmp_path / spec.sha256 / spec.file_name).write_bytes(b"")
    assert cached(spec, tmp_path) == tmp_path / spec.sha256 / spec.file_name


def test_offline_names_every_missing_wheel_and_how_to_get_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app.spec").write_text(
        f'[app]\nname = "demo"\npath = "app"\n[runtime]\nrecipe = "{CU11}"\n')
    monkeypatch.setenv("BUNDLER_CACHE", str(tmp_path / "empty-cache"))
    assert main(["pack", str(tmp_path / "app.spec"), "--offline"]) == 2
    err = capsys.readouterr().err
    assert "--offline" in err and "forbids fetching" in err
    for wanted in ("cudnn (nvidia-cudnn-cu11==8.9.4.25)", "cublas (nvidia-cublas-cu11==11.11.3.6)",
                   "cudart (nvidia-cuda-runtime-cu11==11.8.89)", "pip download --no-deps",
                   "--source cudnn=wheels/nvidia_cudnn_cu11-8.9.4.25-py3-none-win_amd64.whl"):
        assert wanted in err
    assert not (tmp_path / "dist").exists()


def test_offline_error_for_one_wheel_reads_well() -> None:
    spec = find_recipe(CU11, PROJECT_ROOT).sources["cudart"]
    error = offline_error([spec], Path("/cache"))
    assert error.message.startswith("--offline: source(s) cudart (nvidia-cuda-runtime-cu11")
    assert "nvidia-cuda-runtime-cu11==11.8.89 -d wheels" in error.hint


def test_a_missing_source_file_is_no_such_file_whatever_its_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A path typo in [sources] is reported as one, not as a wheel named wrongly."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.py").write_text("print('hi')\n")
    spec = tmp_path / "app.spec"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\nentry = "main.py"\n\n[runtime]\n'
                    f'recipe = "{CU12}"\n')
    ids = sorted(find_recipe(CU12, PROJECT_ROOT).sources)
    given = [arg for sid in ids for arg in ("--source", f"{sid}=downloads/{sid}-windows.zip")]
    capsys.readouterr()
    assert main(["pack", str(spec), "--offline", *given]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'downloads' / ids[0]}-windows.zip: no such file (source " in err
    assert "not named like a wheel" not in err and "hint: check the path" in err
