"""What a GPU framework installed in an app says it needs: one rule for pack, init and doctor.

Frameworks ship the figures they were built with, as Python files generated at build time.
These are read with `ast` (the app's code is never imported or run):

- paddlepaddle-gpu: `paddle/version/__init__.py` (`cuda_version = '11.8'`,
  `cudnn_version = '8.6.0'`; 'False' in a CPU build);
- tensorflow, tensorflow-gpu: `tensorflow/python/platform/build_info.py` (its
  `build_info` table: `cuda_version '64_112'`, `cudnn_version '64_8'`, `cudnn_dll_name`,
  `is_cuda_build`; its `cudart_dll_name` 'cudart64_112.dll' is not what the binary loads);
- onnxruntime-gpu: `onnxruntime/capi/version_info.py` (`use_cuda`, `cuda_version =
  "12.2.128"`, `cudnn_version = "9"`);
- cupy-cuda*: `cupy/.data/_wheel.json`, JSON (`"cuda": "12.x"`, `"cudnn": {"version":
  "8.8.1", ...}`);
- torch: `torch/version.py` (`cuda = '12.1'`; torch ships its own cuDNN: only recorded).

The driver table's framework row (`Platform.driver_table()`, bundler/windows/compat.toml)
adds what no file says (TensorFlow >= 2.5 needs cuDNN >= 8.1; its GPU check loads eight
libraries). A file that exists but cannot be read is reported (`FrameworkFacts.unreadable`),
never taken as "no needs": one that is not a regular file (a FIFO, a link to /dev/zero, a
folder, a dangling link), is over 1 MiB, is not UTF-8 Python (or JSON), or is not the plain
literals these generated files hold (a top-level `x = f(5)`, an `if`, a loop: what the
file would compute cannot be known without running it).

The API (pack's app scan, `bundler init` and `bundler doctor` call it):

- `read_frameworks(root, folders, table)`: the `FrameworkFacts` of every framework
  bundler knows installed in `folders` (site-packages folders inside the app folder
  `root`; `table` is the target platform's `driver_table()`); `frameworks_in(root,
  table)` finds those folders itself;
- `fits(facts, cuda, cudnn) -> str | None`: None when a runtime of that CUDA ("12",
  "11.8", "10.1") and cuDNN ("9.1.0.70") version serves the framework, else the reason,
  naming the framework, the file (or table row) that says so and the minimum;
- `fitting_releases(frameworks, platform_suffix)`: the releases that serve them all;
- `refuse_unfit(frameworks, runtime, cuda, cudnn, platform_suffix)`: pack's refusal (exit
  2) of a runtime that does not serve a framework, or of a build-info file it cannot read,
  naming the framework, the file, the minimum and releases that fit.

The rule: the cuDNN major must be the framework's (cudnn64_8 is not cudnn64_9) and the
version at least the framework's own (as precise as the file says: "8.6.0", or "8" for any
8.x); the CUDA major must be the framework's (libraries are named per major from CUDA 11
on), and before CUDA 11 the major.minor too (cudart64_101 is not cudart64_102).
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bundler.errors import CheckError
from bundler.frameworks.build_names import cuda_in_name as cuda_in_name
from bundler.frameworks.build_names import cuda_named
from bundler.frameworks.fitting import fitting_hint, serving
from bundler.frameworks.installed import installed
from bundler.platforms.driver_table import CompatFacts as DriverTable
from bundler.platforms.driver_table import FrameworkEntry, version_tuple
from bundler.releases.catalogue import Release
from bundler.support.regular_files import read_bounded
from bundler.support.wheel_names import normalize

_MAX_FILE_BYTES = 1 << 20   # the files are a few kB; a larger one is not theirs
_TF_SUFFIX = re.compile(r"^64_(\d+)$")   # TensorFlow's Windows figures: "64_112", "64_8"


@dataclass(frozen=True)
class FrameworkFacts:
    """One framework installed in the app, and what it and the table say it needs."""

    distribution: str
    version: str
    file: str = ""          # its build-info file, relative to the app (with /); "" if none
    cuda: str = ""          # as the file says it, made a version: "11.8", "11.2" ("64_112")
    cudnn: str = ""         # likewise: "8.6.0", "8" ("64_8"), "9"
    loads: tuple[str, ...] = ()   # library names the file names (TensorFlow's DLL names)
    gpu_build: bool = True  # False: the file says it is a CPU build (needs nothing)
    unreadable: str = ""    # the file exists but could not be read: why
    row: FrameworkEntry | None = None   # the driver table's row for this release

    @property
    def title(self) -> str:
        return f"{self.distribution} {self.version}"

    @property
    def ships_own_runtime(self) -> bool:
        """torch carries its own CUDA and cuDNN: the bundle's versions do not concern it."""
        return self.row is not None and self.row.bundles_runtime or (
            normalize(self.distribution) == "torch")

    def cudnn_minimum(self) -> tuple[str, str]:
        """(the oldest cuDNN it runs on, who says so); ("", "") when no one does. The
        file's figure and the table's row are both minimums: the higher one wins."""
        said = [(self.cudnn, self.file)] if self.cudnn else []
        if self.row is not None and self.row.cudnn:
            said.append((self.row.cudnn, self._row_says()))
        return max(said, key=lambda pair: version_tuple(pair[0]), default=("", ""))

    def cuda_needed(self) -> tuple[str, str]:
        """(the CUDA it is built for, who says so): its file first, else the table."""
        if self.cuda:
            return self.cuda, self.file
        if self.row is not None and self.row.cuda:
            return self.row.cuda, self._row_says()
        return "", ""

    def _row_says(self) -> str:
        return f"bundler's framework table, row '{self.row.name}'," if self.row else ""


def fits(facts: FrameworkFacts, cuda: str, cudnn: str) -> str | None:
    """None when a runtime of CUDA `cuda` and cuDNN `cudnn` serves the framework, else
    one sentence saying why not (the framework, who says so, the figure)."""
    if facts.ships_own_runtime or not facts.gpu_build:
        return None
    wanted, by = facts.cudnn_minimum()
    if wanted and cudnn:
        have = version_tuple(cudnn)
        floor = version_tuple(wanted)
        if have[:1] != floor[:1] or have < floor:
            return (f"{facts.title} needs cuDNN {floor[0]} at {wanted} or newer ({by} says "
                    f"{wanted}); this runtime's cuDNN is {cudnn}")
    built, by = facts.cuda_needed()
    if built and cuda and not same_cuda_family(built, cuda):
        return (f"{facts.title} is built for CUDA {built} ({by} says {built}) and loads "
                f"that CUDA's libraries; this runtime is for CUDA {cuda}")
    return None


def same_cuda_family(built: str, runtime: str) -> bool:
    """One CUDA library naming: the major from CUDA 11 on, else major.minor."""
    first, second = version_tuple(built), version_tuple(runtime)
    if not first or not second or first[0] != second[0]:
        return False
    if first[0] >= 11:
        return True
    # before 11 a runtime named "10" stands for 10.2 (catalogue.cuda_key's rule)
    return (first + (0,))[1] == (second + (2 if second[0] == 10 else 0,))[1]


def fitting_releases(frameworks: Sequence[FrameworkFacts], platform_suffix: str,
                     count: int | None = 3) -> list[Release]:
    """Catalogue releases that serve every framework and ship what they load, fetchable
    ones first (bundler/frameworks/fitting.py)."""
    return serving(frameworks, platform_suffix, count, fits)


def refuse_unfit(frameworks: Sequence[FrameworkFacts], runtime: str, cuda: str, cudnn: str,
                 platform_suffix: str) -> None:
    """Raise CheckError when `runtime` (a recipe: CUDA `cuda`, cuDNN `cudnn`) does not
    serve every framework, or a framework's build-info file could not be read."""
    for facts in frameworks:
        if facts.unreadable:
            raise CheckError(f"{facts.title}'s build-info file cannot be read "
                             f"({facts.unreadable}), so the CUDA and cuDNN it needs are "
                             "unknown", f"reinstall {facts.distribution}, or set [scan] "
                             "enabled = false in the spec and choose the release yourself")
    reasons = [r for f in frameworks if (r := fits(f, cuda, cudnn)) is not None]
    if not reasons:
        return
    raise CheckError(f"{runtime} does not fit the app: {'; '.join(reasons)}",
                     fitting_hint(frameworks, fitting_releases(frameworks, platform_suffix)))


def read_frameworks(root: Path, folders: Iterable[Path],
                    table: DriverTable) -> tuple[FrameworkFacts, ...]:
    """The facts of each framework bundler knows (by a reader or a table row) installed
    in `folders`: the app's site-packages folders (those holding *.dist-info), inside the
    app folder `root`."""
    found: dict[str, FrameworkFacts] = {}
    for dist in installed(folders):
        distribution, version = dist.metadata["Name"] or "", dist.version
        reader = _READERS.get(_family_of(distribution))
        row = table.framework_entry(distribution, version)
        named_cuda, named_by = cuda_named(distribution, version)
        if (reader is None and row is None and not named_cuda) \
                or normalize(distribution) in found:
            continue
        facts = FrameworkFacts(distribution, version, row=row, cuda=named_cuda, file=named_by)
        if reader is not None:
            relpath, read = reader
            path = Path(str(dist.locate_file(relpath)))
            if os.path.lexists(path):   # whatever is there: a pipe or a folder is no file
                facts = _read_file(facts, path, _inside(path, root), read)
        found[normalize(distribution)] = facts
    return tuple(found[k] for k in sorted(found))


def frameworks_in(root: Path, table: DriverTable,
                  leave_out: Callable[[Path, list[str]], Container[str]] | None = None
                  ) -> tuple[FrameworkFacts, ...]:
    """`read_frameworks` of every site-packages folder under `root` (a folder holding a
    *.dist-info or *.egg-info); `leave_out(folder, names)` names the subfolders not to
    enter (a bundle's runtime folder, an earlier pack's output). Only the metadata and the
    build-info files are read: quick enough to run before anything else."""
    folders: set[Path] = set()
    for folder, dirs, _ in os.walk(root):
        here = Path(folder)
        left = leave_out(here, dirs) if leave_out is not None else ()
        dirs[:] = [d for d in dirs if d not in left]
        folders |= {here for d in dirs if d.endswith((".dist-info", ".egg-info"))}
    return read_frameworks(root, sorted(folders), table)


def build_info_member(distribution: str) -> str:
    """The build-info file of a framework bundler reads, as installed ("" for none)."""
    reader = _READERS.get(_family_of(distribution))
    return reader[0] if reader else ""


def _inside(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _family_of(distribution: str) -> str:
    name = normalize(distribution)
    return "cupy" if name.startswith("cupy_cuda") else name


def _read_file(facts: FrameworkFacts, path: Path, relpath: str,
               read: Callable[[str], dict[str, object]]) -> FrameworkFacts:
    try:
        said = read(read_bounded(path, _MAX_FILE_BYTES).decode("utf-8"))
    except OSError as exc:
        return replace(facts, file=relpath, unreadable=f"{relpath}: {exc.strerror or exc}")
    except (ValueError, SyntaxError, RecursionError, MemoryError) as exc:
        return replace(facts, file=relpath, unreadable=f"{relpath}: {exc}")
    bad = _unprintable_figure(said) or _not_a_version(said)
    if bad:   # a version with a line break or a terminal escape in it is no version
        return replace(facts, file=relpath, unreadable=f"{relpath}: {bad}")
    return replace(facts, file=relpath, **said)  # type: ignore[arg-type]


def _unprintable_figure(said: dict[str, object]) -> str:
    """Why a CUDA or cuDNN version the file gives is none ("" if each is text without
    whitespace or control characters): `10.1\n\x1b[31mRED` was taken as CUDA 10.1, and
    its escape sequence shown on the user's terminal."""
    for key in ("cuda", "cudnn"):
        value = said.get(key)
        if isinstance(value, str) and any(not c.isprintable() or c.isspace() for c in value):
            shown = repr(value) if len(value) <= 40 else repr(value[:40]) + "..."
            return (f"its {key} version {shown} holds a line break, a space or a control "
                    "character")
    return ""


def _not_a_version(said: dict[str, object]) -> str:
    """Why a CUDA or cuDNN figure the file gives is no version ("" if each is empty or
    starts with a number): 'abc' or 'v8.6' stopped fits() with an IndexError (exit 3)."""
    for key in ("cuda", "cudnn"):
        value = said.get(key)
        if isinstance(value, str) and value and not version_tuple(value):
            return f"its {key} version {value[:40]!r} is not a version"
    return ""


def _assignments(text: str) -> dict[str, object]:
    """Top-level `name = literal` (and `name: T = literal`) of a generated Python file,
    by `ast`. Besides them it may hold only a docstring, imports and definitions (a
    `def show():` runs only when called); anything else is not such a file: ValueError
    naming the line (a call, an `if`, a name bound to a computed value)."""
    values: dict[str, object] = {}
    for node in ast.parse(text).body:
        if isinstance(node, _INERT) or (isinstance(node, ast.Expr)
                                        and isinstance(node.value, ast.Constant)):
            continue
        if isinstance(node, ast.AnnAssign) and node.value is None \
                and isinstance(node.target, ast.Name):
            continue   # `cuda: Optional[str]` binds nothing
        targets = (node.targets if isinstance(node, ast.Assign) else [node.target]
                   if isinstance(node, ast.AnnAssign) else [])
        value = getattr(node, "value", None)
        if not targets or value is None or not all(isinstance(t, ast.Name) for t in targets):
            raise ValueError(f"line {node.lineno}: not a plain assignment of a literal, "
                             "as a generated build-info file holds")
        for target in targets:
            values[target.id] = _literal(value, node.lineno)   # type: ignore[attr-defined]
    return values


_INERT = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
          ast.Pass)


def _literal(node: ast.expr, line: int) -> object:
    """A literal's value; TensorFlow writes collections.OrderedDict([(key, value), ...]):
    its pairs, as a dict. ValueError for any other expression."""
    try:
        if isinstance(node, ast.Call):
            if not (_names_ordered_dict(node.func) and len(node.args) <= 1
                    and not node.keywords):
                raise ValueError("a call")
            return dict(ast.literal_eval(node.args[0])) if node.args else {}
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError(f"line {line}: not a literal ({exc}), as a generated build-info "
                         "file holds") from None


def _names_ordered_dict(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "OrderedDict"
            and isinstance(func.value, ast.Name) and func.value.id == "collections") \
        or (isinstance(func, ast.Name) and func.id == "OrderedDict")


def _text(value: object) -> str:
    text = "" if value is None or isinstance(value, bool) else str(value).strip()
    return "" if text.lower() in ("false", "none", "") else text


def _tf_figure(value: object) -> str:
    """TensorFlow's Windows figures are DLL suffixes: "64_112" -> "11.2", "64_8" -> "8",
    "64_101" -> "10.1"; Linux's are versions already ("11.2", "8")."""
    text = _text(value)
    found = _TF_SUFFIX.match(text)
    if not found:
        return text
    digits = found.group(1)
    return f"{digits[:2]}.{digits[2:]}" if len(digits) == 3 else digits


def _paddle(text: str) -> dict[str, object]:
    said = _assignments(text)
    cuda, cudnn = _text(said.get("cuda_version")), _text(said.get("cudnn_version"))
    if "cuda_version" not in said:
        return {}   # older releases' files say no CUDA: the table's row does
    return {"cuda": cuda, "cudnn": cudnn, "gpu_build": bool(cuda)}


def _tensorflow(text: str) -> dict[str, object]:
    info = _assignments(text).get("build_info")
    if not isinstance(info, dict):
        raise ValueError("no build_info table in it")
    # cudart_dll_name is not taken: 2.5-2.9 say 'cudart64_112.dll', a name no CUDA
    # release has, while their GPU check loads cudart64_110.dll (the table's row says so).
    names = (str(info["cudnn_dll_name"]),) if info.get("cudnn_dll_name") else ()
    return {"cuda": _tf_figure(info.get("cuda_version")),
            "cudnn": _tf_figure(info.get("cudnn_version")),
            "gpu_build": bool(info.get("is_cuda_build")), "loads": names}


def _onnxruntime(text: str) -> dict[str, object]:
    said = _assignments(text)
    if "use_cuda" not in said:
        raise ValueError("no use_cuda in it")
    return {"cuda": _text(said.get("cuda_version")), "cudnn": _text(said.get("cudnn_version")),
            "gpu_build": bool(said.get("use_cuda"))}


def _cupy(text: str) -> dict[str, object]:
    config = json.loads(text)
    if not isinstance(config, dict) or "cuda" not in config:
        raise ValueError("no \"cuda\" in it")
    cudnn = config.get("cudnn")
    return {"cuda": _text(config["cuda"]).removesuffix(".x"),
            "cudnn": _text(cudnn.get("version")) if isinstance(cudnn, dict) else ""}


def _torch(text: str) -> dict[str, object]:
    cuda = _text(_assignments(text).get("cuda"))
    return {"cuda": cuda, "gpu_build": bool(cuda)}


_READERS = {
    "paddlepaddle_gpu": ("paddle/version/__init__.py", _paddle),
    "tensorflow": ("tensorflow/python/platform/build_info.py", _tensorflow),
    "tensorflow_gpu": ("tensorflow/python/platform/build_info.py", _tensorflow),
    "onnxruntime_gpu": ("onnxruntime/capi/version_info.py", _onnxruntime),
    "cupy": ("cupy/.data/_wheel.json", _cupy),
    "torch": ("torch/version.py", _torch),
}
