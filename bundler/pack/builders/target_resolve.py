"""The app's requirements resolved for the bundle's platform and Python, with uv.

pip evaluates environment markers for the machine it runs on whatever `--platform`
says (pip issues #4304, #11664, #13262): packed on Linux for Windows, paddlepaddle-gpu
2.6.2's `protobuf<=3.20.2,>=3.1.0; platform_system == "Windows"` was dropped and its
`protobuf>=3.20.2; platform_system != "Windows"` taken (protobuf 7, and `import
paddle` fails on the target). uv resolves for a target: `uv pip compile
--python-platform x86_64-pc-windows-msvc --python-version 3.11.9` evaluates every
marker as the bundle's CPython does (measured with wheels whose Requires-Dist
names each: platform_system "Windows", sys_platform "win32", os_name "nt",
platform_machine "AMD64", python_version "3.11", python_full_version "3.11.9";
implementation_name is that of the interpreter uv is given, bundler's own CPython, as
the bundle's). The platform is the recipe's (`Platform.python_platform`), the version
the embeddable CPython's full one (cpython_embed.KNOWN).

`--only-binary :all:`: a source distribution would have to be built for
the target, which cannot happen here; uv refuses it, naming the project. The output
is a PEP 751 lock (pylock.toml): per project the version and the one wheel chosen for
the target, its URL and sha256.

Where wheels come from, as pip would take them: the requirement files' own options
(-i/--index-url, --extra-index-url, --find-links relative to the file, --no-index),
which uv reads itself, and pip's settings, which uv does not read and bundler passes
on: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX, PIP_TRUSTED_HOST
and PIP_CERT, and the same keys of pip's configuration files (`pip config list`:
`[global]`, `[install]`, `[download]`); a file's --index-url wins over pip's, as in
pip. Indexes are searched as pip does (`--index-strategy unsafe-best-match`: the best
version of any index). pip's `constraint` and proxy settings are not passed (uv reads
HTTP(S)_PROXY itself); UV_* variables apply as uv documents them. Under --offline uv
resolves from the wheel cache alone (`--offline --no-index --find-links CACHE`). uv's
own cache is a scratch folder removed after the resolve: nothing is written to HOME.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.requirement_files import (
    all_files,
    normalize,
    requirement_lines,
    resolver_copies,
)
from bundler.support.toml_tables import parse_toml_text


@dataclass(frozen=True)
class ResolveTarget:
    """What the requirements are resolved for: the lock's `wheels_for`."""

    platform: str   # uv's --python-platform: "x86_64-pc-windows-msvc"
    python: str     # the bundle's CPython, full version: "3.11.9"

    def to_json(self) -> dict[str, str]:
        return {"platform": self.platform, "python": self.python}

    def describe(self) -> str:
        return f"{self.platform}, CPython {self.python}"


@dataclass(frozen=True)
class Wheel:
    """A wheel file uv names for the target."""

    url: str       # file:// for a --find-links folder, https:// for an index
    sha256: str

    @property
    def file(self) -> str:
        return self.url.rsplit("/", 1)[-1].split("#", 1)[0]


@dataclass(frozen=True)
class Resolved:
    """One project of the resolved set: its version and the wheels of that version uv
    found installable on the target (usually one; several where a project publishes,
    say, a manylinux2014 and a manylinux_2_28 wheel: the installer picks by tag)."""

    name: str      # normalized (PEP 503)
    version: str
    wheels: tuple[Wheel, ...]


def uv_command() -> list[str]:
    """The uv binary of the `uv` package bundler depends on (else one on PATH)."""
    try:
        from uv import find_uv_bin
        return [find_uv_bin()]
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return [found]
    raise SourceError("uv is not installed: bundler resolves an embedded-python app's "
                      "requirements for the bundle's platform with it",
                      f"{sys.executable} -m pip install 'uv>=0.13.9,<0.14'")


def resolve(requirements: Path, target: ResolveTarget, scratch: Path,
            offline_from: Path | None = None) -> list[Resolved]:
    """The set `requirements` resolves to for `target`. `offline_from`: resolve with no
    network from that folder's wheels (and the files' own --find-links) only."""
    out = scratch / "pylock.toml"
    copy = resolver_copies(requirements, scratch / "requirements")
    args = [*uv_command(), "pip", "compile", str(copy), "--format", "pylock.toml",
            "-o", str(out), "--python-platform", target.platform, "--python-version",
            target.python, "--only-binary", ":all:", "--python",
            sys.executable, "--no-python-downloads", "--cache-dir", str(scratch / "uv"),
            "--index-strategy", "unsafe-best-match", "--quiet"]
    if offline_from is not None:
        args += ["--offline", "--no-index", "--find-links", str(offline_from)]
    else:
        args += pip_settings(requirements)
    env = {**os.environ, "NO_COLOR": "1", "UV_NO_PROGRESS": "1"}
    if cert := _pip_setting("cert", env):
        env.setdefault("SSL_CERT_FILE", cert)
    result = subprocess.run(args, cwd=requirements.parent, stdin=subprocess.DEVNULL,
                            capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0 or not out.is_file():
        said = " ".join(line.strip() for line in result.stderr.strip().splitlines()
                        if line.strip() and not line.startswith("warning:"))
        raise SourceError(f"{requirements}: uv could not resolve the app's requirements "
                          f"for {target.describe()}: "
                          f"{said or f'uv exited with {result.returncode}'}",
                          "every requirement needs a wheel for the target (a source "
                          "distribution cannot be built for it here); check the names "
                          "and versions, the network and your package index")
    return read_pylock(out)


def read_pylock(path: Path) -> list[Resolved]:
    """Each package of uv's pylock.toml with the wheels it names for the target."""
    data = parse_toml_text(path.read_text(encoding="utf-8"), path, SourceError)
    found = []
    for package in data.get("packages", []):
        wheels = package.get("wheels") or []
        if not wheels or not all("sha256" in wheel.get("hashes", {}) for wheel in wheels):
            raise SourceError(f"{path}: uv named no wheel with a sha256 for "
                              f"{package.get('name')!r}",
                              "report this to bundler with the requirements file")
        found.append(Resolved(normalize(package["name"]), str(package["version"]), tuple(
            Wheel(wheel.get("url") or Path(wheel["path"]).resolve().as_uri(),
                  wheel["hashes"]["sha256"].lower()) for wheel in wheels)))
    return found


def pip_settings(requirements: Path) -> list[str]:
    """pip's settings that say where wheels come from, as uv's options (a requirement
    file's --index-url / --no-index wins over pip's index, as in pip)."""
    env = dict(os.environ)
    words = {line.split()[0].split("=")[0] for file in all_files(requirements)
             for line in requirement_lines(file) if line.startswith("-")}
    args: list[str] = []
    if (_pip_setting("no-index", env) or "").lower() in ("1", "true", "yes", "on"):
        args.append("--no-index")
    index = _pip_setting("index-url", env)
    if index and not words & {"-i", "--index-url", "--no-index"}:
        args += ["--index-url", index]
    for key, option in (("extra-index-url", "--extra-index-url"),
                        ("find-links", "--find-links"),
                        ("trusted-host", "--allow-insecure-host")):
        for value in (_pip_setting(key, env) or "").split():
            args += [option, value]
    return args


def _pip_setting(key: str, env: Mapping[str, str]) -> str | None:
    """A pip setting as pip would take it for `pip download`: PIP_<KEY>, then the
    configuration files' [download], [install], [global] sections."""
    value = env.get("PIP_" + key.upper().replace("-", "_"))
    if value is not None:
        return value
    config = _pip_config(tuple(sorted(env.items())))
    return next((config[section][key] for section in ("download", "install", "global")
                 if key in config.get(section, {})), None)


_CONFIG: dict[tuple[tuple[str, str], ...], dict[str, dict[str, str]]] = {}
_LINE = re.compile(r"^([^.]+)\.([A-Za-z0-9_-]+)='(.*)'$")


def _pip_config(env: tuple[tuple[str, str], ...]) -> dict[str, dict[str, str]]:
    """pip's configuration files as `pip config list` merges them, by section (pip
    absent: none)."""
    if env not in _CONFIG:
        result = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                                stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                check=False, env=dict(env))
        sections: dict[str, dict[str, str]] = {}
        for line in result.stdout.splitlines() if result.returncode == 0 else []:
            if (match := _LINE.match(line)) and match.group(1) != ":env:":
                sections.setdefault(match.group(1), {})[match.group(2)] = match.group(3)
        _CONFIG.clear()
        _CONFIG[env] = sections
    return _CONFIG[env]
