"""`bundler doctor APPDIR`: one copy of each NVIDIA library in the app's process, where
doctor can see the app's Python environment (bundler/frameworks/environment.py: the bundle's
own site-packages, else the Python doctor runs under when the bundle is for this
machine, for the frameworks the app's scripts import). A framework there that loads
NVIDIA's libraries by path from nvidia-* wheels the bundle also provides maps a second
copy beside the bundle's: a problem, the same one pack refuses (pack/one_copy.py)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from bundler.diagnose.doctor.findings import OK, PROBLEM, Finding
from bundler.formats.manifest import Manifest
from bundler.frameworks.environment import app_environment, second_copies
from bundler.targets.registry import Platform

FIX = ("install the framework's \"local CUDA\" variant (e.g. jax[cuda13-local], "
       "onnxruntime-gpu without [cuda,cudnn]) or pip uninstall {wheels}, then re-run "
       "`bundler pack`")


def environment_findings(platform: Platform, root: Path, manifest: Manifest) -> list[Finding]:
    environment = app_environment(root, platform, skip=root / manifest.runtime_dir)
    if not environment.loaders:
        return []
    names = [PurePosixPath(e.path).name for e in manifest.files]
    copies = second_copies(environment, names, platform)
    loaders = ", ".join(x.title for x in environment.loaders)
    if not copies:
        return [Finding(OK, "bundle", f"{loaders} loads NVIDIA's libraries by path, and "
                        f"{environment.described} holds no nvidia-* wheel with a library "
                        "the bundle provides: one copy of each in the process")]
    held = "; ".join(f"{c.wheel.title} ({', '.join(c.libraries)}, in {c.wheel.site})"
                     for c in copies)
    mapped = sorted({n for c in copies for n in c.libraries})
    return [Finding(PROBLEM, "bundle", f"{environment.described} holds {held}, which "
                    f"{loaders} loads by path after the bootstrap ran: the process maps "
                    f"both those and the bundle's {', '.join(mapped)}",
                    FIX.format(wheels=" ".join(c.wheel.distribution for c in copies)))]
