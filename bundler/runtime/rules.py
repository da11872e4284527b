"""The bootstrap's rules that `bundler doctor` applies too, so a bundled app at start-up
and doctor give the same answer: the driver judgement, the glibc check, the same-file
test, and the switches `bundler verify --run` sets. Standard library only, no state:
`bundler pack` puts it into every bootstrap it ships (pack/emit.py), and bundler itself
imports it as a plain module (importing it activates nothing).
"""

import os

# Set by `bundler verify --run` (docs/diagnosing.md): a folder where each process writes
# what it mapped, as it exits; with IMPORT_ONLY also set, the app stops after the loads.
PROCESS_REPORT = "BUNDLER_PROCESS_REPORT"
IMPORT_ONLY = "BUNDLER_IMPORT_ONLY"


def cuda_text(number):
    """10010 -> "10.1": the encoding of cuDriverGetVersion and CUDA_VERSION."""
    return f"{number // 1000}.{number % 1000 // 10}" if number else "none"


def driver_from_file_version(file_version):
    """NVIDIA's driver number from nvcuda.dll's Windows file version: the last five
    digits of its last two fields, e.g. 26.21.14.4166 -> 441.66; "" if not one."""
    parts = file_version.split(".")
    if len(parts) != 4 or not all(p.isdigit() for p in parts):
        return ""
    digits = (parts[2] + parts[3].zfill(4))[-5:]
    return f"{int(digits[:3])}.{digits[3:]}"


def driver_older(version, minimum):
    """Whether driver `version` ("516.01") is older than `minimum` ("520.06")."""
    def numbers(text):
        return tuple(int(part) for part in text.split(".") if part.isdigit())
    return numbers(version) < numbers(minimum)


def cuda_needed(cuda):
    """The cuDriverGetVersion of a driver that supports CUDA "10.1": 10010 ("11": 11000)."""
    parts = cuda.split(".") + [""]  # "12.9.1", an update, needs what 12.9 needs
    return int(parts[0]) * 1000 + int(parts[1] or 0) * 10


def runs_on(version, supported, cuda, oldest, minor_compatible):
    """Whether a driver runs CUDA `cuda` (oldest driver: `oldest`): by its `version`
    ("516.01") when known, else by cuDriverGetVersion `supported`: that CUDA, or its major
    when `minor_compatible` (CUDA 11 on). They agree: a driver reports the newest CUDA
    whose minimum driver it meets."""
    if version and oldest:
        return not driver_older(version, oldest)
    return supported >= cuda_needed(cuda.partition(".")[0] if minor_compatible else cuda)


def judge_driver(versions, path, supported, file_version, error):
    """A dict of what was found; "problem" is "" when the runtime can run (the driver >=
    min_driver_compat where given, else >= min_driver), "note" when between the two."""
    version = driver_from_file_version(file_version)
    cuda, min_driver = versions.get("cuda", "0"), versions.get("min_driver", "")
    compat = versions.get("min_driver_compat", "")
    oldest = compat or min_driver
    found = {"nvcuda": path, "driver_version": version, "driver_cuda": cuda_text(supported),
             "needs_cuda": cuda, "min_driver": min_driver, "min_driver_compat": compat,
             "problem": "", "note": ""}
    wanted = f"this app's CUDA {cuda} runtime needs an NVIDIA driver >= {oldest}" + (
        f" (>= {min_driver} for all of its features)" if compat else "")
    named = f"the NVIDIA driver {path}" + (f" (version {version})" if version else "")
    if not path:
        found["problem"] = (f"no NVIDIA driver found ({error}); {wanted}: install it, or "
                            "the GPU cannot be used")
    elif error:
        found["problem"] = f"{named} is unusable ({error}); {wanted}"
    elif not runs_on(version, supported, cuda, oldest, bool(compat)):
        found["problem"] = (f"{named} supports CUDA {cuda_text(supported)} (cuDriverGetVersion "
                            f"{supported}), but {wanted}: update the NVIDIA driver")
    elif version and driver_older(version, min_driver):
        found["note"] = (f"{named} is older than {min_driver}, the driver of CUDA {cuda}: this "
                         "app's runtime runs under CUDA minor-version compatibility, without "
                         "what needs the newer driver (such as JIT compilation of newer PTX)")
    return found


def glibc_problem(needed, found=""):
    """Why glibc `found` (default: this machine's) cannot run libraries needing `needed`."""
    found = found or os.confstr("CS_GNU_LIBC_VERSION").split(" ")[-1]  # "glibc 2.39"
    return (f"this app's bundled CUDA runtime needs glibc >= {needed} (GLIBC_{needed} "
            f"symbols); this machine has glibc {found}: run it on a newer Linux"
            ) if needed and driver_older(found, needed) else ""


def same_file(a, b):
    """Whether two paths name one file, as Windows compares them (case-insensitive)."""
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))
