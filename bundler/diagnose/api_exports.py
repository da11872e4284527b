"""Which cuDNN/CUDA API functions a library defines, whatever its name: how `verify --run`
knows an interposer (a library preloaded under an innocent name that exports
cudnnGetVersion wins the framework's calls) or a renamed copy. The exports themselves
are read by the bundle's platform (an ELF .dynsym, a DLL's export table)."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["API_NAMES", "api_names"]

# cuDNN's and the CUDA libraries' C API: cudnnCreate, cublasSgemm, cudaMalloc, cuInit ...
API_NAMES = re.compile(r"(cudnn|cublas|cufft|curand|cusparse|cusolver|cuda|nvrtc|nvJitLink"
                       r")[A-Z_]|cu[A-Z][a-z]")
_SHOWN = 3


def api_names(names: Iterable[str]) -> tuple[str, ...]:
    """Of a library's exports, the cuDNN/CUDA API's (the first few, sorted)."""
    return tuple(sorted(n for n in set(names) if API_NAMES.match(n)))[:_SHOWN]
