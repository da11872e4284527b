"""Channels: the ways NVIDIA ships a cuDNN release, told apart by layout, not by name.

- a PyPI wheel (`nvidia/cudnn/bin/*.dll`, with a `.dist-info/`);
- a legacy zip (cuDNN 7 and early 8: top folder `cuda/`, DLLs in `cuda/bin/`), under
  NVIDIA's name (`cudnn-10.1-windows10-x64-v8.0.3.33.zip`) or a mirror's;
- a redist archive (`cudnn-windows-x86_64-<ver>_cuda<major>-archive/bin/`);
- the folder the cuDNN 9 installer creates (`CUDNN/v9.x/bin/<CUDA major.minor>/`), or
  any folder with the DLLs in `bin/` (an unpacked zip).

`detect()` reads only a zip's directory or a folder's listing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from bundler.errors import SourceError
from bundler.support.zip_reader import ZipArchive

# Licence files NVIDIA's archives and installer carry, in the order looked for.
LICENCE_NAMES = ("LICENSE", "LICENSE.txt", "NVIDIA_SLA_cuDNN_Support.txt")


@dataclass(frozen=True)
class Channel:
    """Where a release's DLLs sit in one input, in recipe-source terms."""

    name: str           # what the pack summary calls it: "PyPI wheel", "redist archive", ...
    kind: str           # the recipe source kind: "wheel", "archive" or "folder"
    prefix: str         # the DLLs' folder (below root), with a trailing "/"
    root: str = ""      # the zip's top folder the members are named below
    licence: str = ""   # the licence member (below root), "" if none
    file_name: str = ""
    sha256: str = ""
    pin_source: str = ""   # who published the sha256


def detect(path: Path, major: int) -> Channel:
    """The channel of an input holding cuDNN <major>, from its layout."""
    shim = f"cudnn64_{major}.dll"
    if path.is_dir():
        return _folder(path, shim)
    with ZipArchive(path) as archive:
        names = list(archive.members)
    return _zip(path, names, shim)


def _zip(path: Path, names: list[str], shim: str) -> Channel:
    if any(n.count("/") == 1 and n.endswith(".dist-info/WHEEL") for n in names):
        return Channel("PyPI wheel", "wheel", "nvidia/cudnn/bin/", file_name=path.name)
    found = [n for n in names if n.rsplit("/", 1)[-1].lower() == shim]
    for member in found:
        top, _, below = member.partition("/")
        # Redist archives keep the DLLs in bin/, or (CUDA 13 builds, 9.26 on) bin/x64/.
        if below.rsplit("/", 1)[0] in ("bin", "bin/x64"):
            name = "legacy zip" if top == "cuda" else "redist archive"
            licence = next((n for n in LICENCE_NAMES if f"{top}/{n}" in names), "")
            return Channel(name, "archive", below.rsplit("/", 1)[0] + "/", root=top,
                           licence=licence, file_name=path.name)
    raise SourceError(f"{path}: not a cuDNN archive in a layout NVIDIA ships: no "
                      f"cuda/bin/{shim} or <folder>/bin/{shim}"
                      + (f" (found {found[0]})" if found else ""),
                      "give NVIDIA's zip as downloaded, its wheel, or the installer's folder")


def _folder(path: Path, shim: str) -> Channel:
    licence = next((n for n in LICENCE_NAMES if (path / n).is_file()), "")
    for prefix in ("bin/", "cuda/bin/"):
        if (path / prefix / shim).is_file():
            return Channel("folder", "folder", prefix,
                           licence=licence if prefix == "bin/" else "")
    # The installer keeps one build per CUDA: bin/11.8/, bin/12.6/ (bin/12.9/x64/ from
    # 9.18 on); pick_cuda() narrows it to the release's CUDA.
    builds = sorted(f"{d.relative_to(path / 'bin').as_posix()}/"
                    for d in (*(path / "bin").glob("*"), *(path / "bin").glob("*/x64"))
                    if (d / shim).is_file()) if (path / "bin").is_dir() else []
    if builds:
        return Channel("installer folder", "folder", f"bin/{builds[-1]}", licence=licence,
                       file_name=",".join(builds))
    raise SourceError(f"{path}: no {shim} in bin/, bin/<CUDA version>/ or cuda/bin/",
                      "give the folder that holds bin/ (the cuDNN installer's "
                      "CUDNN/v9.x folder, or an unpacked archive)")


def pick_cuda(channel: Channel, cuda: str) -> Channel:
    """An installer folder's build for CUDA `cuda` ("12" or "10.1")."""
    if channel.name != "installer folder":
        return channel
    builds = channel.file_name.split(",")
    matching = [b for b in builds if b.startswith((f"{cuda}/", f"{cuda}."))]
    if not matching:
        listed = ", ".join(b.split("/")[0] for b in builds)
        raise SourceError(f"the installer folder has cuDNN builds for CUDA {listed}, none "
                          f"for CUDA {cuda}",
                          f"install cuDNN's CUDA {cuda} build, or name the release for "
                          "the CUDA it has")
    return replace(channel, prefix=f"bin/{matching[-1]}", file_name="")
