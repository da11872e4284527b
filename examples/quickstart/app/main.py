"""Quickstart app: says which cuDNN it got, and from where.

On Windows, `bundler pack` puts the bootstrap lines above this docstring's
imports in the bundled copy, so by the time this runs the bundled runtime is loaded.
"""

import ctypes
import json
import os
import sys

if os.name != "nt":
    sys.exit("this quickstart app runs on Windows; on this machine, inspect dist/quickstart")

# A bare-name load, as frameworks do: it gets the module the bootstrap preloaded.
cudnn = ctypes.CDLL("cudnn64_8.dll")
cudnn.cudnnGetVersion.restype = ctypes.c_size_t
print(f"cudnnGetVersion() = {cudnn.cudnnGetVersion()}")

import _cudnn_bootstrap  # noqa: E402 - registered by the bootstrap lines

print(json.dumps(_cudnn_bootstrap.report(), indent=2))
