"""Wheel file names and distribution names, as the wheel specification spells them."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAME = re.compile(r"^(?P<dist>[^-]+)-(?P<version>[^-]+)(?:-(?P<build>\d[^-]*))?"
                   r"-(?P<python>[^-]+)-(?P<abi>[^-]+)-(?P<platform>[^-]+)\.whl$")


@dataclass(frozen=True)
class WheelName:
    distribution: str
    version: str
    platforms: tuple[str, ...]   # a compressed tag set: "a.b" is two platforms


def normalize(name: str) -> str:
    """Compare distribution names as the wheel spec does: case and -_. runs ignored."""
    return re.sub(r"[-_.]+", "_", name).lower()


def wheel_name(file_name: str) -> WheelName | None:
    """What a wheel's file name says, or None if it is not named like a wheel."""
    found = _NAME.match(file_name)
    if not found:
        return None
    return WheelName(distribution=found["dist"], version=found["version"],
                     platforms=tuple(found["platform"].split(".")))
