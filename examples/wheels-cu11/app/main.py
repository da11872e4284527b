"""A stand-in inference app: shows which cuDNN it got, and from where.

`bundler pack` adds the bootstrap lines right after this docstring in the bundled
copy, so by the time a framework would load cuDNN the bundled one is already in.
"""

import ctypes
import json
import os
import sys


def main() -> None:
    if os.name != "nt":
        sys.exit("run the bundled app on Windows: dist/cnn-infer-cu11/main.py")
    import _cudnn_bootstrap

    # What a framework does: load cudnn64_8.dll by bare name (PATH is not consulted:
    # the bundled copy is already loaded under that name).
    cudnn = ctypes.WinDLL("cudnn64_8.dll")
    cudnn.cudnnGetVersion.restype = ctypes.c_size_t
    print("cudnnGetVersion() =", cudnn.cudnnGetVersion())
    print(json.dumps(_cudnn_bootstrap.report(), indent=2))


if __name__ == "__main__":
    main()
