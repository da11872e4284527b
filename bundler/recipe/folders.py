"""Where the shipped recipes and their families live: in a checkout or an installed wheel."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def shipped_recipe_dir() -> Path:
    # A wheel carries the top-level recipes/ folder as package data (bundler.recipes);
    # a source checkout, or an editable install of one, has it beside the package.
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "recipes").is_dir():
        return checkout / "recipes"
    # bundler.recipes has no __init__.py: ask the regular package for its folder.
    return Path(str(resources.files("bundler").joinpath("recipes")))


def families_dir() -> Path:
    return shipped_recipe_dir() / "families"
