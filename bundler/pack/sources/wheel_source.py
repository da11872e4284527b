"""Wheels: what a PyPI wheel says about itself, checked before its members are used.

NVIDIA publishes its Windows runtime DLLs as wheels (nvidia-cudnn-cu11, ...). A wheel
is a zip, read here in place through archive.ZipArchive (never unpacked whole). Three
facts in it matter:

- its file name, `{distribution}-{version}(-{build})?-{python}-{abi}-{platform}.whl`,
  whose platform tag (e.g. `win_amd64`) says which machine its DLLs are built for;
- `{distribution}-{version}.dist-info/WHEEL`, whose `Tag:` lines say the same from
  inside the file, so a renamed wheel is caught;
- `.dist-info/RECORD`: each member's sha256 (urlsafe base64 without padding), so a
  member altered after the wheel was built is caught even though its zip CRC is fine.
"""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from bundler.errors import SourceError
from bundler.pack.sources.archive_source import ArchiveSource
from bundler.pack.sources.fetch import download_command
from bundler.recipe.model import WHEEL, SourceSpec
from bundler.support.wheel_names import WheelName, normalize, wheel_name
from bundler.support.zip_reader import ZipArchive


@dataclass(frozen=True)
class WheelFacts:
    """What a wheel records about itself: its name, WHEEL tags and RECORD digests."""

    name: WheelName
    dist_info: str
    tag_platforms: tuple[str, ...]
    record: dict[str, str]       # member -> sha256 hex ("" where RECORD gives none)


def parse_wheel_name(path: Path, spec: SourceSpec) -> WheelName:
    name = wheel_name(path.name)
    if name is None:
        raise SourceError(f"{path}: source '{spec.id}' is not named like a wheel "
                          "(NAME-VERSION-PYTHON-ABI-PLATFORM.whl)",
                          f"give the wheel file as pip downloads it: {_command(spec)}")
    return name


def check_name(path: Path, name: WheelName, spec: SourceSpec) -> None:
    """The file name must be the recipe's package, version and platform."""
    if spec.package and (normalize(name.distribution), name.version) != (
            normalize(spec.package), spec.version):
        raise SourceError(f"{path}: source '{spec.id}' is {name.distribution} "
                          f"{name.version}, the recipe needs {spec.package} {spec.version}",
                          f"get the recipe's wheel: {_command(spec)}")
    if spec.platform_tag and spec.platform_tag not in name.platforms:
        raise SourceError(f"{path}: wheel platform tag {'.'.join(name.platforms)} is not "
                          f"{spec.platform_tag}: its DLLs are not built for this recipe's "
                          "platform", f"get the {spec.platform_tag} wheel: {_command(spec)}")


def read_facts(archive: ZipArchive, name: WheelName, spec: SourceSpec) -> WheelFacts:
    """Read WHEEL and RECORD, and check WHEEL's tags agree with the file name."""
    dist_info = _dist_info(archive, name, spec)
    wheel_text = _read_text(archive, f"{dist_info}/WHEEL", spec)
    tags = [line.split(":", 1)[1].strip() for line in wheel_text.splitlines()
            if line.startswith("Tag:")]
    platforms = tuple(p for tag in tags for p in tag.rsplit("-", 1)[-1].split("."))
    if spec.platform_tag and spec.platform_tag not in platforms:
        raise SourceError(f"{archive.path}: {dist_info}/WHEEL tags it "
                          f"{', '.join(tags) or '(no Tag lines)'}, not {spec.platform_tag}: "
                          "the file was renamed from a wheel for another platform",
                          f"get the {spec.platform_tag} wheel: {_command(spec)}")
    record = _parse_record(_read_text(archive, f"{dist_info}/RECORD", spec), archive.path)
    return WheelFacts(name=name, dist_info=dist_info, tag_platforms=platforms, record=record)


def check_recorded(path: Path, facts: WheelFacts, members: list[str], spec: SourceSpec
                   ) -> None:
    """Every member the recipe names must carry a sha256 in RECORD."""
    unrecorded = [m for m in members if not facts.record.get(m)]
    if unrecorded:
        raise SourceError(f"{path}: {', '.join(unrecorded[:4])} "
                          f"{'is' if len(unrecorded) == 1 else 'are'} not in the wheel's "
                          f"RECORD with a sha256 ({facts.dist_info}/RECORD)",
                          f"the wheel was altered or badly built: {_command(spec)}")


def check_member(path: Path, facts: WheelFacts, member: str, sha256: str,
                 spec: SourceSpec) -> None:
    expected = facts.record.get(member, "")
    if sha256 != expected:
        raise SourceError(f"{path}: member {member} does not match the wheel's RECORD "
                          f"(sha256 {sha256}, RECORD says {expected or 'nothing'}): it was "
                          "altered after the wheel was built",
                          f"get the wheel again, as published: {_command(spec)}")


def _dist_info(archive: ZipArchive, name: WheelName, spec: SourceSpec) -> str:
    wanted = normalize(f"{name.distribution}-{name.version}.dist-info")
    folders = {m.split("/", 1)[0] for m in archive.members if m.count("/") == 1
               and m.endswith("/WHEEL")}
    matching = sorted(f for f in folders if normalize(f) == wanted)
    if not matching:
        raise SourceError(f"{archive.path}: the wheel has no "
                          f"{name.distribution}-{name.version}.dist-info/WHEEL",
                          f"this is not a complete wheel: {_command(spec)}")
    return matching[0]


# RECORD, WHEEL and METADATA are read whole; a RECORD of thousands of files is ~1 MiB.
MAX_METADATA_BYTES = 16 << 20


def _read_text(archive: ZipArchive, member: str, spec: SourceSpec) -> str:
    if member not in archive.members:
        raise SourceError(f"{archive.path}: the wheel has no {member}",
                          f"this is not a complete wheel: {_command(spec)}")
    if archive.members[member].size > MAX_METADATA_BYTES:  # read whole: keep it bounded
        raise SourceError(f"{archive.path}: the wheel's {member} is larger than "
                          f"{MAX_METADATA_BYTES >> 20} MiB, so not a wheel's metadata",
                          f"this is not a complete wheel: {_command(spec)}")
    return b"".join(archive.read_chunks(member)).decode("utf-8", "replace")


def _parse_record(text: str, path: Path) -> dict[str, str]:
    record = {}
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        member, digest = row[0], row[1] if len(row) > 1 else ""
        record[member] = _hex_sha256(digest, member, path)
    return record


def _hex_sha256(digest: str, member: str, path: Path) -> str:
    """RECORD's "sha256=<urlsafe base64, no padding>" as hex; "" when absent."""
    algorithm, _, encoded = digest.partition("=")
    if algorithm != "sha256":
        return ""  # none, or another algorithm: check_recorded refuses such a member
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
    except ValueError:
        raise SourceError(f"{path}: RECORD entry of {member} is not valid base64",
                          "the wheel is damaged: download it again") from None
    return raw.hex()


def _command(spec: SourceSpec) -> str:
    return download_command([spec])


class WheelSource(ArchiveSource):
    """A PyPI wheel such as nvidia-cudnn-cu11: a zip that records each member's sha256.

    Before any member is used: the file name and WHEEL must name the recipe's platform
    (and package and version). Each member the pack takes must match RECORD. The wheel
    knowledge lives in wheel.py; this class fits it to the Source interface.
    """

    reads = (WHEEL,)

    def __init__(self, spec: SourceSpec, location: Path, origin: str,
                 takes: Collection[str] = ()) -> None:
        if not location.exists():   # a typo in the path is not a badly named wheel
            raise SourceError(f"{location}: no such file (source '{spec.id}', {origin})",
                              "check the path in [sources] or --source")
        name = parse_wheel_name(location, spec)
        check_name(location, name, spec)
        super().__init__(spec, location, origin, takes)
        try:
            self._facts = read_facts(self._archive, name, spec)
            check_recorded(location, self._facts,
                                 [self._prefix + m for m in self.expected], spec)
        except BaseException:
            self.close()
            raise

    def confirm(self, member: str, sha256: str) -> None:
        check_member(self.location, self._facts, self._prefix + member, sha256,
                           self.spec)

    def member_crc(self, member: str) -> tuple[int, int] | None:
        return None   # RECORD's sha256 (confirm) is stronger evidence, at no extra read

    def _pin_hint(self) -> str:
        return (f"this is not the wheel the recipe pins ({self.origin}): delete it and get "
                f"the published one: {download_command([self.spec])}")
