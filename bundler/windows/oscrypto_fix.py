"""Let oscrypto 1.3.0 read the version of OpenSSL 3.0.10 and later.

signify (bundler.windows.authenticode) checks signatures through certvalidator and
oscrypto. On Linux oscrypto 1.3.0, its last release (2022), reads libcrypto's version
with the pattern `\\d\\.\\d\\.\\d`, which does not match "3.0.19": importing it fails
with "Error detecting the version of libcrypto" (wbond/oscrypto#78, fixed in oscrypto's
git but never released; ralphje/signify#57). On Windows and macOS oscrypto uses CNG and
the Security framework instead and is not affected.

`install()` puts a loader on `sys.meta_path` that widens exactly that pattern in the two
modules holding it, and only for oscrypto 1.3.0: a fixed release is left alone, and the
loader has nothing to do once upstream ships one (then delete this module).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from importlib import metadata
from types import CodeType, ModuleType

# As written in oscrypto 1.3.0's source (a string literal with doubled backslashes).
_BROKEN = b"'\\\\b(\\\\d\\\\.\\\\d\\\\.\\\\d[a-z]*)\\\\b'"
_FIXED = b"'\\\\b(\\\\d\\\\.\\\\d+\\\\.\\\\d+[a-z]*)\\\\b'"
_AFFECTED_VERSION = "1.3.0"
_MODULES = ("oscrypto._openssl._libcrypto_cffi", "oscrypto._openssl._libcrypto_ctypes")


class _WidenedLoader(importlib.machinery.SourceFileLoader):
    def get_data(self, path: str) -> bytes:
        data = super().get_data(path)
        return data.replace(_BROKEN, _FIXED) if path.endswith(".py") else data

    def get_code(self, fullname: str) -> CodeType:
        # Compile from the widened source: the cached .pyc holds the original.
        path = self.get_filename(fullname)
        return compile(self.get_data(path), path, "exec", dont_inherit=True)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _MODULES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            return None
        return importlib.util.spec_from_file_location(
            fullname, spec.origin, loader=_WidenedLoader(fullname, spec.origin))


def needed() -> bool:
    """True where oscrypto's OpenSSL backend is used and is the affected release."""
    if sys.platform in ("win32", "darwin"):
        return False
    try:
        return metadata.version("oscrypto") == _AFFECTED_VERSION
    except metadata.PackageNotFoundError:
        return False


def install() -> None:
    """Call before anything imports oscrypto; does nothing where it is not needed."""
    if needed() and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
