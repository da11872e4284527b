"""Wheels unpacked into the bundle's site-packages by bundler itself (PEP 427), not by
pip: the set is exact already (resolved once for the target, pip_wheels, or named by
the lock), so nothing is left for an installer to decide, and a re-pack starts no
pip process.

What `pip install --target` would leave, for a Windows bundle made on any machine:
each member at its path below site-packages; `<name>.data/purelib|platlib/` there too,
`data/` at the root, `headers/` under `include/python/<name>/`, `scripts/` under `bin/` except
`#!` scripts (pip would rewrite them for this machine's Python: useless on Windows);
no console scripts generated (same reason); no bytecode compiled. The dist-info gets
INSTALLER and a RECORD of what was written (paths, sha256, sizes), so tools that list
or read installed distributions (and one_copy, which reads RECORD) see it as pip's.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from bundler.errors import SourceError

INSTALLER = b"bundler\n"
_CHUNK = 1 << 20


def install_wheels(wheels: list[Path], site_packages: Path) -> dict[str, str]:
    """Unpack each wheel into `site_packages`, in the order given (a later wheel's file
    replaces an earlier one's, as a later pip install would). Returns the sha256 (hex)
    of each file written, by its path below `site_packages`: computed as it was written,
    so the manifest need not read the files again."""
    site_packages.mkdir(parents=True, exist_ok=True)
    digests: dict[str, str] = {}
    for wheel in wheels:
        _install(wheel, site_packages, digests)
    return digests


def _install(wheel: Path, site_packages: Path, digests: dict[str, str]) -> None:
    try:
        with zipfile.ZipFile(wheel) as archive:
            # a member with an empty name (a damaged directory) is no file: zipfile's
            # is_dir() would index it
            members = [info for info in archive.infolist()
                       if info.filename and not info.is_dir()]
            dist_info = _dist_info(wheel, members)
            data = dist_info[: -len(".dist-info")] + ".data"
            project = _project(archive.read(f"{dist_info}/METADATA"), dist_info)
            written: list[tuple[str, str, int]] = []
            for info in members:
                relpath = _placed(info.filename, data, dist_info, project, wheel)
                if relpath is None:
                    continue
                with archive.open(info) as source:
                    head = source.read(2)
                    if relpath.startswith("bin/") and head == b"#!":
                        continue   # a script for this machine's Python
                    digest, size = _write(source, head, site_packages / relpath,
                                          info.external_attr >> 16)
                written.append((relpath, _record_digest(digest), size))
                digests[relpath] = digest.hex()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise SourceError(f"{wheel}: cannot be installed as a wheel ({exc})",
                          "delete it from the wheel cache and pack again: bundler fetches "
                          "it again by the lock's sha256") from None
    digests.update(_finish_dist_info(site_packages / dist_info, dist_info, written))


def _dist_info(wheel: Path, members: list[zipfile.ZipInfo]) -> str:
    found = {PurePosixPath(info.filename).parts[0] for info in members
             if PurePosixPath(info.filename).parts[0].endswith(".dist-info")
             and PurePosixPath(info.filename).name == "METADATA"}
    if len(found) != 1:
        raise SourceError(f"{wheel}: not a wheel (it has {len(found)} .dist-info folders "
                          "with METADATA)", "delete it from the wheel cache and pack again")
    return found.pop()


def _placed(name: str, data: str, dist_info: str, project: str, wheel: Path) -> str | None:
    """Where a member goes, relative to site-packages (None: not installed)."""
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or not path.parts:
        raise SourceError(f"{wheel}: member {name!r} would be written outside "
                          "site-packages", "use a wheel from the project's own index")
    if path.parts[0] == dist_info and path.name in ("RECORD", "INSTALLER"):
        return None   # written anew from what is installed
    if path.parts[0] != data:
        return path.as_posix()
    if len(path.parts) < 3:
        return None
    scheme, rest = path.parts[1], PurePosixPath(*path.parts[2:]).as_posix()
    return {"purelib": rest, "platlib": rest, "data": rest, "scripts": f"bin/{rest}",
            "headers": f"include/python/{project}/{rest}"}.get(scheme)


def _project(metadata: bytes, dist_info: str) -> str:
    """The project's name as METADATA gives it (pip's headers folder is named so)."""
    for line in metadata.decode("utf-8", "replace").splitlines():
        if line.lower().startswith("name:"):
            name = line.split(":", 1)[1].strip()
            # a folder name, never a path (a hostile Name: ../../x)
            return name if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) and \
                ".." not in name else dist_info.split("-")[0]
        if not line:
            break
    return dist_info.split("-")[0]


def _write(source: object, head: bytes, target: Path, mode: int) -> tuple[bytes, int]:
    """The member's bytes to `target` (replacing any file there); their sha256 and size."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.is_file():
        target.unlink()
    digest = hashlib.sha256(head)
    size = len(head)
    with open(target, "xb") as out:
        out.write(head)
        while chunk := source.read(_CHUNK):   # type: ignore[attr-defined]
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)
    if mode & stat.S_IXUSR:
        os.chmod(target, 0o755)
    return digest.digest(), size


def _record_digest(digest: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _finish_dist_info(folder: Path, dist_info: str, written: list[tuple[str, str, int]]
                      ) -> dict[str, str]:
    """INSTALLER and RECORD written; their sha256 (hex) by path below site-packages."""
    installer = folder / "INSTALLER"
    installer.write_bytes(INSTALLER)
    digest = hashlib.sha256(INSTALLER).digest()
    rows = [*written, (f"{dist_info}/INSTALLER", _record_digest(digest), len(INSTALLER))]
    lines = [f"{_csv(path)},{digest},{size}" for path, digest, size in sorted(rows)]
    lines.append(f"{_csv(dist_info + '/RECORD')},,")
    record = ("\n".join(lines) + "\n").encode("utf-8")
    (folder / "RECORD").write_bytes(record)
    return {f"{dist_info}/INSTALLER": digest.hex(),
            f"{dist_info}/RECORD": hashlib.sha256(record).hexdigest()}


def _csv(path: str) -> str:
    return f'"{path}"' if any(c in path for c in ',"\n') else path

