"""What a recipe's source kind asks of its [sources.ID] table comes from the kind's
record (recipe/model.py): a wheel needs its package and version; a kind not in
SOURCE_KINDS is refused with the kinds there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.errors import RecipeError
from bundler.recipe.load import find_recipe, load_recipe_file
from bundler.recipe.model import SOURCE_KINDS, WHEEL
from tests.harness.winenv.paths import PROJECT_ROOT

WHEELS = "cudnn-8.9.4.25-cuda11-win-x64"


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    text = find_recipe(WHEELS, PROJECT_ROOT).path.read_text()
    assert old in text
    path = tmp_path / "recipe.toml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_a_wheel_source_without_its_package_is_refused(tmp_path: Path) -> None:
    path = _edited(tmp_path, 'package = "nvidia-cudnn-cu11"\n', "")
    with pytest.raises(RecipeError, match="is a wheel but lacks package or version") as caught:
        load_recipe_file(path)
    assert caught.value.hint == WHEEL.required_hint


def test_a_wheel_source_takes_the_platform_s_tag_by_default(tmp_path: Path) -> None:
    path = _edited(tmp_path, 'platform_tag = "win_amd64"\n', "")
    source = load_recipe_file(path).sources["cudnn"]
    assert source.source_kind is WHEEL and source.platform_tag == "win_amd64"


def test_an_unknown_kind_is_refused_with_the_kinds_there_are(tmp_path: Path) -> None:
    path = _edited(tmp_path, 'kind = "wheel"', 'kind = "tarball"')
    with pytest.raises(RecipeError, match="kind 'tarball' is unknown") as caught:
        load_recipe_file(path)
    assert caught.value.hint == f"use one of: {', '.join(SOURCE_KINDS)}"
