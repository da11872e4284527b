"""Channels: the ways NVIDIA ships a cuDNN release, told apart by layout, not by name.

- a PyPI wheel (`nvidia/cudnn/bin/*.dll`, with a `.dist-info/`);
- a legacy zip (cuDNN 7 and early 8: top folder `cuda/`, DLLs in `cuda/bin/`), under
  NVIDIA's name (`cudnn-10.1-windows10-x64-v8.0.3.33.zip`) or a mirror's;
- a redist archive (`cudnn-windows-x86_64-<ver>_cuda<major>-archive/bin/`);
- the folder the cuDNN 9 installer creates (`CUDNN/v9.x/bin/<CUDA major.minor>/`), or
  any folder with the DLLs in `bin/` (an unpacked zip).

On Linux (`detect(..., "linux-x64")`) the libraries are `.so` files named by the
platform (`libcudnn.so.9`): a PyPI wheel (`nvidia/cudnn/lib/`), a site-packages that pip
installed NVIDIA's wheels into or an unpacked wheel (`nvidia/cudnn/lib/`, its
`.dist-info` telling the version), an unpacked NVIDIA tarball (`lib/`, where
`libcudnn.so.<version>` tells it) or the folder of the libraries itself.

`detect()` reads only a zip's directory or a folder's listing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bundler.errors import SourceError
from bundler.support.zip_reader import ZipArchive
from bundler.targets.registry import platform_for_release

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
    version: str = ""      # the cuDNN version the input says it holds ("" if it does not)


def detect(path: Path, major: int, platform: str) -> Channel:
    """The channel of an input holding cuDNN <major> for `platform` (a release name's
    tail), from its layout: NVIDIA ships each platform's files in layouts of its own
    (`_LAYOUTS`), so the release's platform picks the readers, not a trait of its OS."""
    target = platform_for_release(platform)
    readers = _LAYOUTS.get(platform)
    if target is None or readers is None:
        raise SourceError(f"{path}: no platform's releases end in {platform!r}",
                          f"name a release for {' or '.join(_LAYOUTS)}")
    shim = target.library_file("cudnn", str(major))   # cudnn64_9.dll, libcudnn.so.9
    read_folder, read_zip = readers
    return read_folder(path, shim) if path.is_dir() else read_zip(path, shim)


def _windows_zip(path: Path, shim: str) -> Channel:
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


_LINUX_WHEEL_DIR = "nvidia/cudnn/lib/"


def _linux_zip(path: Path, shim: str) -> Channel:
    with ZipArchive(path) as archive:
        names = set(archive.members)
    if any(n.count("/") == 1 and n.endswith(".dist-info/WHEEL") for n in names) and \
            f"{_LINUX_WHEEL_DIR}{shim}" in names:
        return Channel("PyPI wheel", "wheel", _LINUX_WHEEL_DIR, file_name=path.name)
    raise SourceError(f"{path}: not one of NVIDIA's cuDNN wheels for Linux: no "
                      f"{_LINUX_WHEEL_DIR}{shim} beside a .dist-info/WHEEL",
                      "give NVIDIA's manylinux wheel as pip downloads it, the site-packages "
                      "pip installed it into, or the folder of an unpacked NVIDIA tarball "
                      "(bundler reads zips, not .tar.xz)")


def _linux_folder(path: Path, shim: str) -> Channel:
    if (path / _LINUX_WHEEL_DIR / shim).is_file():
        infos = sorted(path.glob("nvidia_cudnn_cu*.dist-info"))
        licence = next((f"{i.name}/licenses/License.txt" for i in infos
                        if (i / "licenses" / "License.txt").is_file()), "")
        # pip installs one nvidia-cudnn-cuNN per site-packages folder: its version is
        # what nvidia/cudnn/lib holds.
        version = infos[0].name.removesuffix(".dist-info").split("-")[1] \
            if len(infos) == 1 else ""
        return Channel("installed wheel", "folder", _LINUX_WHEEL_DIR,
                       licence=licence if len(infos) == 1 else "", version=version)
    for prefix in ("lib/", ""):
        if (path / prefix / shim).is_file():
            # An NVIDIA tarball's lib/ holds libcudnn.so.9.19.0 beside the libcudnn.so.9 link.
            stem = shim.rsplit(".", 1)[0] + "."   # libcudnn.so.
            versions = sorted(p.name.removeprefix(stem) for p in
                              (path / prefix).glob(f"{shim}.*"))
            licence = "LICENSE" if prefix and (path / "LICENSE").is_file() else ""
            return Channel("folder", "folder", prefix, licence=licence,
                           version=versions[-1] if len(versions) == 1 else "")
    raise SourceError(f"{path}: no {_LINUX_WHEEL_DIR}{shim}, lib/{shim} or {shim}",
                      "give the site-packages folder NVIDIA's wheels were installed into "
                      "(pip install nvidia-cudnn-cuNN), an unpacked wheel or NVIDIA "
                      "tarball, or the folder holding the libraries")


# How NVIDIA lays out each platform's cuDNN inputs: (a folder's reader, a zip's reader),
# by release-name tail.
_LAYOUTS: dict[str, tuple[Callable[[Path, str], Channel], Callable[[Path, str], Channel]]] = {
    "win-x64": (_folder, _windows_zip),
    "linux-x64": (_linux_folder, _linux_zip),
}


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
