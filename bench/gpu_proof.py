"""GPU proof on Linux: an app packed by bundler loads its bundled cuDNN, runs a real
convolution on the GPU, and maps no other cuDNN or CUDA library — with every NVIDIA
folder of the machine first on LD_LIBRARY_PATH.

    python bench/gpu_proof.py [--site-packages DIR] [--work DIR]

It reads NVIDIA's installed wheels (site-packages/nvidia: cudnn/lib and the CUDA
libraries' lib folders), writes a recipe for them (a folder source: the lock pins every
file on the first pack), packs a small app with `python -m bundler pack`, and runs the
packed app twice with LD_LIBRARY_PATH listing every site-packages/nvidia/*/lib folder:
as packed (the bootstrap preloads the bundle), and a control copy of the app without
the bootstrap lines. It prints the evidence as JSON: cudnnGetVersion, the convolution's
max abs error against a NumPy reference (when a GPU is there), and every cuDNN, cuBLAS,
cudart and NVRTC file mapped in each process. Exit 0 only if the packed app maps only
the bundle's copies and (with a GPU) the convolution matches.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WATCHED = re.compile(r"lib(cudnn|cublas|cudart|nvrtc)")

# The app: loads cuDNN and the CUDA runtime by bare name, as a framework does, then
# runs one convolution (implicit GEMM) and compares it with NumPy.
APP = r'''
import ctypes, json, os, sys

def mapped():
    with open("/proc/self/maps") as maps:
        fields = [line.split(None, 5) for line in maps]
    return sorted({f[5].strip() for f in fields if len(f) == 6 and ".so" in f[5]})

def main():
    cudnn = ctypes.CDLL("libcudnn.so.9", mode=os.RTLD_GLOBAL)
    cudnn.cudnnGetVersion.restype = ctypes.c_size_t
    out = {"cudnn_version": cudnn.cudnnGetVersion()}
    try:
        out["max_abs_err"] = convolve(cudnn)
    except Exception as exc:   # no GPU: the maps still say which files were loaded
        out["conv_error"] = f"{type(exc).__name__}: {exc}"
    out["mapped"] = [p for p in mapped() if any(k in os.path.basename(p) for k in
                                                ("cudnn", "cublas", "cudart", "nvrtc"))]
    print(json.dumps(out))

def convolve(cudnn):
    import numpy as np
    cudart = ctypes.CDLL(CUDART, mode=os.RTLD_GLOBAL)
    def ok(status, what):
        if status != 0:
            raise RuntimeError(f"{what} returned {status}")
    handle = ctypes.c_void_p()
    ok(cudnn.cudnnCreate(ctypes.byref(handle)), "cudnnCreate")
    n, c, h, w, k, r, s = 1, 3, 32, 32, 8, 3, 3
    x = np.random.RandomState(0).randn(n, c, h, w).astype(np.float32)
    f = np.random.RandomState(1).randn(k, c, r, s).astype(np.float32)
    oh, ow = h - r + 1, w - s + 1
    y = np.zeros((n, k, oh, ow), np.float32)
    def device(a):
        p = ctypes.c_void_p()
        ok(cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(a.nbytes)), "cudaMalloc")
        ok(cudart.cudaMemcpy(p, a.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(a.nbytes), 1),
           "cudaMemcpy")
        return p
    dx, df, dy = device(x), device(f), device(y)
    xd, yd, fd, cd = (ctypes.c_void_p() for _ in range(4))
    ok(cudnn.cudnnCreateTensorDescriptor(ctypes.byref(xd)), "tensor")
    ok(cudnn.cudnnCreateTensorDescriptor(ctypes.byref(yd)), "tensor")
    ok(cudnn.cudnnCreateFilterDescriptor(ctypes.byref(fd)), "filter")
    ok(cudnn.cudnnCreateConvolutionDescriptor(ctypes.byref(cd)), "convolution")
    NCHW, FLOAT, CROSS_CORRELATION, IMPLICIT_GEMM = 0, 0, 1, 0
    ok(cudnn.cudnnSetTensor4dDescriptor(xd, NCHW, FLOAT, n, c, h, w), "x")
    ok(cudnn.cudnnSetTensor4dDescriptor(yd, NCHW, FLOAT, n, k, oh, ow), "y")
    ok(cudnn.cudnnSetFilter4dDescriptor(fd, FLOAT, NCHW, k, c, r, s), "w")
    ok(cudnn.cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CROSS_CORRELATION, FLOAT),
       "conv")
    size = ctypes.c_size_t()
    ok(cudnn.cudnnGetConvolutionForwardWorkspaceSize(handle, xd, fd, cd, yd, IMPLICIT_GEMM,
                                                     ctypes.byref(size)), "workspace")
    space = ctypes.c_void_p()
    if size.value:
        ok(cudart.cudaMalloc(ctypes.byref(space), size), "cudaMalloc")
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    ok(cudnn.cudnnConvolutionForward(handle, ctypes.byref(one), xd, dx, fd, df, cd,
                                     IMPLICIT_GEMM, space, size, ctypes.byref(zero), yd, dy),
       "cudnnConvolutionForward")
    ok(cudart.cudaMemcpy(y.ctypes.data_as(ctypes.c_void_p), dy, ctypes.c_size_t(y.nbytes), 2),
       "cudaMemcpy")
    reference = np.zeros_like(y)
    for o in range(k):
        for i in range(oh):
            for j in range(ow):
                reference[0, o, i, j] = (x[0, :, i:i + r, j:j + s] * f[o]).sum()
    return float(abs(y - reference).max())

CUDART = "CUDART_SONAME"
main()
'''


def libraries(nvidia: Path) -> dict[str, list[Path]]:
    """The installed libraries by component: cuDNN's, and the CUDA runtime, cuBLAS and
    NVRTC it needs (the CUDA 13 wheels share nvidia/cu13/lib; earlier ones have a folder
    each)."""
    found = sorted(p for p in nvidia.glob("*/lib/*.so.*") if ".alt." not in p.name)
    def named(prefix: str) -> list[Path]:
        first = {}   # one copy of each name (a CUDA 12 and a CUDA 13 folder may both have one)
        for p in found:
            if re.match(rf"{prefix}\.so\.\d+(\.\d+)?$", p.name):
                first.setdefault(p.name, p)
        return list(first.values())
    return {"cudart": named("libcudart"), "cublas": named("libcublasLt") + named("libcublas"),
            "nvrtc": named("libnvrtc") + named("libnvrtc-builtins"),
            "cudnn": [p for p in found if p.parent.parent.name == "cudnn"
                      and p.name.startswith("libcudnn")]}


def dist_version(site: Path, pattern: str) -> str:
    found = sorted(site.glob(f"{pattern}-*.dist-info"))
    return found[-1].name.removesuffix(".dist-info").split("-")[1] if found else ""


def write_recipe(path: Path, nvidia: Path, site: Path) -> dict[str, list[Path]]:
    # Without cuBLAS and NVRTC installed (the CPU half's smaller set) cuDNN still loads:
    # it opens them only when an engine needs them.
    parts = {name: paths for name, paths in libraries(nvidia).items() if paths}
    cudnn = dist_version(site, "nvidia_cudnn_cu*")
    cuda = dist_version(site, "nvidia_cuda_runtime*")
    lines = ['name = "installed-cudnn-linux-x64"', 'platform = "linux-x86_64"',
             f'description = "cuDNN {cudnn} and the CUDA {cuda} libraries installed by pip"',
             "", "[versions]", f'cudnn = "{cudnn}"', f'cuda = "{".".join(cuda.split(".")[:2])}"',
             "", "[sources.nvidia]", 'kind = "folder"', "contents = ["]
    lines += [f'    "{p.relative_to(nvidia).as_posix()}",' for ps in parts.values() for p in ps]
    lines += ["]"]
    requires = {"cudart": [], "cublas": ["cudart"], "nvrtc": [],
                "cudnn": ["cudart", "cublas", "nvrtc"]}
    for name, paths in parts.items():
        refs = ", ".join(f'"nvidia:{p.relative_to(nvidia).as_posix()}"' for p in paths)
        lines += ["", f"[components.{name}]", f"files = [{refs}]",
                  f"requires = {json.dumps([r for r in requires[name] if r in parts])}"]
    shim = [p for p in parts["cudnn"] if p.name.startswith("libcudnn.so.")]
    subs = [p.name for p in parts["cudnn"] if p not in shim]
    if shim:   # it dlopens the sub-libraries by SONAME; they are preloaded before it
        lines += ["", f'[files."{shim[0].name}"]', f"loads = {json.dumps(subs)}"]
    path.write_text("\n".join(lines) + "\n")
    return parts


def run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-packages", type=Path,
                        default=Path(next(p for p in sys.path if p.endswith("site-packages"))))
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    site = args.site_packages
    nvidia = site / "nvidia"
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu-proof-"))
    (work / "app").mkdir(parents=True, exist_ok=True)
    parts = write_recipe(work / "installed-cudnn.toml", nvidia, site)
    cudart = parts["cudart"][0].name
    (work / "app" / "main.py").write_text(APP.replace("CUDART_SONAME", cudart))
    (work / "app.spec").write_text(
        '[app]\nname = "gpuproof"\npath = "app"\nentry = "main.py"\n\n[runtime]\n'
        'recipe = "installed-cudnn.toml"\n\n[sources]\n'
        f'nvidia = "{nvidia.as_posix()}"\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
        "BUNDLER_STORE": "off"}
    packed = json.loads(run([sys.executable, "-m", "bundler", "pack", str(work / "app.spec"),
                             "--json"], env))
    bundle = Path(packed["out"])
    # Every NVIDIA folder of this machine first: what a bundle must win against.
    decoys = sorted({str(p.parent) for p in nvidia.glob("*/lib/*.so*")})
    app_env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    app_env["LD_LIBRARY_PATH"] = os.pathsep.join(decoys + [app_env.get("LD_LIBRARY_PATH", "")])
    result = json.loads(run([sys.executable, str(bundle / "main.py")], app_env)
                        .strip().splitlines()[-1])
    (work / "control").mkdir(exist_ok=True)
    (work / "control" / "main.py").write_text((work / "app" / "main.py").read_text())
    control = json.loads(run([sys.executable, str(work / "control" / "main.py")], app_env)
                         .strip().splitlines()[-1])
    from_bundle = [p for p in result["mapped"] if p.startswith(str(bundle))]
    evidence = {
        "machine": os.uname().nodename, "python": sys.version.split()[0],
        "bundle": str(bundle), "load_order": packed["load_order"],
        "ld_library_path_first": decoys,
        "packed_app": result, "mapped_from_the_bundle": len(from_bundle),
        "mapped_from_elsewhere": [p for p in result["mapped"] if p not in from_bundle],
        "control_without_bootstrap_maps": control["mapped"],
    }
    print(json.dumps(evidence, indent=2))
    conv_ok = result.get("max_abs_err", 1.0) < 1e-3 or "conv_error" in result
    sys.exit(0 if from_bundle and not evidence["mapped_from_elsewhere"] and conv_ok else 1)


if __name__ == "__main__":
    main()
