"""Where bundler keeps per-user files, by each platform's convention (the folders
platformdirs names): the cache (the runtime store, the wheel cache) and the
configuration (the store's key, which must not live in the cache it vouches for).

- Windows: %LOCALAPPDATA%\\bundler\\Cache and %APPDATA%\\bundler;
- macOS: ~/Library/Caches/bundler and ~/Library/Application Support/bundler;
- elsewhere: $XDG_CACHE_HOME/bundler (~/.cache/bundler) and $XDG_CONFIG_HOME/bundler
  (~/.config/bundler).

`environ` is the environment a command runs with (tests pass their own); `~` is the
process's home.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

APP = "bundler"


def user_cache_dir(environ: Mapping[str, str], host_os: str = sys.platform) -> Path:
    # The folders of the machine bundler runs on (its caches), never a target's: so the
    # running OS is the right default here, where a target platform never has one.
    if host_os == "win32":
        return _from(environ, "LOCALAPPDATA", "~/AppData/Local") / APP / "Cache"
    if host_os == "darwin":
        return Path(os.path.expanduser("~/Library/Caches")) / APP
    return _from(environ, "XDG_CACHE_HOME", "~/.cache") / APP


def user_config_dir(environ: Mapping[str, str], host_os: str = sys.platform) -> Path:
    if host_os == "win32":
        return _from(environ, "APPDATA", "~/AppData/Roaming") / APP
    if host_os == "darwin":
        return Path(os.path.expanduser("~/Library/Application Support")) / APP
    return _from(environ, "XDG_CONFIG_HOME", "~/.config") / APP


def _from(environ: Mapping[str, str], variable: str, default: str) -> Path:
    """The variable's folder if it is set to an absolute path (the XDG rule: a relative
    value is ignored), else the default below the home folder."""
    value = environ.get(variable, "")
    return Path(value) if value and os.path.isabs(value) else Path(os.path.expanduser(default))
