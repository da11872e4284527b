"""Where the checkout is: tests never rely on the working directory."""

from __future__ import annotations

from pathlib import Path

# The repository root: listed in the Windows Python's _pth so it can `import bundler`.
PROJECT_ROOT = Path(__file__).resolve().parents[3]
RECIPES = PROJECT_ROOT / "recipes"
