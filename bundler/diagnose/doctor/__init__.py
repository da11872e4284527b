"""`bundler doctor [APPDIR]`: what this machine — or this bundle on it — will load, and why.

Machine: every cuDNN/cuDART/cuBLAS DLL reachable through the DLL search path and the
CUDA_PATH folders, which copy a bare-name load picks and which are shadowed; the
NVIDIA driver and the CUDA it supports; 32-bit DLLs; the installed frameworks
against compat.toml.

APPDIR: the bundle's files against its manifest (verify), whether each bundled DLL
would load here (machine, dependencies), whether the driver meets the runtime's
minimum (the bootstrap's own check), and which same-named DLLs a process that
skipped the bootstrap would pick up instead.

Gathering is in host.py; machine_checks.py and bundle_checks.py judge and render,
findings.py holds what both report. Each judgement is a
Finding: "problem" (exit 1), "ok", or "note".
"""

from bundler.diagnose.doctor.bundle_checks import BundleReport, examine_bundle, render_bundle
from bundler.diagnose.doctor.machine_checks import MachineReport, examine_machine, render_machine

__all__ = ["BundleReport", "MachineReport", "examine_bundle", "examine_machine",
           "render_bundle", "render_machine"]
