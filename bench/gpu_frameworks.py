"""GPU proof with real frameworks on Linux: a JAX app packed by bundler from the machine's
installed NVIDIA wheels runs its convolution on the GPU with exactly one copy of each
NVIDIA library in the process, the bundle's — and the same check fails, naming the
second copies, when the app's environment still holds the nvidia-* wheels JAX loads by
absolute path.

    python bench/gpu_frameworks.py [--site-packages DIR] [--work DIR]

Steps (each printed as evidence, JSON at the end):

1. `bundler pack` of a JAX app whose environment is the interpreter's own site-packages
   (which holds nvidia-cudnn-cu13 and the CUDA 13 wheels): refused (exit 2), the fix named.
2. The app's environment as the fix leaves it: a folder beside the work holding every
   entry of site-packages but the `nvidia` package and the `nvidia_*` wheels' metadata
   (what `pip uninstall` of those wheels leaves); `bundler pack` with `[scan] environment`
   naming it packs the runtime from the installed wheels (the recipe
   cudnn-9.19.0.56-cuda13-linux-x64, its NVRTC component too).
3. `bundler verify --run DIST -- python3 -S DIST/main.py` with that environment on
   PYTHONPATH: the app's convolution against a NumPy reference, and every NVIDIA library
   the process mapped, each once and from the bundle.
4. The control: the same packed app run in the full environment — verify --run must fail
   and name the site-packages copies JAX loaded beside the bundle's.
5. A torch app in the full environment: pack refuses it (torch loads nvidia/*/lib by
   absolute path), and what torch maps when run anyway.
6. `bundler doctor` of the bundle under the interpreter with the full environment: a
   problem, not healthy.

Exit 0 only when every step said what it should.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = "cudnn-9.19.0.56-cuda13-linux-x64"
# Every NVIDIA library JAX's CUDA plugin loads that the runtime set has (its
# _load_nvidia_libraries: cudart, NVRTC, cuBLAS, cuSPARSE, cuSOLVER, cuFFT, cuDNN; and
# nvJitLink, which cuSPARSE and cuSOLVER need), each from the installed wheels.
COMPONENTS = ["core", "graph", "ops", "cnn", "adv", "nvrtc", "cufft", "cusparse", "cusolver",
              "nvjitlink"]
SOURCES = ["cudnn", "cudart", "cublas", "nvrtc", "cufft", "cusparse", "cusolver", "nvjitlink"]
WATCHED = ("cudnn", "cublas", "cudart", "nvrtc", "cufft", "cusparse", "cusolver", "curand",
           "nccl", "nvJitLink", "cupti", "nvshmem")

JAX_APP = r'''
import json, os, sys
import numpy as np
import jax, jax.numpy as jnp
from jax import lax
from numpy.lib.stride_tricks import sliding_window_view

def mapped():
    with open("/proc/self/maps") as maps:
        fields = [line.split(None, 5) for line in maps]
    return sorted({f[5].strip() for f in fields if len(f) == 6 and ".so" in f[5]})

x = np.random.default_rng(0).standard_normal((2, 8, 32, 32), dtype=np.float32)
w = np.random.default_rng(1).standard_normal((16, 8, 3, 3), dtype=np.float32)
y = lax.conv_general_dilated(jnp.asarray(x), jnp.asarray(w), (1, 1), "VALID",
                             precision=lax.Precision.HIGHEST)
y = np.asarray(jax.block_until_ready(y))
reference = np.einsum("nchwij,ocij->nohw", sliding_window_view(x, (3, 3), axis=(2, 3)), w)
print(json.dumps({"jax": jax.__version__, "devices": [str(d) for d in jax.devices()],
                  "max_abs_err": float(np.abs(y - reference).max()),
                  "mapped": [p for p in mapped() if any(k in os.path.basename(p)
                                                         for k in WATCHED)],
                  "bootstrap": "_cudnn_bootstrap" in sys.modules}))
'''

TORCH_APP = r'''
import json, os
import torch

def mapped():
    with open("/proc/self/maps") as maps:
        fields = [line.split(None, 5) for line in maps]
    return sorted({f[5].strip() for f in fields if len(f) == 6 and ".so" in f[5]})

x = torch.randn(2, 8, 32, 32, device="cuda")
w = torch.randn(16, 8, 3, 3, device="cuda")
y = torch.nn.functional.conv2d(x, w)
reference = torch.nn.functional.conv2d(x.double().cpu(), w.double().cpu())
print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                  "max_abs_err": float((y.double().cpu() - reference).abs().max()),
                  "mapped": [p for p in mapped() if any(k in os.path.basename(p)
                                                         for k in WATCHED)]}))
'''


def run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(command), flush=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    print(f"  exit {done.returncode}\n  " + "\n  ".join(
        (done.stdout + done.stderr).strip().splitlines()[-40:]), flush=True)
    return done


def environment_without_nvidia(site: Path, into: Path) -> Path:
    """`site` as `pip uninstall` of NVIDIA's wheels leaves it: every entry but the `nvidia`
    package and the nvidia_* wheels' metadata. JAX's packages are copied (their libraries'
    RUNPATH, $ORIGIN/../../nvidia/cu13/lib, must not reach the original site-packages);
    the rest are links."""
    into.mkdir(parents=True, exist_ok=True)
    for entry in site.iterdir():
        if entry.name == "nvidia" or entry.name.startswith("nvidia_"):
            continue
        target = into / entry.name
        if target.exists() or target.is_symlink():
            continue
        if entry.name.startswith("jax") and entry.is_dir():
            shutil.copytree(entry, target, symlinks=True)
        else:
            target.symlink_to(entry)
    return into


def write_app(folder: Path, source: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "main.py").write_text(f"WATCHED = {WATCHED!r}\n" + source)


def write_spec(path: Path, name: str, app: str, site: Path, environment: Path) -> None:
    path.write_text(
        f'[app]\nname = "{name}"\npath = "{app}"\nentry = "main.py"\n\n'
        f'[runtime]\nrecipe = "{RECIPE}"\n'
        f'components = {json.dumps(COMPONENTS)}\n\n'
        f'[scan]\nenvironment = "{environment.as_posix()}"\n\n'
        '[sources]\n' + "".join(f'{sid} = "{site.as_posix()}"\n' for sid in SOURCES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site-packages", type=Path,
                        default=Path(next(p for p in sys.path if p.endswith("site-packages"))))
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    site: Path = args.site_packages
    work: Path = args.work or Path(tempfile.mkdtemp(prefix="gpu-frameworks-"))
    bundler_env = {**os.environ, "BUNDLER_STORE": "off", "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))}
    bundler = [sys.executable, "-m", "bundler"]
    evidence: dict[str, object] = {"site_packages": str(site)}
    ok = True

    write_app(work / "jax", JAX_APP)
    full = work / "jax-full.spec"
    write_spec(full, "jx", "jax", site, site)
    refused = run(bundler + ["pack", str(full)], bundler_env)
    evidence["pack_in_full_environment"] = {"exit": refused.returncode,
                                            "message": refused.stderr.strip()[-600:]}
    ok &= refused.returncode == 2

    clean = environment_without_nvidia(site, work / "env-without-nvidia")
    spec = work / "jax.spec"
    write_spec(spec, "jx", "jax", site, clean)
    packed = run(bundler + ["pack", str(spec), "--json"], bundler_env)
    ok &= packed.returncode == 0
    if packed.returncode != 0:
        print(json.dumps(evidence, indent=2))
        sys.exit(1)
    dist = Path(json.loads(packed.stdout)["out"])
    app_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    clean_env = {**app_env, "PYTHONPATH": str(clean)}
    checked = run(bundler + ["verify", "--run", str(dist), "--json", "--", "env",
                             f"PYTHONPATH={clean}", sys.executable, "-S", str(dist / "main.py")],
                  bundler_env)
    evidence["verify_run_clean"] = {"exit": checked.returncode,
                                    "report": _json_or_text(checked.stdout)}
    ok &= checked.returncode == 0
    result = run([sys.executable, "-S", str(dist / "main.py")], clean_env)
    app = _last_json(result.stdout)
    from_bundle = [p for p in app.get("mapped", []) if p.startswith(str(dist))]
    evidence["jax_app_clean"] = {**app, "mapped_from_the_bundle": len(from_bundle),
                                 "mapped_from_elsewhere": [p for p in app.get("mapped", [])
                                                           if p not in from_bundle]}
    ok &= result.returncode == 0 and app.get("max_abs_err", 1.0) < 1e-3

    control = run(bundler + ["verify", "--run", str(dist), "--json", "--", "env", "-u",
                             "PYTHONPATH", sys.executable, str(dist / "main.py")], bundler_env)
    evidence["verify_run_full_environment"] = {"exit": control.returncode,
                                               "report": _json_or_text(control.stdout)}
    ok &= control.returncode == 1

    doctor = run(bundler + ["doctor", str(dist)], bundler_env)
    evidence["doctor_full_environment"] = {"exit": doctor.returncode,
                                           "tail": doctor.stdout.strip().splitlines()[-8:]}
    ok &= doctor.returncode == 1

    write_app(work / "torch", TORCH_APP)
    torch_spec = work / "torch.spec"
    write_spec(torch_spec, "tx", "torch", site, site)
    torch_pack = run(bundler + ["pack", str(torch_spec)], bundler_env)
    evidence["torch_pack_in_full_environment"] = {"exit": torch_pack.returncode,
                                                  "message": torch_pack.stderr.strip()[-600:]}
    ok &= torch_pack.returncode == 2
    evidence["ok"] = bool(ok)
    print(json.dumps(evidence, indent=2))
    sys.exit(0 if ok else 1)


def _last_json(text: str) -> dict:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {}


def _json_or_text(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text.strip()[-2000:]


if __name__ == "__main__":
    main()
