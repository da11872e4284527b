"""`bundler doctor [APPDIR]`: what this machine — or this bundle on it — will load, and why.

One path for every platform, over a `Platform`: this machine's (registry.this_machine)
or the one a bundle's manifest names. Machine: every copy of a cuDNN/CUDA library its
bare-name load reaches, which copy it picks and which it shadows (the platform's
`bare_name_search`), each read as a file (damaged, word size, signature where the
platform signs); other platforms' library files on this machine's search variables, as
files; the NVIDIA driver (`probe_driver`, nvidia-smi); the installed frameworks against
the platform's driver table and how they open NVIDIA's libraries (`framework_opens`).

APPDIR: the bundle's files against its manifest (verify), whether each bundled library
would load here (machine, dependencies), whether the driver meets the runtime's
minimum (the bootstrap's own check), and which same-named copies a process that
skipped the bootstrap would pick up instead.

Gathering is in host.py; machine_checks.py (machine_frameworks.py) and bundle_checks.py
judge and render, findings.py holds what both report, view.py the public JSON (a
versioned view built on purpose, not a dump of these dataclasses). Each judgement is a
Finding: "problem" (exit 1), "ok", or "note".
"""

from bundler.diagnose.doctor.bundle_checks import BundleReport, examine_bundle, render_bundle
from bundler.diagnose.doctor.machine_checks import MachineReport, examine_machine, render_machine
from bundler.diagnose.doctor.view import bundle_view, machine_view

__all__ = ["BundleReport", "MachineReport", "bundle_view", "examine_bundle",
           "examine_machine", "machine_view", "render_bundle", "render_machine"]
