"""The bootstrap's Linux loader: `bundler pack` puts it into the bootstrap it ships for a
linux-x86_64 recipe, after rules.py and common.py and before activation.py
(pack/emit.py). Standard library only; importing it loads nothing.

A library is known by its SONAME and its file, not by its file name: a copy of cuDNN
reached through `libcudnn.so.9 -> libcudnn.so.9.1.0` is mapped as libcudnn.so.9.1.0, yet
glibc hands it to every later dlopen("libcudnn.so.9"). So before loading a bundled file
the bootstrap asks glibc what a dlopen of its name would return now (RTLD_NOLOAD), and
after loading it, what a dlopen of the SONAME it declares returns: another file (by
st_dev and st_ino) stops the app, as on Windows (docs/bootstrap.md).
"""

import ctypes
import os

# >>> not shipped: in the shipped bootstrap these come from the pieces before this one
from .common import _REPACK, BundledRuntimeError, another_copy, app_folder
from .rules import glibc_problem

# <<< not shipped

_DT_NULL, _DT_STRTAB, _DT_SONAME, _RTLD_DI_LINKMAP = 0, 5, 14, 2


def _mapped_libraries():
    """{file name: path} of every file mapped in this process (/proc/self/maps)."""
    return {os.path.basename(path): path for path in reversed(_mapped_files())}


def _mapped_files():
    """Every file mapped in this process, each once, in the order of its first mapping."""
    with open("/proc/self/maps") as maps:
        paths = [f[5].strip() for f in (line.split(None, 5) for line in maps) if len(f) == 6]
    return list(dict.fromkeys(path for path in paths if path.startswith("/")))


def _link_map(handle):
    """glibc's struct link_map of a dlopen handle: its l_addr, l_name and l_ld."""

    class LinkMap(ctypes.Structure):
        _fields_ = [("addr", ctypes.c_size_t), ("name", ctypes.c_char_p), ("ld", ctypes.c_void_p)]
    found = ctypes.POINTER(LinkMap)()
    try:
        dlinfo = ctypes.CDLL(None).dlinfo  # in libc from glibc 2.34, before in libdl
    except AttributeError:
        dlinfo = ctypes.CDLL("libdl.so.2").dlinfo
    if dlinfo(ctypes.c_void_p(handle), _RTLD_DI_LINKMAP, ctypes.byref(found)) != 0:
        return None
    return found.contents


def loaded_as(name):
    """The file (its real path) a dlopen of `name` returns now, without loading one: the
    copy glibc holds under that name or SONAME; "" when none is loaded."""
    try:
        handle = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)._handle
    except OSError:
        return ""
    found = _link_map(handle)
    return os.path.realpath(os.fsdecode(found.name)) if found and found.name else ""


def _soname(handle):
    """The SONAME a loaded library declares, from its dynamic section in memory."""
    found = _link_map(handle)
    if not found or not found.ld:
        return ""
    entries = ctypes.cast(found.ld, ctypes.POINTER(ctypes.c_int64 * 2))
    table, index, strings, offset = {}, 0, 0, None
    while entries[index][0] != _DT_NULL:
        table[entries[index][0]] = entries[index][1]
        index += 1
    strings, offset = table.get(_DT_STRTAB, 0), table.get(_DT_SONAME)
    if not strings or offset is None:
        return ""
    # glibc relocates the dynamic section's addresses where it may write it (x86-64).
    strings = strings if strings >= found.addr else strings + found.addr
    return os.fsdecode(ctypes.string_at(strings + offset))


def same_library_file(a, b):
    """Whether two paths name one file: the same device and inode (links followed)."""
    try:
        first, second = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _refuse_other(name, path):
    """Stop the app when what a dlopen of `name` returns now is not the bundled `path`."""
    existing = loaded_as(name)
    if existing and not same_library_file(existing, path):
        raise another_copy(name, existing, path)


def probe_libcuda():
    """probe_driver on Linux: libcuda.so.1 by SONAME, as the CUDA runtime loads it."""
    try:
        get_version = ctypes.CDLL("libcuda.so.1").cuDriverGetVersion
    except (OSError, AttributeError) as exc:
        return "", 0, "", f"libcuda.so.1 cannot be loaded: {exc}"
    version = ctypes.c_int(0)
    result = get_version(ctypes.byref(version))
    path = next((p for n, p in _mapped_libraries().items() if n.startswith("libcuda.so")), "")
    return path or "libcuda.so.1", version.value, "", (
        f"cuDriverGetVersion failed (CUresult {result})" if result else "")


def runs_here():
    """Whether this Python can make the calls below: dlopen's RTLD_NOLOAD and the
    process's /proc/self/maps (Linux)."""
    return hasattr(os, "RTLD_NOLOAD") and os.path.exists("/proc/self/maps")


def _activate_linux(manifest, check_driver):
    """Load `manifest`'s libraries; the [(relpath, path, handle)] loaded, None for a
    bundle of another platform."""
    if not str(manifest.get("platform", "")).startswith("linux"):
        return None  # a Windows bundle run here: none of its files can load
    problem = glibc_problem(manifest.get("versions", {}).get("min_glibc", ""))
    if problem:
        raise BundledRuntimeError(problem)
    check_driver()
    loaded = []
    for relpath in manifest.get("load_order", []):
        path = os.path.join(app_folder(), *relpath.split("/"))
        _refuse_other(os.path.basename(relpath), path)
        try:
            handle = ctypes.CDLL(path, mode=os.RTLD_GLOBAL | os.RTLD_NOW)
        except OSError as exc:  # the message names the file, or what it needs
            gone = "is missing" if not os.path.isfile(path) else f"cannot be loaded ({exc})"
            raise BundledRuntimeError(
                f"bundled runtime file {relpath} ({path}) {gone}: {_REPACK}") from None
        # By the SONAME it declares, which may not be its file name: what cuDNN's and
        # the frameworks' dlopen by SONAME will get.
        _refuse_other(_soname(handle._handle) or os.path.basename(relpath), path)
        loaded.append((relpath, path, handle))
    return loaded


def _loaded_from(loaded):
    """{relpath: the file a dlopen by its SONAME gets now}, for report()."""
    return {rel: loaded_as(_soname(h._handle) or os.path.basename(p)) for rel, p, h in loaded}


LOADER = {"runs_here": runs_here, "load": _activate_linux, "probe": probe_libcuda,
          "loaded_from": _loaded_from, "modules": _mapped_files}
