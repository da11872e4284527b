"""The "embedded-python" builder: the app with its own official Windows CPython.

Made entirely on this machine (Linux or Windows, no Wine): nothing of it runs here.

    <name>/                the app folder, as the folder builder makes it (the
      <entry>, ...         bootstrap injected into the entry, the runtime below it),
      <runtime dir>/       so verify and doctor read it as they read a folder app
      <name>.cmd           runs <entry> with python/python.exe, arguments passed
      python/              python.org's embeddable CPython of app.python (cpython_embed)
        python3X._pth      the app folder, the standard library, Lib/site-packages
        Lib/site-packages  app.requirements as win_amd64 wheels, resolved for the
                           recipe's platform and this CPython (pip_wheels, with uv),
                           less the nvidia-* wheels' DLLs the runtime provides (one_copy)
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import SpecError
from bundler.pack.builders.base import Builder, BuildOptions, BuiltApp
from bundler.pack.builders.cpython_embed import (
    KNOWN,
    Embeddable,
    embeddable_sdist,
    known_embeddable,
    unpack_embeddable,
)
from bundler.pack.builders.folder import build_folder_app, require_app_path
from bundler.pack.builders.installed_again import Taken, remember, set_key, take
from bundler.pack.builders.pip_wheels import WHEEL_TAG, LockedWheel, install_requirements
from bundler.pack.builders.target_resolve import ResolveTarget
from bundler.pack.one_copy import LeftOutWheel, leave_out_provided

if TYPE_CHECKING:
    from bundler.pack.spec_model import Spec
    from bundler.recipe.model import Recipe

PYTHON_DIR = "python"
SITE_PACKAGES = "Lib/site-packages"


def build_embedded_python_app(spec: Spec, recipe: Recipe, staging: Path, target: Path,
                              options: BuildOptions | None = None) -> BuiltApp:
    """The app (with the bootstrap injected into its entry) at the top, the embeddable
    CPython and the requirements under python/, the launcher beside the app."""
    options = options or BuildOptions()
    embed = known_embeddable(spec.python, spec.path)
    if recipe.target.wheel_tag != WHEEL_TAG:   # python.org's embeddable is Windows x64
        raise SpecError(f'{spec.path}: builder = "embedded-python" ships a Windows x64 '
                        f"CPython, but recipe {recipe.name} is for {recipe.target.name}",
                        "use a win-x64 recipe, or builder = \"folder\" for this platform")
    _refuse_taken_names(spec)
    sdist = embeddable_sdist(embed, options.environ, options.offline)   # before any copy
    built = build_folder_app(spec, recipe, staging, target, options)   # its own_data
    python = staging / PYTHON_DIR
    unpack_embeddable(sdist, embed, python)
    site_packages = python / SITE_PACKAGES
    site_packages.mkdir(parents=True, exist_ok=True)
    left_out: tuple[LeftOutWheel, ...] = ()
    wheels: tuple[LockedWheel, ...] | None = None
    digests: dict[str, str] = {}
    taken: Taken | None = None
    made_from = ""
    if spec.requirements is not None:
        locked = options.locked_wheels
        if locked is not None and options.keeping is not None:
            made_from = set_key([(w.file, w.sha256) for w in locked], embed.sha256,
                                recipe.name, recipe.sha256, spec.scan.allow_app_copies)
            # the same wheels made the previous bundle's site-packages: taken again,
            # each file proven, rather than unpacked again (11 s for Paddle's 477 MB)
            taken = take(options.keeping, made_from,
                         options.keeping.bundle / PYTHON_DIR / SITE_PACKAGES, site_packages)
        if taken is not None:
            wheels, digests, left_out = locked, taken.digests, taken.left_out
        else:
            # Resolved for the recipe's platform and the bundle's CPython, not this machine.
            resolve_for = ResolveTarget(recipe.target.python_platform, embed.cpython)
            wheels, digests = install_requirements(spec.requirements, embed, resolve_for,
                                                   site_packages, options.environ,
                                                   options.offline, locked)
            # onnxruntime-gpu[cuda,cudnn], torch: their loaders would map the nvidia-*
            # wheels' DLLs by path beside the bundle's, so the bundle's are the only ones.
            if not spec.scan.allow_app_copies:
                left_out = leave_out_provided(site_packages, recipe)
            digests = {relpath: digest for relpath, digest in digests.items()
                       if (site_packages / relpath).is_file()}
            if options.keeping is not None and wheels is not None:
                made_from = set_key([(w.file, w.sha256) for w in wheels], embed.sha256,
                                    recipe.name, recipe.sha256, spec.scan.allow_app_copies)
    (python / embed.pth_name).write_bytes(pth_text(embed).encode("ascii"))
    launcher = staging / f"{spec.name}.cmd"
    launcher.write_bytes(launcher_text(spec.entry).encode("ascii"))
    keeping = options.keeping
    proven = taken.proven if taken is not None else {}

    def in_place(root: Path) -> None:
        """The bundle is in place: its site-packages recorded for the next pack."""
        if keeping is not None and made_from:
            remember(keeping, made_from, root / PYTHON_DIR / SITE_PACKAGES, digests, proven,
                     left_out)

    prefix = f"{PYTHON_DIR}/{SITE_PACKAGES}/"
    return replace(built, made=(PYTHON_DIR, launcher.name), left_out=left_out,
                   wheels=wheels, digests={prefix + r: d for r, d in digests.items()},
                   in_place=in_place)


def _refuse_taken_names(spec: Spec) -> None:
    """The app folder must leave room for what this builder adds beside it (Windows
    does not tell names apart by case)."""
    assert spec.app_path is not None  # load_spec requires it for this builder
    ours = {PYTHON_DIR: "the bundle's Python", f"{spec.name}.cmd": "the launcher"}
    wanted = {name.casefold(): name for name in ours}
    names = sorted(p.name for p in spec.app_path.iterdir()) if spec.app_path.is_dir() else []
    for name in names:
        if name.casefold() in wanted:
            added = wanted[name.casefold()]
            raise SpecError(f"{spec.app_path / name}: the app folder already has '{name}', "
                            f"where builder = \"embedded-python\" puts {ours[added]} "
                            f"'{added}'", "rename it (or the app, for the launcher)")


def check_embedded_keys(spec: Spec) -> None:
    """What load_spec checks of an embedded-python spec: a CPython bundler knows, and an
    entry the launcher can name (cmd.exe reads it in the console's code page and
    expands %...% even between quotes)."""
    require_app_path(spec)
    if not spec.python:
        known = ", ".join(f'"{python}"' for python in KNOWN)
        raise SpecError(f'{spec.path}: builder = "embedded-python" needs app.python, the '
                        "CPython version to ship", f"add python = \"3.11\" (known: {known})")
    known_embeddable(spec.python, spec.path)
    if not spec.entry:
        raise SpecError(f'{spec.path}: builder = "embedded-python" needs app.entry, the '
                        "script the launcher runs", 'add entry = "main.py"')
    if not spec.entry.isascii() or "%" in spec.entry:
        raise SpecError(f"{spec.path}: app.entry = {spec.entry!r}: the launcher "
                        f"{spec.name}.cmd cannot name it (cmd.exe takes '%' for a variable "
                        "and reads non-ASCII names in the console's code page)",
                        "rename the entry script with ASCII letters, digits, '_', '-', '.'")


def pth_text(embed: Embeddable) -> str:
    """The ._pth file: with it present CPython runs isolated (no PYTHONPATH, no registry,
    no user site-packages) and sys.path is exactly these lines, relative to python.exe's
    folder. The app's folder comes first, as a script's folder does for python.exe;
    `import site` stays on so the wheels' .pth files work (pywin32's, for one)."""
    lines = ["..", f"python{embed.tag}.zip", ".",
             SITE_PACKAGES.replace("/", "\\"),
             "# Written by `bundler pack` (builder = \"embedded-python\").",
             "import site"]
    return "\r\n".join(lines) + "\r\n"


def launcher_text(entry: str) -> str:
    """`<name>.cmd`: the entry with the bundle's own python.exe, wherever the bundle
    lies; every argument passed on (%*), the app's exit code returned."""
    script = entry.replace("/", "\\")
    lines = ["@echo off",
             "rem Written by `bundler pack`: runs the app with the bundle's own Python.",
             f'"%~dp0{PYTHON_DIR}\\python.exe" "%~dp0{script}" %*',
             "exit /b %ERRORLEVEL%"]
    return "\r\n".join(lines) + "\r\n"


BUILDER = Builder("embedded-python", ("path", "entry", "python", "requirements"),
                  check_embedded_keys, build_embedded_python_app)
