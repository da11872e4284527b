"""Small wheels built by tests: the layout, WHEEL and RECORD that pip and NVIDIA use."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Mapping
from pathlib import Path


def record_line(name: str, data: bytes) -> str:
    """A RECORD row: sha256 as urlsafe base64 without padding, then the size."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(folder: Path, members: Mapping[str, bytes], *, name: str, version: str,
               platform: str = "win_amd64", tag_platform: str = "",
               recorded: Mapping[str, bytes] | None = None) -> Path:
    """Write NAME-VERSION-py3-none-PLATFORM.whl holding `members` plus its .dist-info.

    `tag_platform` puts another platform in WHEEL than in the file name (a renamed
    wheel); `recorded` makes RECORD describe other bytes than the members hold.
    """
    dist_info = f"{name}-{version}.dist-info"
    wheel_meta = ("Wheel-Version: 1.0\nGenerator: bundler-tests\nRoot-Is-Purelib: true\n"
                  f"Tag: py3-none-{tag_platform or platform}\n")
    files = {**members, f"{dist_info}/WHEEL": wheel_meta.encode()}
    described = {**files, **(recorded or {})}
    record = "".join(f"{record_line(n, described[n])}\n" for n in files)
    record += f"{dist_info}/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-py3-none-{platform}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in files.items():
            archive.writestr(member, data)
        archive.writestr(f"{dist_info}/RECORD", record)
    return path
