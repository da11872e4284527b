"""Test harness for Windows behaviour, run for real on Linux under Wine.

- `build`: stand-in NVIDIA-shaped DLLs (mingw-w64) and NVIDIA's layouts;
- `winpython`: the official Windows CPython 3.11 under a private Wine prefix;
- `fixtures`: session-scoped pytest fixtures built on both.

Wine tests skip when the tools are missing, unless BUNDLER_REQUIRE_WINE=1,
in which case they fail and say what is missing (CI must not skip silently).
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

from .build import missing_toolchain
from .paths import PROJECT_ROOT
from .winpython import WindowsProcessError, WindowsPython, to_windows_path

__all__ = [
    "PROJECT_ROOT",
    "WindowsProcessError",
    "WindowsPython",
    "missing_tools",
    "require_toolchain",
    "require_wine",
    "to_windows_path",
    "wine_available",
]

_WINE_TOOLS = ("wine", "wineserver", "wineboot")
_SETUP_HINT = "run `bash tests/setup.sh` (as root) to install them"


def missing_tools(*, wine: bool = True) -> list[str]:
    """Programs the harness needs that are not on PATH (mingw-w64 and 7z
    always; Wine too when `wine`)."""
    missing = [tool for tool in _WINE_TOOLS if wine and shutil.which(tool) is None]
    missing += missing_toolchain()
    if shutil.which("7z") is None:
        missing.append("7z")
    return missing


def wine_available() -> bool:
    """True if Wine, mingw-w64 and 7z are all installed."""
    return not missing_tools()


def require_wine() -> None:
    """Return if Wine, mingw-w64 and 7z are installed; else skip the test
    (or fail it, naming what is missing, when BUNDLER_REQUIRE_WINE=1)."""
    _require(missing_tools(wine=True))


def require_toolchain() -> None:
    """Like require_wine, for tests that only build stand-ins (no Wine)."""
    _require(missing_tools(wine=False))


def _require(missing: list[str]) -> None:
    if not missing:
        return
    _skip_or_fail(f"missing {', '.join(missing)}; {_SETUP_HINT}")


def _skip_or_fail(reason: str) -> NoReturn:
    import pytest  # only here: the rest of the harness also runs without pytest

    if os.environ.get("BUNDLER_REQUIRE_WINE") == "1":
        pytest.fail(f"BUNDLER_REQUIRE_WINE=1 but {reason}", pytrace=False)
    pytest.skip(reason)
