"""The pinned test world (pins.toml): what each download must be, and the check."""

from __future__ import annotations

import functools
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the project supports 3.9
    import tomli as tomllib

PINS_FILE = Path(__file__).resolve().with_name("pins.toml")


@dataclass(frozen=True)
class Pin:
    package: str
    version: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


class PinMismatch(RuntimeError):
    """A download is not the file pins.toml names."""


@functools.cache
def _table() -> dict:
    return tomllib.loads(PINS_FILE.read_text(encoding="utf-8"))


def embed_pin() -> Pin:
    embed = _table()["embed"]
    return Pin(embed["package"], embed["version"], embed["sha256"])


def wheel_pins() -> tuple[Pin, ...]:
    return tuple(Pin(name, pin["version"], pin["sha256"])
                 for name, pin in _table()["wheels"].items())


def nvidia_pin(package: str) -> Pin:
    pin = _table()["nvidia"][package]
    return Pin(package, pin["version"], pin["sha256"])


def linux_pins() -> dict[str, tuple[Pin, str]]:
    """NVIDIA's manylinux wheels the Linux tests load: package -> (pin, platform tag)."""
    return {name: (Pin(name, pin["version"], pin["sha256"]), pin["platform"])
            for name, pin in _table()["linux"].items()}


def embedded_pin(package: str) -> Pin:
    """A wheel an embedded-python test app requires (installed for win_amd64, cp311)."""
    pin = _table()["embedded"][package]
    return Pin(package, pin["version"], pin["sha256"])


def framework_pin(package: str) -> Pin:
    pin = _table()["frameworks"][package]
    return Pin(package, pin["version"], pin["sha256"])


def check_download(path: Path, pin: Pin) -> None:
    """Raise PinMismatch unless `path` has the pinned sha256."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pin.sha256:
        raise PinMismatch(f"{path.name} ({pin.requirement}) has sha256 {digest}, but "
                          f"{PINS_FILE} pins {pin.sha256}: the download is not the pinned "
                          "file (republished, or the pin is out of date)")
