"""ocr-server: stands in for a GPU app that a framework loads cuDNN for.

Frozen by `bundler pack`, the exe loads the cuDNN runtime it carries in
_internal/cudnn/, whatever PATH holds: bundler's runtime hook preloaded it
before this script ran.
"""

import ctypes
import json
import sys

import _cudnn_bootstrap  # imported by the runtime hook already; this gives report()


def main() -> int:
    # Like TensorFlow and PaddlePaddle, load cuDNN by its bare name. The name is
    # already loaded, from the bundle, so this returns the bundled copy.
    cudnn = ctypes.WinDLL("cudnn64_8.dll")
    print(f"cuDNN {cudnn.cudnnGetVersion()}")
    print(json.dumps(_cudnn_bootstrap.report(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
