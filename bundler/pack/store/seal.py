"""The store's seal: what a store writer who is not this user cannot forge.

The store is a cache other hands can reach: a CI cache restored from another branch, a
folder on a shared disk. Its objects prove themselves (each is named by its sha256 and
re-hashed whenever it is taken), but its records — which input holds which object, and
which object passed which signature check — are claims. Each record is therefore sealed
with an HMAC-SHA256 under a key that lives outside the store: `$BUNDLER_STORE_KEY` (64
hex digits: a CI secret that untrusted branches do not get), else a key file this user's
first pack creates in the platform's configuration folder (mode 0600). A record whose
seal does not verify is treated as absent: the input is read again, and the record
rewritten. docs/store.md lists what this does and does not protect.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from bundler.errors import BundlerError
from bundler.pack.store.trust import check_key_file, make_folder
from bundler.support.regular_files import NOT_REGULAR, NotARegularFile, open_regular
from bundler.support.user_dirs import user_config_dir

KEY_VARIABLE = "BUNDLER_STORE_KEY"
KEY_FILE = "store-key"
_KEY_BYTES = 32
_MAX_KEY_FILE_BYTES = 4096   # a key is 64 hex digits; room for a longer one and spaces


class StoreKeyError(BundlerError):
    """The store's key cannot be had: the store is then not used."""


def store_key(environ: Mapping[str, str]) -> bytes:
    """The key the store's records are sealed with (see the module's text)."""
    given = environ.get(KEY_VARIABLE, "")
    if given:
        key = _key_bytes(given)
        if not key:
            raise StoreKeyError(f"${KEY_VARIABLE} is not {2 * _KEY_BYTES} or more hex digits",
                                f"generate one: python3 -c \"import secrets; "
                                f"print(secrets.token_hex({_KEY_BYTES}))\"")
        return key
    return _key_file(user_config_dir(environ) / KEY_FILE)


def _key_file(path: Path) -> bytes:
    try:
        return _read_key(path)
    except FileNotFoundError:
        if path.is_symlink():   # dangling: creating through it would write elsewhere
            raise StoreKeyError(f"{path}: the runtime store's key is a link to nothing",
                                f"delete it (a new one is made), or set ${KEY_VARIABLE}"
                                ) from None
    try:
        make_folder(path.parent, 0o700)   # the key's folder: this user's alone
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(secrets.token_hex(_KEY_BYTES) + "\n")
    except FileExistsError:
        pass   # another pack created it first: read that one
    except OSError as exc:
        raise StoreKeyError(f"{path}: cannot create the runtime store's key ({exc.strerror})",
                            f"make the folder writable, or set ${KEY_VARIABLE}") from None
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    # Opened without blocking and read bounded: a named pipe or a link to /dev/zero put
    # where the key should be must not hang every pack, nor fill the memory.
    try:
        with open_regular(path) as handle:
            shared = check_key_file(path, handle.fileno())
            text = handle.read(_MAX_KEY_FILE_BYTES + 1).decode("ascii", "replace").strip()
    except FileNotFoundError:
        raise   # the caller makes the key
    except NotARegularFile:
        raise StoreKeyError(f"{path}: the runtime store's key is {NOT_REGULAR}",
                            f"delete it (a new one is made), or set ${KEY_VARIABLE}"
                            ) from None
    except OSError as exc:
        raise StoreKeyError(f"{path}: cannot read the runtime store's key ({exc.strerror})",
                            f"fix its permissions, or set ${KEY_VARIABLE}") from None
    if shared:   # whoever could read it can forge the store's records: not used
        raise StoreKeyError(f"{path}: the runtime store's key is {shared}: not used",
                            f"delete it (a new one is made, readable by you only; the "
                            f"store's records are then read again from the inputs), or "
                            f"set ${KEY_VARIABLE}")
    key = _key_bytes(text) if len(text) <= _MAX_KEY_FILE_BYTES else b""
    if not key:
        raise StoreKeyError(f"{path}: not a runtime store key",
                            "delete it (a new one is made; the store's records are then "
                            "read again from the inputs)")
    return key


def _key_bytes(text: str) -> bytes:
    """The key hex digits spell, or b"" when they are not hex or too few."""
    try:
        key = bytes.fromhex(text)
    except ValueError:
        return b""
    return key if len(key) >= _KEY_BYTES else b""


def seal(key: bytes, kind: str, name: str, body: object) -> dict[str, object]:
    """The record as written: its body and the seal over (kind, name, body), so a record
    cannot be moved to another name (another input's fingerprint, another sha256)."""
    return {"body": body, "seal": _mac(key, kind, name, body)}


def unseal(key: bytes, kind: str, name: str, record: object) -> object | None:
    """The body of a record whose seal verifies; None for anything else."""
    if not isinstance(record, dict) or set(record) != {"body", "seal"}:
        return None
    given = record["seal"]
    if not isinstance(given, str):
        return None
    return record["body"] if hmac.compare_digest(given, _mac(key, kind, name,
                                                             record["body"])) else None


def _mac(key: bytes, kind: str, name: str, body: object) -> str:
    canonical = json.dumps([kind, name, body], sort_keys=True, separators=(",", ":"))
    return hmac.new(key, canonical.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
