"""Recipes: the shipped seed recipe's facts, component closure, and validation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bundler.errors import RecipeError
from bundler.recipe.load import find_recipe, load_recipe_file, shipped_recipes
from bundler.windows.compat import compat_facts
from bundler.windows.facts import windows_facts
from tests.harness.winenv.paths import PROJECT_ROOT

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"


def test_seed_recipe_facts() -> None:
    recipe = find_recipe(SEED, PROJECT_ROOT)
    assert (recipe.cudnn, recipe.cuda, recipe.min_driver) == ("8.0.3.33", "10.1", "418.96")
    zip_source = recipe.sources["cudnn"]
    assert len(zip_source.contents) == 31
    assert sum(m.startswith("bin/") for m in zip_source.contents) == 7
    assert sum(m.startswith("include/") for m in zip_source.contents) == 9
    assert sum(m.startswith("lib/x64/") for m in zip_source.contents) == 14
    assert recipe.sources["cuda"].env == ("CUDA_PATH_V10_1", "CUDA_PATH")
    assert windows_facts().is_driver("NVCUDA.DLL")
    shipped = {f.name for f in recipe.files_for(recipe.select(None))}
    assert not any(n.endswith((".h", ".lib")) for n in shipped)
    assert "NVIDIA_SLA_cuDNN_Support.txt" in shipped
    assert recipe.files["cudnn64_8.dll"].loads  # sub-libraries loaded at run time


@pytest.mark.parametrize("wanted, expected", [
    (["cnn_infer"], {"cnn_infer", "ops_infer", "core", "cublas", "cudart"}),
    (["cnn_train"], {"cnn_train", "cnn_infer", "ops_train", "ops_infer", "core", "cublas",
                     "cudart"}),
    (["adv_train"], {"adv_train", "adv_infer", "ops_train", "ops_infer", "core", "cublas",
                     "cudart"}),
])
def test_component_requirements_come_along(wanted: list[str], expected: set[str]) -> None:
    recipe = find_recipe(SEED, PROJECT_ROOT)
    assert {c.name for c in recipe.select(wanted)} == expected


def test_unknown_component_and_recipe_are_errors() -> None:
    recipe = find_recipe(SEED, PROJECT_ROOT)
    with pytest.raises(RecipeError, match="no component 'cnn'"):
        recipe.select(["cnn"])
    with pytest.raises(RecipeError, match="no shipped recipe"):
        find_recipe("cudnn-7", PROJECT_ROOT)


def test_every_shipped_recipe_loads() -> None:
    names = [r.name for r in shipped_recipes()]
    assert SEED in names
    for recipe in shipped_recipes():
        assert recipe.path.stem == recipe.name


def test_headers_may_not_ship(tmp_path: Path) -> None:
    text = (find_recipe(SEED, PROJECT_ROOT).path.read_text()
            .replace('files = ["cudnn:bin/cudnn64_8.dll"]',
                     'files = ["cudnn:bin/cudnn64_8.dll", "cudnn:include/cudnn.h"]'))
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError, match="cudnn.h is not redistributable"):
        load_recipe_file(path)


@pytest.mark.parametrize("name", ["../../x.txt", "sub/x.txt", "..\\x.txt", "C:x.txt",
                                  "C:\\Windows\\x.txt", "/tmp/x.txt", ".."])
def test_a_renamed_file_must_be_a_bare_file_name(tmp_path: Path, name: str) -> None:
    recipe = find_recipe("cudnn-8.9.4.25-cuda11-win-x64", PROJECT_ROOT)
    text = recipe.path.read_text().replace('as = "NVIDIA_cuBLAS_LICENSE.txt"',
                                           f"as = {json.dumps(name)}")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError, match="is not a bare file name"):
        load_recipe_file(path)


def _with_versions(tmp_path: Path, cuda: str, extra: str) -> Path:
    text = find_recipe(SEED, PROJECT_ROOT).path.read_text().replace(
        'cuda = "10.1"', f'cuda = "{cuda}"\n{extra}')
    path = tmp_path / "recipe.toml"
    path.write_text(text)
    return path


def test_driver_minimums_come_from_the_driver_table(tmp_path: Path) -> None:
    """One home: the recipe names its CUDA release, the driver table gives the rest."""
    recipe = load_recipe_file(_with_versions(tmp_path, "11.8", ""))
    assert (recipe.min_driver, recipe.min_driver_compat) == (
        compat_facts().min_driver_for("11.8"), compat_facts().minor_compatible_from("11.8"))
    agreeing = load_recipe_file(_with_versions(
        tmp_path, "11.8", f'min_driver = "{recipe.min_driver}"'))
    assert agreeing.min_driver == recipe.min_driver


def test_a_driver_minimum_that_disagrees_with_the_table_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="driver table gives"):
        load_recipe_file(_with_versions(tmp_path, "10.1", 'min_driver = "400.00"'))


@pytest.mark.parametrize("old, new", [
    ('cudnn = "8.0.3.33"', 'cudnn = ""'), ('cudnn = "8.0.3.33"', 'cudnn = "8.x"'),
    ('cudnn = "8.0.3.33"', 'cudnn = "v8.0"'), ('cuda = "10.1"', 'cuda = ""'),
    ('cuda = "10.1"', 'cuda = "10.1."'), ('cudnn = "8.0.3.33"', 'cudnn = "8.0.3.33.dev"'),
    ('cuda = "10.1"', 'cuda = "10.1.dev5"')])
def test_a_release_number_that_is_not_numbers_and_dots_is_refused(
        tmp_path: Path, old: str, new: str) -> None:
    """A pack once died with an internal error on `cudnn = ""` (found by the fuzz test):
    the version checks compare release numbers part by part."""
    path = tmp_path / "recipe.toml"
    path.write_text(find_recipe(SEED, PROJECT_ROOT).path.read_text().replace(old, new))
    with pytest.raises(RecipeError, match=r"is not a release number") as refused:
        load_recipe_file(path)
    assert str(path) in str(refused.value) and "e.g." in refused.value.hint


def test_a_cudnn_development_build_number_is_a_release_number(tmp_path: Path) -> None:
    """NVIDIA publishes development builds on PyPI (9.26.0.33.dev63203437): the catalogue
    renders recipes for them, so the release-number check must let .devN through."""
    path = tmp_path / "recipe.toml"
    path.write_text(find_recipe(SEED, PROJECT_ROOT).path.read_text().replace(
        'cudnn = "8.0.3.33"', 'cudnn = "8.0.3.33.dev63203437"'))
    assert load_recipe_file(path).cudnn == "8.0.3.33.dev63203437"


def test_a_cuda_release_the_table_lacks_needs_its_minimum(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="has no CUDA 99.1"):
        load_recipe_file(_with_versions(tmp_path, "99.1", ""))
    recipe = load_recipe_file(_with_versions(tmp_path, "99.1", 'min_driver = "999.99"'))
    assert recipe.min_driver == "999.99"


def test_driver_dlls_are_never_in_a_recipe(tmp_path: Path) -> None:
    text = find_recipe(SEED, PROJECT_ROOT).path.read_text().replace(
        'files = ["cudnn:bin/cudnn64_8.dll"]',
        'files = ["cudnn:bin/cudnn64_8.dll", "cudnn:bin/nvcuda.dll"]')
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(RecipeError, match="nvcuda.dll is a driver or system DLL"):
        load_recipe_file(path)


def test_a_recipe_finds_a_runtime_file_by_name_as_its_platform_compares_names() -> None:
    """Windows ignores case (cuDNN64_8.DLL is cudnn64_8.dll); on Linux libcublasLt.so.13
    and libcublaslt.so.13 are two names, as glibc's loader sees them."""
    windows = find_recipe("cudnn-8.9.4.25-cuda11-win-x64", PROJECT_ROOT)
    assert windows.supplier_of("CUDNN64_8.DLL") is not None
    linux = find_recipe("cudnn-9.19.0.56-cuda13-linux-x64", PROJECT_ROOT)
    assert linux.supplier_of("libcublasLt.so.13") is not None
    assert linux.supplier_of("libcublaslt.so.13") is None
