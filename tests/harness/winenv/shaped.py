"""Stand-ins shaped like real DLLs: same name, same imported DLLs and function names,
same exports and version resource as read from the real file's own tables.

Some real DLLs cannot run under Wine 8 (onnxruntime_providers_cuda.dll and cuFFT 11 fail
in DllMain, LoadLibraryExW -> error 998); the Windows loader's behaviour (which file a
name resolves to, error 126 for a missing import, 127 for a missing function) depends
only on those tables, so a stand-in built from them loads exactly where the real one
would. tests/harness/data/dll_shapes.json holds the tables of the NVIDIA DLLs the recipes ship
(read with pefile from the real wheels); `pe_tables` reads them from a real file.
"""

from __future__ import annotations

import json
import re
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import pefile

from bundler.pack.resolve import release_number
from bundler.recipe.load import Recipe
from bundler.windows.facts import windows_facts

from ._cache import build_once, cache_root, digest
from .build import STANDIN_DIR, TRIPLETS, _import_library, _import_references, _run

SHAPES = Path(__file__).resolve().parents[1] / "data" / "dll_shapes.json"
_C_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Shape:
    name: str
    imports: tuple[tuple[str, tuple[str, ...]], ...]   # (DLL, functions), non-system only
    exports: tuple[str, ...] = ()
    version: str = ""                                   # "" = no version resource
    delay: tuple[str, ...] = field(default=())
    # Exports that return a constant (cudnnGetVersion), compiled to `mov eax, N; ret`.
    returns: tuple[tuple[str, int], ...] = ()


def marker(dll: str) -> str:
    """The function every stand-in exports, and imports from each DLL it imports."""
    return "standin_" + re.sub(r"[^A-Za-z0-9]", "_", dll.lower().removesuffix(".dll"))


def pe_tables(path: Path) -> Shape:
    """The import table (with function names), exports and FileVersion of a real PE file;
    only CUDA/cuDNN-relevant imports are kept (Windows' own resolve everywhere)."""
    image = pefile.PE(str(path), fast_load=True)
    image.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY[d] for d in (
        "IMAGE_DIRECTORY_ENTRY_IMPORT", "IMAGE_DIRECTORY_ENTRY_EXPORT",
        "IMAGE_DIRECTORY_ENTRY_RESOURCE")])
    imports = []
    for entry in getattr(image, "DIRECTORY_ENTRY_IMPORT", []):
        dll = entry.dll.decode()
        if windows_facts().is_system(dll):
            continue
        imports.append((dll, tuple(i.name.decode() for i in entry.imports if i.name)))
    exports = tuple(s.name.decode() for s in getattr(
        getattr(image, "DIRECTORY_ENTRY_EXPORT", None), "symbols", []) if s.name)
    version = ""
    for info in getattr(image, "VS_FIXEDFILEINFO", []) or []:
        version = (f"{info.FileVersionMS >> 16}.{info.FileVersionMS & 0xFFFF}."
                   f"{info.FileVersionLS >> 16}.{info.FileVersionLS & 0xFFFF}")
    image.close()
    return Shape(path.name, tuple(imports), exports, version)


def build_shaped(shape: Shape, out_dir: Path, extra_exports: Iterable[str] = ()) -> Path:
    exports = sorted({marker(shape.name), *shape.exports, *extra_exports}
                     - {""} - {name for name, _ in shape.returns})
    exports = [e for e in exports if _C_NAME.match(e)]
    key = digest(repr(shape), repr(exports), (STANDIN_DIR / "standin.h").read_text())
    cached = build_once(cache_root() / "shaped" / key,
                        lambda tmp: _compile(shape, exports, tmp))
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / shape.name
    dest.write_bytes((cached / shape.name).read_bytes())
    return dest


def _compile(shape: Shape, exports: list[str], out: Path) -> None:
    from .build import Import, StandinSpec, _compile_resource

    triplet = TRIPLETS["x64"]
    imports = tuple(Import(dll, tuple(f for f in funcs if _C_NAME.match(f)) or (marker(dll),))
                    for dll, funcs in shape.imports)
    with tempfile.TemporaryDirectory(prefix="shaped-") as work_s:
        work = Path(work_s)
        source = work / "shaped.c"
        source.write_text('#include "standin.h"\n' + "".join(
            f"STANDIN_EXPORT int {name}(void) {{ return 0; }}\n" for name in exports)
            + "".join(f"STANDIN_EXPORT int {name}(void) {{ return {value}; }}\n"
                      for name, value in shape.returns))
        spec = StandinSpec("shaped.c", shape.name, _version(shape.version), imports=imports,
                           description=f"{shape.name} (bundler test stand-in shaped like "
                                       "the real file)")
        extra = [str(_compile_resource(spec, triplet, work))] if shape.version else []
        libs = [str(_import_library(imp, triplet, work)) for imp in imports]
        _run([f"{triplet}-gcc", "-shared", "-O1", "-s", "-nostdlib",
              "-Wl,--no-insert-timestamp", "-Wl,--disable-auto-image-base",
              f"-I{STANDIN_DIR}", "-o", str(out / shape.name), str(source),
              str(_import_references(spec, work)), *extra, *libs, "-lkernel32"])


def _version(text: str) -> tuple[int, int, int, int]:
    parts = [int(p) for p in text.split(".")] if text else [0]
    return tuple((parts + [0, 0, 0, 0])[:4])  # type: ignore[return-value]


@lru_cache(maxsize=1)
def _shapes() -> dict[str, dict[str, dict]]:
    return json.loads(SHAPES.read_text())["shapes"]


def real_shape(group: str, name: str) -> dict | None:
    """The recorded tables of a real DLL: group "cu11", "cu12", "cu13" or "ort"."""
    return _shapes().get(group, {}).get(name)


def recipe_shape(recipe: Recipe, name: str) -> Shape:
    """A recipe file's shape: the real file's imports where recorded (else cuDNN's
    structure, which is the same for CUDA 12 and 13, and cuBLAS -> cuBLASLt), the
    recipe's version for it (which is the real file's)."""
    group = f"cu{recipe.cuda_major}"
    found = real_shape(group, name) or real_shape("cu13", name)
    if found is not None:
        imports = [i for i in found["imports"] if not windows_facts().is_system(i)]
    elif name.lower().startswith("cublas64_"):
        imports = [name.replace("cublas64_", "cublasLt64_")]
    else:
        imports = []
    renamed = [recipe.supplier_of(i).name if recipe.supplier_of(i) else i for i in imports]
    facts = recipe.files.get(name)
    return Shape(name, tuple((i, (marker(i),)) for i in renamed),
                 version=facts.version if facts else "",
                 returns=(("cudnnGetVersion", facts.cudnn_get_version),)
                 if facts and facts.cudnn_get_version else ())


def _saying_its_release(recipe: Recipe, shape: Shape, extra: Iterable[str]) -> Shape:
    """A stand-in asked to export cudnnGetVersion (the real ORT provider imports it from
    cudnn64_9.dll) returns the recipe's release, as the real file's code does: pack reads
    that constant as release evidence, and a stub's 0 would name another release."""
    if "cudnnGetVersion" not in extra or any(n == "cudnnGetVersion" for n, _ in shape.returns):
        return shape
    facts = recipe.files.get(shape.name)
    number = (facts.cudnn_get_version if facts else 0) or release_number(recipe.cudnn)
    return replace(shape, returns=(*shape.returns, ("cudnnGetVersion", number)))


def standin_wheels(recipe: Recipe, folder: Path, components: Iterable[str],
                   exports: Mapping[str, Iterable[str]] | None = None) -> dict[str, Path]:
    """Every wheel source the components (and the default ones) use, holding stand-ins
    of its DLLs (shaped by recipe_shape, plus `exports` per DLL name) and a stand-in
    licence, under the real member paths. Returns source id -> wheel."""
    from tests.harness.wheelkit import make_wheel

    defaults = [c.name for c in recipe.select(None)]
    files = recipe.files_for(recipe.select([*defaults, *components]))
    by_source: dict[str, dict[str, bytes]] = {}
    dll_dir = folder / "dlls"
    for item in files:
        if item.name.lower().endswith(".dll"):
            extra = tuple((exports or {}).get(item.name, ()))
            built = build_shaped(_saying_its_release(recipe, recipe_shape(recipe, item.name),
                                                     extra), dll_dir, extra)
            data = built.read_bytes()
        else:
            data = b"STAND-IN licence text for bundler's tests; not NVIDIA's.\n"
        by_source.setdefault(item.source, {})[item.member] = data
    wheels = {}
    for sid, members in by_source.items():
        spec = recipe.sources[sid]
        for member in spec.contents:   # what the recipe checks the wheel holds
            members.setdefault(member, b"stand-in member\n")
        name, version = spec.file_name.split("-")[:2]
        wheels[sid] = make_wheel(folder / "wheels", members, name=name, version=version)
        assert wheels[sid].name == spec.file_name
    return wheels


def unpinned_recipe(recipe: Recipe, folder: Path, sources: Iterable[str]) -> Path:
    """The recipe with the sha256 pins of `sources` dropped (their wheels are stand-ins)."""
    text = recipe.path.read_text()
    for sid in sources:
        text = text.replace(f'sha256 = "{recipe.sources[sid].sha256}"\n', "")
    path = folder / recipe.path.name
    path.write_text(text)
    return path


def dist_info(site: Path, name: str, version: str) -> Path:
    """A minimal installed distribution's metadata folder, as pip writes it."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return folder


def wheel_members(wheel: Path, prefix: str, dest: Path) -> list[Path]:
    """Extract the members under `prefix` of a (real) wheel into dest, keeping paths."""
    out = []
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith(prefix):
                out.append(Path(archive.extract(member, dest)))
    return out
