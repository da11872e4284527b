"""What the app scan read from a binary, kept by the binary's sha256 (issue 41).

The app scan reads every binary the app ships for its imports and for the library names
it holds (app_scan, frameworks/loaded_names.py): for the embedded Paddle 2.6.2 app, 71
binaries and 2.0 GB, about 2 s of a one-file edit's re-pack, the same bytes every time.
Where the builder knows a file's sha256 (it computed it as it wrote the file, or proved
it: builders/installed_again.py), what the scan read from those bytes is kept in the
store (`scans/<ab>/<sha256>.json`, sealed, store/seal.py) and taken from there next
time: the import names and the library names the binary holds, raw, before any rule
of what counts (that is applied each time, to the recipes as they are now). A record
is tied to the platform its bytes were read as and to the code that read them (a
change of the readers' source makes every record unused).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bundler.errors import BundlerError
from bundler.pack.store.seal import seal, unseal
from bundler.pack.store.trust import write_record
from bundler.support.json_files import read_json

if TYPE_CHECKING:
    from bundler.pack.store.store import Store

FOLDER = "scans"
_KIND = "scanned-binary"
_MAX_RECORD_BYTES = 4 << 20
_BUNDLER = Path(__file__).resolve().parents[1]
# the code whose reading a record keeps: another version of it may read other names
_READERS = ("frameworks/loaded_names.py", "windows/pe_file.py", "linux/elf_file.py",
            "pack/app_scan.py", "pack/scan_memo.py")


@dataclass(frozen=True)
class Held:
    """What a binary's bytes say: its imports, and (where read) whether it names a
    dynamic loader and the library names it holds."""

    imports: tuple[str, ...]
    names: tuple[bool, tuple[str, ...]] | None


@dataclass(frozen=True)
class ScanMemo:
    store_root: Path
    key: bytes
    digests: Mapping[str, str]   # path relative to the scanned folder -> sha256

    def held(self, relpath: str, platform: str, read: Callable[[bool], Held],
             with_names: bool) -> Held:
        """The record's facts for the file at `relpath` where its sha256 is known and
        recorded (with the names, if `with_names`), else `read(with_names)`'s, kept."""
        sha256 = self.digests.get(relpath)
        if sha256 is None:
            return read(with_names)
        name = f"{platform}/{_code()}/{sha256}"
        known = self._read(sha256, name)
        if known is not None and (known.names is not None or not with_names):
            return known
        fresh = read(with_names)
        self._write(sha256, name, fresh)
        return fresh

    def _read(self, sha256: str, name: str) -> Held | None:
        try:
            body = unseal(self.key, _KIND, name, read_json(
                _path(self.store_root, sha256), _MAX_RECORD_BYTES, BundlerError, ""))
            if not isinstance(body, dict):
                return None
            names = body["names"]
            return Held(tuple(str(i) for i in body["imports"]),
                        None if names is None else (bool(names[0]),
                                                    tuple(str(n) for n in names[1])))
        except (BundlerError, OSError, KeyError, TypeError, ValueError, IndexError):
            return None

    def _write(self, sha256: str, name: str, held: Held) -> None:
        body = {"imports": list(held.imports),
                "names": None if held.names is None else [held.names[0],
                                                          list(held.names[1])]}
        with contextlib.suppress(OSError):
            write_record(_path(self.store_root, sha256), seal(self.key, _KIND, name, body))


def prune(store_root: Path, named: set[str]) -> None:
    """`bundler cache prune`: remove what was read of binaries no record of an installed
    site-packages names any more (builders/installed_again.prune): their bundles are
    gone, and the records would only grow."""
    for path in sorted((store_root / FOLDER).glob("*/*.json")):
        if path.stem not in named:
            with contextlib.suppress(OSError):
                path.unlink()


def memo_of(store: Store | None, digests: Mapping[str, str]) -> ScanMemo | None:
    """The memo of this pack's scan: where the store is, and the builder knew sha256."""
    return ScanMemo(store.root, store.key, digests) if store is not None and digests else None


_CODE: list[str] = []


def _code() -> str:
    if not _CODE:
        digest = hashlib.sha256()
        for relpath in _READERS:
            with contextlib.suppress(OSError):
                digest.update((_BUNDLER / relpath).read_bytes())
        _CODE.append(digest.hexdigest()[:16])
    return _CODE[0]


def _path(store_root: Path, sha256: str) -> Path:
    return store_root / FOLDER / sha256[:2] / f"{sha256}.json"
