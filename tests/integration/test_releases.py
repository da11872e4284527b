"""Any cuDNN release by name: the catalogue, the families, the channels (no downloads)."""

from __future__ import annotations

import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from bundler.errors import RecipeError, SourceError
from bundler.recipe.load import (
    Recipe,
    families_dir,
    find_recipe,
    load_recipe_file,
    load_recipe_text,
)
from bundler.releases import catalogue as catalogue_module
from bundler.releases.catalogue import (
    CATALOGUE,
    Release,
    catalogue_releases,
    find_release,
    release_name,
)
from bundler.releases.channels import Channel, detect
from bundler.releases.render import api_version, default_channel, driver_style_version, render
from bundler.support.toml_tables import tomllib
from bundler.windows.pe_file import returned_constant
from tests.harness.packing import PROJECT_ROOT, run_cli
from tools.generate_catalogue import render as render_catalogue

HAND_WRITTEN = ("cudnn-8.9.4.25-cuda11-win-x64", "cudnn-9.28.0.42-cuda12-win-x64",
                "cudnn-9.28.0.42-cuda13-win-x64")


def test_every_release_of_the_catalogue_resolves_to_a_recipe() -> None:
    releases = catalogue_releases()
    wheels = [r for r in releases if r.wheel and r.platform == "win-x64"]
    assert len(wheels) == 97   # NVIDIA's Windows cuDNN wheels on PyPI (cu11 20, cu12 49, cu13 28)
    # and its manylinux x86-64 ones (cu11 28, cu12 58, cu13 32; 8.5.0.96 twice, one kept)
    linux = [r for r in releases if r.wheel and r.platform == "linux-x64"]
    assert len(linux) == 118 and not [r for r in linux if r.archives]
    assert {r.wheel.package for r in wheels + linux if r.wheel} == {
        "nvidia-cudnn-cu11", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"}
    assert any(r.major == 7 for r in releases) and any(r.major == 8 and not r.wheel
                                                       for r in releases)
    for release in releases:
        recipe = find_recipe(release.name, PROJECT_ROOT)
        assert (recipe.name, recipe.cudnn) == (release.name, release.cudnn)
        cudnn = recipe.sources["cudnn"]
        shim = recipe.target.library_file("cudnn", str(release.major))
        assert shim in recipe.files and recipe.files[shim].component == "core"
        if release.wheel:
            assert (cudnn.kind, cudnn.sha256, cudnn.version) == (
                "wheel", release.wheel.sha256, release.cudnn)
            assert {f.name for f in recipe.files.values() if f.source == "cudnn"} == set(
                release.wheel.dlls)
        elif not (PROJECT_ROOT / "recipes" / f"{release.name}.toml").is_file():
            assert cudnn.kind == "archive" and cudnn.file_name == release.archives[-1].file_name
        assert recipe.select(None)   # the default selection closes over requires


def test_the_catalogue_file_is_the_generators_output() -> None:
    text = CATALOGUE.read_text(encoding="utf-8")
    assert render_catalogue(tomllib.loads(text)) == text


def test_the_catalogue_is_read_strictly(tmp_path: Path) -> None:
    text = CATALOGUE.read_text(encoding="utf-8")
    bad = tmp_path / "catalogue.toml"
    bad.write_text(text.replace('bin = "nvidia/cudnn/bin"', 'bin = "nvidia/cudnn/bin"\nbn = 1',
                                1), encoding="utf-8")
    with pytest.raises(RecipeError, match="unknown key 'wheel.bn'"):
        catalogue_module.catalogue_releases(bad)


@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_the_family_renders_what_the_hand_written_recipe_says(name: str) -> None:
    """The families were written from the same real files: rendered, a release the
    project wrote out by hand comes out with the same sources, files and checks."""
    written = load_recipe_file(PROJECT_ROOT / "recipes" / f"{name}.toml")
    release = find_release(name)
    assert release is not None and release.wheel is not None
    text = render(release, _default(release), families_dir())
    assert find_recipe(name, PROJECT_ROOT).sha256 == written.sha256   # the file wins by name
    rendered = load_recipe_text(text.encode(), Path(name))
    assert rendered.cuda == written.cuda and rendered.min_driver == written.min_driver
    assert _sources(rendered) == _sources(written)
    assert _components(rendered) == _components(written)
    # The family may know more run-time loads than the hand-written file noted (cuDNN 9's
    # precompiled engines name NVRTC in CUDA 12 builds too); nothing else differs.
    assert {n: f[:2] + f[3:] for n, f in _facts(rendered).items()} == {
        n: f[:2] + f[3:] for n, f in _facts(written).items()}
    for name, facts in _facts(written).items():
        assert set(facts[2]) <= set(_facts(rendered)[name][2])
    assert rendered.signers.keys() == written.signers.keys()


def _default(release: Release) -> Channel:
    return default_channel(release)


def _sources(recipe: Recipe) -> dict:
    return {sid: (s.kind, s.package, s.version, s.sha256, s.signed_by,
                  sorted(m for m in s.contents if m.endswith(".dll")))
            for sid, s in recipe.sources.items()}


def _components(recipe: Recipe) -> dict:
    return {c.name: (c.files, sorted(c.requires), c.default) for c in recipe.components.values()}


def _facts(recipe: Recipe) -> dict:
    return {f.name: (f.member, f.version, sorted(f.loads), f.signed_by)
            for f in recipe.files.values()}


def test_a_release_ships_the_libraries_its_wheel_has() -> None:
    early = find_recipe("cudnn-9.0.0.312-cuda12-win-x64", PROJECT_ROOT)
    late = find_recipe("cudnn-9.22.0.52-cuda12-win-x64", PROJECT_ROOT)
    assert "ext" not in early.components and "ext" in late.components
    assert "cudnn_engines_tensor_ir64_9.dll" not in early.files
    assert "cudnn_ext64_9.dll" not in early.files["cudnn64_9.dll"].loads
    assert early.files["cudnn_ops64_9.dll"].version == "9.0.0.312"


def test_a_wheel_holding_a_library_its_family_does_not_know_is_refused() -> None:
    release = find_release("cudnn-9.1.0.70-cuda12-win-x64")
    assert release is not None and release.wheel is not None
    newer = replace(release, wheel=replace(release.wheel,
                                           dlls=(*release.wheel.dlls, "cudnn_new64_9.dll")))
    with pytest.raises(RecipeError, match="cudnn_new64_9.dll, which cudnn9-win-x64.toml does "
                                          "not know"):
        render(newer, _default(newer), families_dir())


def test_cudnn_7_is_checked_by_its_export_and_the_cuda_file_version() -> None:
    recipe = find_recipe("cudnn-7.6.5.32-cuda10.1-win-x64", PROJECT_ROOT)
    shim = recipe.files["cudnn64_7.dll"]
    assert (shim.version, shim.cudnn_get_version, shim.signed_by) == ("6.14.11.10010", 7605, "")
    assert recipe.sources["cudnn"].root == "cuda"
    assert "Yggdrasil" in recipe.sources["cudnn"].trust   # a third party's published pin
    unpinned = find_recipe("cudnn-7.5.0.56-cuda10.1-win-x64", PROJECT_ROOT).sources["cudnn"]
    assert not unpinned.sha256 and "trusted on first pack" in unpinned.trust
    assert {"cudart", "cublas", "core"} <= {c.name for c in recipe.select(None)}
    assert api_version("9.1.0.70") == 90100 and api_version("8.9.7.29") == 8907
    assert driver_style_version("11.8") == "6.14.11.11080"


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


@pytest.mark.parametrize("file_name", ["cudnn-10.1-windows10-x64-v8.0.3.33.zip",
                                       "cudnn-v8.0.3.33_cuda10.1-windows10-x64.zip",
                                       "whatever.zip"])
def test_a_legacy_zip_is_known_by_its_layout_not_its_name(tmp_path: Path,
                                                          file_name: str) -> None:
    path = _zip(tmp_path / file_name, {"cuda/bin/cudnn64_8.dll": b"MZ",
                                       "cuda/NVIDIA_SLA_cuDNN_Support.txt": b"licence"})
    found = detect(path, 8, "win-x64")
    assert (found.kind, found.root, found.prefix, found.licence) == (
        "archive", "cuda", "bin/", "NVIDIA_SLA_cuDNN_Support.txt")


def test_a_redist_archive_renders_the_shipped_release_from_its_family(tmp_path: Path) -> None:
    top = "cudnn-windows-x86_64-9.28.0.42_cuda12-archive"
    path = _zip(tmp_path / "any-name.zip", {f"{top}/bin/cudnn64_9.dll": b"MZ",
                                            f"{top}/LICENSE": b"licence"})
    recipe = find_recipe("cudnn-9.28.0.42-cuda12-win-x64", PROJECT_ROOT, {"cudnn": path})
    cudnn = recipe.sources["cudnn"]
    assert (cudnn.kind, cudnn.root, cudnn.signed_by) == ("archive", top, "NVIDIA Corporation")
    assert "nvidia/cudnn/bin/cudnn64_9.dll" not in cudnn.contents
    assert "bin/cudnn64_9.dll" in cudnn.contents and "LICENSE" in cudnn.contents
    assert "signature" in cudnn.trust   # no sha256 is published for it here
    assert recipe.sources["cublas"].kind == "wheel"   # the runtime set is unchanged


def test_the_installer_folder_picks_the_build_for_the_release_cuda(tmp_path: Path) -> None:
    for build in ("11.8", "12.6", "12.9/x64"):
        (tmp_path / "v9.1" / "bin" / build).mkdir(parents=True)
        (tmp_path / "v9.1" / "bin" / build / "cudnn64_9.dll").write_bytes(b"MZ")
    (tmp_path / "v9.1" / "LICENSE").write_text("licence")
    installer = {"cudnn": tmp_path / "v9.1"}
    recipe = find_recipe("cudnn-9.1.0.70-cuda11-win-x64", PROJECT_ROOT, installer)
    assert recipe.sources["cudnn"].kind == "folder"
    assert recipe.files["cudnn64_9.dll"].member == "bin/11.8/cudnn64_9.dll"
    later = find_recipe("cudnn-9.1.0.70-cuda12-win-x64", PROJECT_ROOT, installer)
    assert later.files["cudnn64_9.dll"].member == "bin/12.9/x64/cudnn64_9.dll"
    with pytest.raises(SourceError, match="builds for CUDA 11.8, 12.6, 12.9, none for CUDA 13"):
        find_recipe("cudnn-9.28.1.4-cuda13-win-x64", PROJECT_ROOT, installer)


def test_an_input_in_no_known_layout_is_refused(tmp_path: Path) -> None:
    path = _zip(tmp_path / "cudnn.zip", {"stuff/cudnn64_9.dll": b"MZ"})
    with pytest.raises(SourceError, match="not a cuDNN archive in a layout NVIDIA ships"):
        find_recipe("cudnn-9.1.0.70-cuda12-win-x64", PROJECT_ROOT, {"cudnn": path})


def test_recipes_lists_families_and_series(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "recipes")
    assert code == 0 and "cudnn9-win-x64: " in out and "cudnn7-win-x64: " in out
    assert "cudnn9-linux-x64: " in out and "cudnn8-linux-x64: " in out
    code, out, _ = run_cli(capsys, "recipes", "9.1", "--json")
    assert code == 0 and [r["name"] for r in json.loads(out)] == [
        release_name(v, c, p) for v in ("9.1.0.70", "9.1.1.17") for c in ("11", "12")
        for p in ("win-x64", "linux-x64")]
    code, out, _ = run_cli(capsys, "recipes", "cudnn9-linux-x64", "--json")
    assert code == 0 and {r["name"].rsplit("-", 2)[1] for r in json.loads(out)} == {"linux"}
    code, out, _ = run_cli(capsys, "recipes", "cudnn7")
    assert code == 0 and "cudnn-7.6.5.32-cuda10.1-win-x64" in out


def test_an_unknown_release_names_the_closest_known(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "recipes", "cudnn-9.1.0.71-cuda12-win-x64")
    assert code == 2
    assert "closest known: cudnn-9.1.0.70-cuda12-win-x64, cudnn-9.1.1.17-cuda12-win-x64" in err


def test_a_rendered_recipe_written_out_loads_as_the_same_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine.toml"
    name = "cudnn-9.5.1.17-cuda12-win-x64"
    code, _, err = run_cli(capsys, "recipes", name, "--write", out)
    assert code == 0, err
    assert load_recipe_file(out).sha256 == find_recipe(name, PROJECT_ROOT).sha256
    code, _, err = run_cli(capsys, "recipes", name, "--write", out)
    assert code == 2 and "exists" in err


# The code of cudnnGetVersion as NVIDIA's DLLs have it (file-offset dumps of the real
# files; rel32 call targets and the logging body shortened to filler).
_LOGGED_8X = ("b858800000" "e811223344" "482be0" + "90" * 16 + "b8cb220000" "488b8c2440800000"
              "4833cc" "e811223344" "4881c458800000" "c3" "cccccccc")
_LOGGED_9X = ("b858000100" "e811223344" "482be0" + "90" * 16 + "b8e8690100" "488b8c2440000100"
              "4833cc" "e811223344" "4881c458000100" "c3" "cccccccc")


@pytest.mark.parametrize("code, number", [
    ("b84c1d0000c3" "cccccccccccc", 7500),          # cuDNN 7.5.0's cudnn64_7: mov eax; ret
    (_LOGGED_8X, 8907),                             # 8.9.7's cudnn_ops_infer64_8
    (_LOGGED_9X, 92648),                            # a 9.x cudnn_graph64_9 (0x169e8)
    ("4053b820000000e8b48e0000482be065" "48ff2511223344" "cccccccc", None),   # the 8.x shim
    ("4889c8" "b801000000c3" "b802000000c3" "cccccccc", None),  # two candidates: no guess
    ("31c0c3cccccccc", None),                       # xor eax, eax: no constant
])
def test_the_release_number_is_read_from_cudnn_get_version_code(code: str,
                                                                number: int | None) -> None:
    assert returned_constant(bytes.fromhex(code)) == number
