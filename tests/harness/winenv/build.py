"""Build the stand-in DLLs of tests/harness/standin/ with mingw-w64, and lay them out
like NVIDIA's downloads (the cuDNN zip, a CUDA toolkit folder).

Stand-ins are tiny PE DLLs with the real file names, exports, import graph and
a VERSIONINFO resource, so bundler's PE checks and the Windows loader (under
Wine) see what they would see with the real 1 GB runtime. Each DLL is compiled
once per cache key (sources + parameters + compiler) and copied out, so tests
may modify their copies freely.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ._cache import build_once, cache_root, digest

STANDIN_DIR = Path(__file__).resolve().parents[1] / "standin"

Version = tuple[int, int, int, int]
Arch = Literal["x64", "x86"]
ZipMethod = Literal["deflate64", "deflate", "store"]

TRIPLETS: dict[str, str] = {"x64": "x86_64-w64-mingw32", "x86": "i686-w64-mingw32"}

# cuDNN 8's sub-libraries, in load (dependency) order, with the sub-libraries
# each one imports statically, as in the real 8.0.x release.
SUBLIB_REQUIRES: dict[str, tuple[str, ...]] = {
    "ops_infer": (),
    "ops_train": ("ops_infer",),
    "cnn_infer": ("ops_infer",),
    "cnn_train": ("ops_infer", "ops_train", "cnn_infer"),
    "adv_infer": ("ops_infer",),
    "adv_train": ("ops_infer", "ops_train", "adv_infer"),
}
SUBLIBS: tuple[str, ...] = tuple(SUBLIB_REQUIRES)
CHECK_FNS: dict[str, str] = {
    "ops_infer": "cudnnOpsInferVersionCheck",
    "ops_train": "cudnnOpsTrainVersionCheck",
    "cnn_infer": "cudnnCnnInferVersionCheck",
    "cnn_train": "cudnnCnnTrainVersionCheck",
    "adv_infer": "cudnnAdvInferVersionCheck",
    "adv_train": "cudnnAdvTrainVersionCheck",
}

CUDNN_VERSION: Version = (8, 0, 3, 33)
DECOY_CUDNN_VERSION: Version = (7, 6, 5, 32)
CUDNN_SHIM = "cudnn64_8.dll"
FRAMEWORK = "framework.dll"
NVCUDA = "nvcuda.dll"

# A fixed date for archive members and toolkit files: same inputs, same bytes.
FIXED_MTIME = 1598313600  # 2020-08-25, around cuDNN 8.0.3's release


# --------------------------------------------------------------------------
# Specs: what to build
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    """A static import: the DLL file name and the symbols the source uses."""

    dll: str
    symbols: tuple[str, ...]


@dataclass(frozen=True)
class StandinSpec:
    """Everything that determines one stand-in DLL's bytes.

    Every Import becomes a real import entry, so a variant is one
    dataclasses.replace away, e.g. a sub-library that also needs zlibwapi.dll:
    replace(spec, imports=spec.imports + (Import("zlibwapi.dll", ("zlibVersion",)),)).
    """

    source: str  # a .c file in tests/harness/standin/
    name: str  # output file name, e.g. "cudnn64_8.dll"
    version: Version  # VERSIONINFO FILEVERSION / PRODUCTVERSION
    arch: Arch = "x64"
    defines: tuple[tuple[str, str], ...] = ()
    imports: tuple[Import, ...] = ()
    description: str = "bundler test stand-in"
    product: str = "bundler test stand-in"


@dataclass(frozen=True)
class CudaNames:
    """File names and version numbers of one CUDA release's libraries."""

    version: str  # "10.1"
    full_version: str  # "10.1.243", as a toolkit's version.txt says
    cudart: str
    cublas: str
    cublaslt: str
    runtime_version: int  # cudaRuntimeGetVersion: 10010 for 10.1

    @property
    def file_version(self) -> Version:
        # NVIDIA stamps its CUDA DLLs 6.14.11.<runtime version> (seen on the
        # real cudart64_110.dll: 6.14.11.11080).
        return (6, 14, 11, self.runtime_version)

    @property
    def blas_version(self) -> int:
        major, minor = divmod(self.runtime_version, 1000)
        return major * 1000 + (minor // 10) * 100

    @property
    def files(self) -> tuple[str, str, str]:
        """In load order: each file imports only the ones before it."""
        return (self.cudart, self.cublaslt, self.cublas)


_FULL_VERSIONS = {"10.1": "10.1.243", "10.2": "10.2.89", "11.0": "11.0.221", "11.8": "11.8.89"}


def cuda_names(cuda: str | CudaNames) -> CudaNames:
    """The library names of CUDA `cuda` ("10.1", "10.2", "11", "11.8", "12")."""
    if isinstance(cuda, CudaNames):
        return cuda
    major_s, _, minor_s = cuda.partition(".")
    major, minor = int(major_s), int(minor_s or 0)
    cudart, cublas, cublaslt = _cuda_file_names(major, minor)
    full = _FULL_VERSIONS.get(f"{major}.{minor}", f"{major}.{minor}.0")
    return CudaNames(f"{major}.{minor}", full, cudart, cublas, cublaslt, major * 1000 + minor * 10)


def _cuda_file_names(major: int, minor: int) -> tuple[str, str, str]:
    # cudart carries major+minor up to CUDA 11.0, cuBLAS only the major.
    if major == 10 and minor in (1, 2):
        return f"cudart64_10{minor}.dll", "cublas64_10.dll", "cublasLt64_10.dll"
    if major == 11:
        return "cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll"
    if major >= 12:
        return f"cudart64_{major}.dll", f"cublas64_{major}.dll", f"cublasLt64_{major}.dll"
    raise ValueError(f"no stand-in naming for CUDA {major}.{minor} (have: 10.1, 10.2, 11.x, 12+)")


def cudnn_number(version: Version) -> int:
    """cudnnGetVersion's encoding: 8.0.3 -> 8003, 7.6.5 -> 7605, 9.1.0 -> 90100."""
    major, minor, patch, _ = version
    scale = 10000 if major >= 9 else 1000
    return major * scale + minor * 100 + patch


def sublib_name(sub: str) -> str:
    """"ops_infer" -> "cudnn_ops_infer64_8.dll"."""
    if sub not in SUBLIB_REQUIRES:
        raise ValueError(f"unknown cuDNN sub-library {sub!r}; one of {', '.join(SUBLIBS)}")
    return f"cudnn_{sub}64_8.dll"


def _cuda_imports(cuda: CudaNames) -> tuple[Import, ...]:
    return (
        Import(cuda.cudart, ("cudaRuntimeGetVersion", "cudaDriverGetVersion")),
        Import(cuda.cublaslt, ("cublasLtGetVersion", "cublasLtGetCudartVersion")),
        Import(cuda.cublas, ("cublasGetVersion_v2", "cublasGetCudartVersion")),
    )


def cudart_spec(cuda: str | CudaNames = "10.1", *, name: str | None = None,
                version: Version | None = None, arch: Arch = "x64") -> StandinSpec:
    """The CUDA runtime stand-in (cudart64_101.dll for 10.1)."""
    names = cuda_names(cuda)
    return StandinSpec(
        "cudart.c", name or names.cudart, version or names.file_version, arch,
        defines=(("STANDIN_CUDART_VERSION", str(names.runtime_version)),),
        description=f"NVIDIA CUDA Runtime {names.version} stand-in",
        product=f"CUDA {names.version} Runtime (bundler test stand-in)",
    )


def cublaslt_spec(cuda: str | CudaNames = "10.1", *, name: str | None = None,
                  version: Version | None = None, arch: Arch = "x64") -> StandinSpec:
    """cuBLASLt stand-in; imports the CUDA runtime of `cuda`."""
    names = cuda_names(cuda)
    return StandinSpec(
        "cublasLt.c", name or names.cublaslt, version or names.file_version, arch,
        defines=(("STANDIN_CUBLAS_VERSION", str(names.blas_version)),),
        imports=_cuda_imports(names)[:1],
        description=f"NVIDIA cuBLASLt Library {names.version} stand-in",
        product=f"CUDA {names.version} cuBLASLt (bundler test stand-in)",
    )


def cublas_spec(cuda: str | CudaNames = "10.1", *, name: str | None = None,
                version: Version | None = None, arch: Arch = "x64") -> StandinSpec:
    """cuBLAS stand-in; imports cuBLASLt and the CUDA runtime of `cuda`."""
    names = cuda_names(cuda)
    return StandinSpec(
        "cublas.c", name or names.cublas, version or names.file_version, arch,
        defines=(("STANDIN_CUBLAS_VERSION", str(names.blas_version)),),
        imports=_cuda_imports(names)[:2],
        description=f"NVIDIA cuBLAS Library {names.version} stand-in",
        product=f"CUDA {names.version} cuBLAS (bundler test stand-in)",
    )


def cudnn_spec(cudnn_version: Version = CUDNN_VERSION, cuda: str | CudaNames = "10.1", *,
               name: str = CUDNN_SHIM, arch: Arch = "x64") -> StandinSpec:
    """The cuDNN shim stand-in: imports only KERNEL32, loads ops_infer at run time."""
    names = cuda_names(cuda)
    return StandinSpec(
        "cudnn.c", name, cudnn_version, arch,
        defines=(("STANDIN_CUDNN_VERSION", str(cudnn_number(cudnn_version))),
                 ("STANDIN_CUDART_VERSION", str(names.runtime_version))),
        description="NVIDIA CUDA Deep Neural Network Library stand-in",
        product=f"cuDNN {_dotted(cudnn_version)} (bundler test stand-in)",
    )


def cudnn_sublib_spec(sub: str, cudnn_version: Version = CUDNN_VERSION,
                      cuda: str | CudaNames | None = "10.1", *, arch: Arch = "x64") -> StandinSpec:
    """One cuDNN 8 sub-library; `cuda=None` builds it without CUDA imports."""
    defines = [("STANDIN_CHECK_FN", CHECK_FNS[sub]),
               ("STANDIN_CUDNN_VERSION", str(cudnn_number(cudnn_version)))]
    imports: list[Import] = []
    if cuda is not None:
        defines.append(("STANDIN_USE_CUDA", "1"))
        imports.extend(_cuda_imports(cuda_names(cuda)))
    if sub == "ops_infer":
        defines.append(("STANDIN_EXPORT_GET_VERSION", "1"))
    for dep in SUBLIB_REQUIRES[sub]:
        defines.append((f"STANDIN_DEP_{dep.upper()}", "1"))
        imports.append(Import(sublib_name(dep), (CHECK_FNS[dep],)))
    return StandinSpec(
        "cudnn_sublib.c", sublib_name(sub), cudnn_version, arch,
        defines=tuple(defines), imports=tuple(imports),
        description=f"NVIDIA cuDNN {sub} sub-library stand-in",
        product=f"cuDNN {_dotted(cudnn_version)} (bundler test stand-in)",
    )


def framework_spec(*, arch: Arch = "x64", cudnn_name: str = CUDNN_SHIM) -> StandinSpec:
    """The framework stand-in: LoadLibraryA(cudnn_name) by bare name."""
    return StandinSpec(
        "framework.c", FRAMEWORK, (1, 0, 0, 0), arch,
        defines=(("STANDIN_CUDNN_NAME", _c_string(cudnn_name)),),
        description="Deep-learning framework stand-in (loads cuDNN by bare name)",
        product="framework (bundler test stand-in)",
    )


def nvcuda_spec(driver_cuda_version: int = 10000, *, version: Version = (25, 21, 14, 1131),
                arch: Arch = "x64") -> StandinSpec:
    """The driver stand-in; 10000 (CUDA 10.0, driver 411.31) is too old for 10.1."""
    return StandinSpec(
        "nvcuda.c", NVCUDA, version, arch,
        defines=(("STANDIN_DRIVER_CUDA_VERSION", str(driver_cuda_version)),),
        description="NVIDIA CUDA Driver stand-in",
        product="NVIDIA driver (bundler test stand-in)",
    )


def _dotted(version: Sequence[int]) -> str:
    return ".".join(str(part) for part in version)


def _c_string(text: str) -> str:
    if any(ch in text for ch in '"\\\n'):
        raise ValueError(f"not usable in a C string literal: {text!r}")
    return f'"{text}"'


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


def missing_toolchain(arches: Iterable[Arch] = ("x64", "x86")) -> list[str]:
    """The mingw-w64 programs this module needs that are not on PATH."""
    tools = [f"{TRIPLETS[arch]}-{tool}"
             for arch in arches for tool in ("gcc", "windres", "dlltool")]
    return [tool for tool in tools if shutil.which(tool) is None]


@functools.cache
def _toolchain_fingerprint(arch: Arch) -> str:
    # A compiler upgrade changes the bytes, so it must change the cache key.
    out = _run([f"{TRIPLETS[arch]}-gcc", "--version"])
    return out.splitlines()[0] if out else arch


@functools.cache
def _sources_fingerprint() -> str:
    # This file too: it holds the compiler flags and generates code.
    files = sorted(p for p in STANDIN_DIR.iterdir() if p.suffix in (".c", ".h", ".in"))
    files.append(Path(__file__))
    return digest(*(part for p in files for part in (p.name, p.read_bytes())))


def spec_key(spec: StandinSpec) -> str:
    """The cache key of `spec`: same key, same bytes."""
    return digest(_sources_fingerprint(), _toolchain_fingerprint(spec.arch), repr(spec))


def build_dll(spec: StandinSpec, out_dir: Path) -> Path:
    """Build `spec` (or take it from the cache) and copy it to out_dir/spec.name."""
    cached = build_once(cache_root() / "standin" / spec_key(spec), lambda tmp: _compile(spec, tmp))
    out_dir.mkdir(parents=True, exist_ok=True)
    dest = out_dir / spec.name
    # A copy, not a link: tests truncate or replace DLLs to play a broken download.
    shutil.copyfile(cached / spec.name, dest)
    return dest


def _compile(spec: StandinSpec, out_dir: Path) -> None:
    triplet = TRIPLETS[spec.arch]
    with tempfile.TemporaryDirectory(prefix="standin-") as work_s:
        work = Path(work_s)
        resource = _compile_resource(spec, triplet, work)
        libs = [_import_library(imp, triplet, work) for imp in spec.imports]
        refs = _import_references(spec, work)
        _run([
            f"{triplet}-gcc", "-shared", "-O1", "-s", "-Wall", "-Wextra",
            # Reproducible bytes: no link timestamp in the PE header, and no
            # image base derived from the output path (a temporary folder).
            "-Wl,--no-insert-timestamp", "-Wl,--disable-auto-image-base",
            # No C runtime: the import table holds only what the source calls.
            "-nostdlib",
            f"-I{STANDIN_DIR}",
            *(f"-D{name}={value}" for name, value in spec.defines),
            "-o", str(out_dir / spec.name),
            str(STANDIN_DIR / spec.source), str(refs), str(resource), *map(str, libs),
            "-lkernel32",
        ])


def _import_references(spec: StandinSpec, work: Path) -> Path:
    # The linker only imports what is referenced. Referencing every declared
    # import's pointer makes each Import real even if the C source never
    # calls it (e.g. a test adding zlibwapi.dll to a sub-library).
    symbols = sorted({symbol for imp in spec.imports for symbol in imp.symbols})
    lines = ["/* Generated by tests/harness/winenv/build.py: references to declared imports. */"]
    for symbol in symbols:
        # C's `_imp__x` is the i386 symbol `__imp__x`; on x64 it is `__imp_x`.
        lines.append(f"#ifdef __i386__\nextern void *_imp__{symbol};\n"
                     f"#define REF_{symbol} &_imp__{symbol}\n#else\n"
                     f"extern void *__imp_{symbol};\n#define REF_{symbol} &__imp_{symbol}\n#endif")
    refs = ", ".join([f"REF_{symbol}" for symbol in symbols] + ["0"])
    lines.append(f"void *const standin_import_refs[] = {{{refs}}};")
    path = work / "imports.c"
    path.write_text("\n".join(lines) + "\n")
    return path


def _compile_resource(spec: StandinSpec, triplet: str, work: Path) -> Path:
    text = (STANDIN_DIR / "versioninfo.rc.in").read_text()
    stem = spec.name.rsplit(".", 1)[0]
    fields = {
        "V1": str(spec.version[0]), "V2": str(spec.version[1]),
        "V3": str(spec.version[2]), "V4": str(spec.version[3]),
        "VERSION": _dotted(spec.version), "DESCRIPTION": spec.description,
        "INTERNAL": stem, "FILENAME": spec.name, "PRODUCT": spec.product,
    }
    for key, value in fields.items():
        if '"' in value:
            raise ValueError(f"quote in version resource field {key}: {value!r}")
        text = text.replace(f"@{key}@", value)
    rc, obj = work / "version.rc", work / "version.o"
    rc.write_text(text)
    _run([f"{triplet}-windres", "-i", str(rc), "-o", str(obj)])
    return obj


def _import_library(imp: Import, triplet: str, work: Path) -> Path:
    # An import library made from a .def file decides the imported DLL's name
    # without building that DLL: any name, e.g. cublas64_11.dll, can be imported.
    stem = imp.dll.rsplit(".", 1)[0]
    definition, lib = work / f"{stem}.def", work / f"lib{stem}.a"
    exports = "".join(f"  {symbol}\n" for symbol in imp.symbols)
    definition.write_text(f'LIBRARY "{imp.dll}"\nEXPORTS\n{exports}')
    _run([f"{triplet}-dlltool", "-d", str(definition), "-l", str(lib)])
    return lib


def _run(cmd: Sequence[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        output = proc.stdout + proc.stderr
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output}")
    return proc.stdout


# --------------------------------------------------------------------------
# Sets of DLLs
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class StandinRuntime:
    """A folder of stand-in runtime DLLs, with what they were built as."""

    dir: Path
    cudnn_version: Version
    cuda: CudaNames | None
    arch: Arch
    files: Mapping[str, Path]  # file name -> path, in load (dependency) order

    @property
    def cudnn_files(self) -> list[Path]:
        return [p for name, p in self.files.items() if name.startswith("cudnn")]

    @property
    def cuda_files(self) -> list[Path]:
        return [p for name, p in self.files.items() if not name.startswith("cudnn")]

    def __getitem__(self, name: str) -> Path:
        return self.files[name]


def build_runtime(out_dir: Path, *, cudnn_version: Version = CUDNN_VERSION,
                  cuda: str | CudaNames | None = "10.1", arch: Arch = "x64",
                  components: Iterable[str] = SUBLIBS, include_cuda: bool = True) -> StandinRuntime:
    """Build a cuDNN 8 runtime folder: CUDA libraries, sub-libraries, shim.

    `cuda="11"` gives a "CUDA 11 build" (ops_infer imports cublas64_11.dll ...).
    `cuda=None` builds sub-libraries that import no CUDA library at all.
    `include_cuda=False` leaves the CUDA DLLs out of the folder (they are still
    imported), as in the NVIDIA zip, which ships only cuDNN.
    """
    names = cuda_names(cuda) if cuda is not None else None
    wanted = set(components)
    specs: list[StandinSpec] = []
    if names is not None and include_cuda:
        specs += [cudart_spec(names, arch=arch), cublaslt_spec(names, arch=arch),
                  cublas_spec(names, arch=arch)]
    specs += [cudnn_sublib_spec(sub, cudnn_version, names, arch=arch)
              for sub in SUBLIBS if sub in wanted]
    shim_cuda = names or cuda_names("10.1")
    specs.append(cudnn_spec(cudnn_version, shim_cuda, arch=arch))
    files = {spec.name: build_dll(spec, out_dir) for spec in specs}
    return StandinRuntime(out_dir, cudnn_version, names, arch, files)


def build_decoy(out_dir: Path, *, cudnn_version: Version = DECOY_CUDNN_VERSION) -> StandinRuntime:
    """A wrong cuDNN as found on a stray PATH entry: cudnn64_8.dll reporting
    7605 plus its own ops_infer (no CUDA imports, so it loads on its own)."""
    return build_runtime(out_dir, cudnn_version=cudnn_version, cuda=None, components=("ops_infer",))


def build_framework(out_dir: Path, *, arch: Arch = "x64") -> Path:
    """framework.dll: framework_cudnn_version / _path / _create."""
    return build_dll(framework_spec(arch=arch), out_dir)


def build_nvcuda(out_dir: Path, driver_cuda_version: int = 10000) -> Path:
    """A driver nvcuda.dll whose cuDriverGetVersion reports `driver_cuda_version`."""
    return build_dll(nvcuda_spec(driver_cuda_version), out_dir)


# --------------------------------------------------------------------------
# NVIDIA's layouts
# --------------------------------------------------------------------------

ZIP_HEADERS: tuple[str, ...] = (
    "cudnn.h", "cudnn_adv_infer.h", "cudnn_adv_train.h", "cudnn_backend.h",
    "cudnn_cnn_infer.h", "cudnn_cnn_train.h", "cudnn_ops_infer.h", "cudnn_ops_train.h",
    "cudnn_version.h",
)
ZIP_LIBS: tuple[str, ...] = ("cudnn.lib", "cudnn64_8.lib") + tuple(
    lib for sub in sorted(SUBLIBS) for lib in (f"cudnn_{sub}.lib", f"cudnn_{sub}64_8.lib")
)
ZIP_DLLS: tuple[str, ...] = (CUDNN_SHIM, *sorted(sublib_name(sub) for sub in SUBLIBS))
ZIP_LICENSE = "NVIDIA_SLA_cuDNN_Support.txt"


def nvidia_zip_name(cudnn_version: Version = CUDNN_VERSION, cuda: str = "10.1") -> str:
    """NVIDIA's file name, e.g. cudnn-10.1-windows10-x64-v8.0.3.33.zip."""
    return f"cudnn-{cuda}-windows10-x64-v{_dotted(cudnn_version)}.zip"


def nvidia_zip_members(dll_dir: Path, cudnn_version: Version = CUDNN_VERSION) -> dict[str, bytes]:
    """The 31 members of the real cuDNN 8.0.3.33 zip: DLLs from dll_dir, the rest stand-ins."""
    members: dict[str, bytes] = {f"cuda/{ZIP_LICENSE}": _license_text()}
    for name in ZIP_DLLS:
        members[f"cuda/bin/{name}"] = (dll_dir / name).read_bytes()
    for name in ZIP_HEADERS:
        members[f"cuda/include/{name}"] = _header_text(name, cudnn_version)
    for name in ZIP_LIBS:
        members[f"cuda/lib/x64/{name}"] = _ar_archive(name)
    return members


def make_nvidia_zip(dll_dir: Path, out_zip: Path, method: ZipMethod = "deflate64", *,
                    cudnn_version: Version = CUDNN_VERSION) -> Path:
    """Write NVIDIA's cuDNN zip layout (31 files under cuda/) with DLLs from dll_dir.

    Deflate64 (what NVIDIA's zips use, and Python's zipfile cannot read) comes
    from 7-Zip; "deflate" and "store" from zipfile.
    """
    members = nvidia_zip_members(dll_dir, cudnn_version)
    out_zip.parent.mkdir(parents=True, exist_ok=True)
    out_zip.unlink(missing_ok=True)  # 7z would update an existing archive
    if method == "deflate64":
        _write_zip_7z(members, out_zip)
        _check_deflate64(out_zip, len(members))
    else:
        compression = zipfile.ZIP_DEFLATED if method == "deflate" else zipfile.ZIP_STORED
        _write_zip_python(members, out_zip, compression)
    return out_zip


def _write_zip_python(members: Mapping[str, bytes], out_zip: Path, compression: int) -> None:
    date_time = _fixed_date_time()
    with zipfile.ZipFile(out_zip, "w", compression) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time)
            info.compress_type = compression
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def _write_zip_7z(members: Mapping[str, bytes], out_zip: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="standin-zip-") as stage_s:
        stage = Path(stage_s)
        for name, data in members.items():
            path = stage / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            os.utime(path, (FIXED_MTIME, FIXED_MTIME))
        # Files listed one by one (relative paths) so 7z stores exactly these
        # members in this order, with no separate directory entries.
        cmd = ["7z", "a", "-tzip", "-mm=Deflate64", "-mtc=off", "-bd", "-bso0", "-bsp0",
               str(out_zip.resolve()), *members]
        _run(cmd, cwd=stage)


def _check_deflate64(out_zip: Path, expected: int) -> None:
    with zipfile.ZipFile(out_zip) as archive:
        infos = [info for info in archive.infolist() if not info.is_dir()]
    methods = {info.compress_type for info in infos}
    if len(infos) != expected or methods != {9}:
        raise RuntimeError(f"7z wrote {len(infos)} members with methods {methods}, "
                           f"expected {expected} Deflate64 (9) members: {out_zip}")


def _fixed_date_time() -> tuple[int, int, int, int, int, int]:
    import time

    t = time.gmtime(FIXED_MTIME)
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)


def _license_text() -> bytes:
    return (
        b"STAND-IN for NVIDIA_SLA_cuDNN_Support.txt, generated by bundler's tests.\r\n"
        b"This is NOT NVIDIA's license text. The real file ships in NVIDIA's cuDNN\r\n"
        b"archive and must be bundled next to the runtime DLLs.\r\n"
    )


def _header_text(name: str, cudnn_version: Version) -> bytes:
    # Long enough to compress: 7z stores a member that Deflate64 cannot shrink,
    # and the archive must be Deflate64 throughout, like NVIDIA's.
    lines = [
        "/*",
        f" * STAND-IN for NVIDIA's {name}, generated by bundler's tests.",
        " * It is not NVIDIA's header: only its name and its place in the archive",
        " * are real. Headers never go into an application bundle; this one exists",
        " * so that the archive has the same members as NVIDIA's archive.",
        " */",
        "#pragma once",
    ]
    if name == "cudnn_version.h":
        major, minor, patch, _ = cudnn_version
        lines += [f"#define CUDNN_MAJOR {major}", f"#define CUDNN_MINOR {minor}",
                  f"#define CUDNN_PATCHLEVEL {patch}",
                  "#define CUDNN_VERSION \\",
                  "    (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)"]
    elif name == "cudnn.h":
        lines += [f'#include "{header}"' for header in ZIP_HEADERS if header != "cudnn.h"]
    return ("\r\n".join(lines) + "\r\n").encode()


def _ar_archive(name: str) -> bytes:
    # A .lib is an ar archive; one text member keeps the stand-in well-formed.
    body = f"STAND-IN for NVIDIA's {name}, generated by bundler's tests.\n".encode()
    header = f"{'standin.txt/':<16}{FIXED_MTIME:<12}{0:<6}{0:<6}{644:<8}{len(body):<10}`\n"
    padding = b"\n" if len(body) % 2 else b""
    return b"!<arch>\n" + header.encode() + body + padding


def make_toolkit(dll_dir: Path, out_dir: Path, *, cuda: str | CudaNames = "10.1") -> Path:
    """Lay out a CUDA toolkit folder (like ...\\CUDA\\v10.1) with the CUDA DLLs of dll_dir."""
    names = cuda_names(cuda)
    (out_dir / "bin").mkdir(parents=True, exist_ok=True)
    (out_dir / "include").mkdir(exist_ok=True)
    for name in names.files:
        shutil.copyfile(dll_dir / name, out_dir / "bin" / name)
    (out_dir / "include" / "cuda_runtime_api.h").write_text(
        f"/* STAND-IN header for CUDA {names.version}, generated by bundler's tests. */\n"
        f"#define CUDART_VERSION {names.runtime_version}\n"
    )
    (out_dir / "version.txt").write_text(f"CUDA Version {names.full_version}\n")
    return out_dir
