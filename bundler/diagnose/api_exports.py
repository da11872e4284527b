"""Which cuDNN/CUDA API functions a library defines, whatever its name: how `verify --run`
knows an interposer (a library preloaded under an innocent name that exports
cudnnGetVersion wins the framework's calls) or a renamed copy. The exports are read by
the bundle's platform (an ELF .dynsym, a DLL's export table)."""

from __future__ import annotations

import re
from pathlib import Path

from bundler.errors import BundlerError
from bundler.targets.registry import Platform

__all__ = ["API_NAMES", "api_exports"]

# cuDNN's and the CUDA libraries' C API: cudnnCreate, cublasSgemm, cudaMalloc, cuInit ...
API_NAMES = re.compile(r"(cudnn|cublas|cufft|curand|cusparse|cusolver|cuda|nvrtc|nvJitLink"
                       r")[A-Z_]|cu[A-Z][a-z]")
_SHOWN = 3


def api_exports(path: str, platform: Platform) -> tuple[str, ...]:
    """The cuDNN/CUDA API functions `path` defines (the first few, sorted); () for none,
    or a file that is not a library of the platform."""
    try:
        if not platform.is_library_file(Path(path)):
            return ()
        names = platform.read_library(Path(path), exports=True).exports
    except (OSError, ValueError, BundlerError):
        return ()
    return tuple(sorted(n for n in set(names) if API_NAMES.match(n)))[:_SHOWN]
