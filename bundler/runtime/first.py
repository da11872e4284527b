"""The bootstrap's first lines: its imports come from the standard library, whatever the
app's folder holds. Python puts the entry script's folder first on sys.path, so a
`json.py` or a `ctypes/` package beside main.py would be what the bootstrap's `import
json` runs, before the bootstrap, with the power to change what it loads. `bundler pack`
ships this first in the bootstrap and puts the bootstrap's imports inside
`with _StandardLibraryFirst():` (pack/emit.py). Standard library only: `sys` is built
into the interpreter, so no file of the app can stand in for it.
"""

import sys


def _key(entry):
    """A sys.path entry compared as a folder: / for \\, no trailing /, in lower case."""
    return entry.replace("\\", "/").rstrip("/").lower() if isinstance(entry, str) else ""


def _standard_folders():
    """The keys of the standard library's folders: the one `encodings` (imported by every
    interpreter as it starts) came from, a zip in the embeddable CPython, and the
    folders of the extension modules (lib-dynload below it; DLLs, or the interpreter's
    own folder in the embeddable CPython, on Windows)."""
    where = _key(getattr(sys.modules.get("encodings"), "__file__", None))
    top = where.rsplit("/", 2)[0] if where.count("/") > 1 else ""
    prefixes = {_key(sys.base_prefix), _key(sys.base_exec_prefix)}
    return {top} | prefixes | {p + "/dlls" for p in prefixes}, top


class _StandardLibraryFirst:
    """While the bootstrap imports, sys.path holds the standard library's folders first
    (the others follow, in their order: nothing is lost); modules of the app already
    imported from a folder ahead of them are set aside. After, sys.path and those
    modules are as they were, and what the app's folder shadows is dropped from
    sys.modules: the app's own `import json` still gets its json.py."""

    def __enter__(self):
        self.path, self.before = sys.path[:], dict(sys.modules)
        if getattr(sys, "frozen", False):  # PyInstaller: no script folder to shadow
            return
        standard, top = _standard_folders()
        self.standard = [s for s in standard if s]
        is_standard = [_key(p) in standard or (top and _key(p).startswith(top + "/"))
                       for p in self.path]
        self.ahead = [p for p in self.path[:is_standard.index(True) if True in is_standard
                                           else 0] if isinstance(p, str)]
        self.set_aside = {name: module for name, module in self.before.items()
                          if self._of_app(getattr(module, "__file__", None))}
        for name in self.set_aside:
            del sys.modules[name]
        sys.path[:] = [p for p, s in zip(self.path, is_standard) if s] + [
            p for p, s in zip(self.path, is_standard) if not s]

    def _of_app(self, file):
        """Whether `file` lies in a folder ahead of the standard library's, and not in
        one of the standard library's (an embedded CPython may live in the app's folder)."""
        key = _key(file)
        return bool(file) and not any(key.startswith(s + "/") for s in self.standard) \
            and any(key.startswith(_key(p or ".") + "/") for p in self.ahead)

    def __exit__(self, *exc):
        new = {name.split(".")[0] for name in sys.modules} - set(self.before)
        finder = sys.modules["_frozen_importlib_external"].PathFinder  # no import
        for name in [n for n in new if getattr(self, "ahead", None)]:
            spec = finder.find_spec(name, self.ahead)  # a folder without code: no shadow
            if spec is not None and spec.origin not in (None, "namespace"):
                for module in [m for m in sys.modules if m.split(".")[0] == name]:
                    del sys.modules[module]
        sys.path[:] = self.path
        sys.modules.update(getattr(self, "set_aside", {}))
