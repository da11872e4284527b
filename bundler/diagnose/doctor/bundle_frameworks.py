"""`bundler doctor APPDIR`: does the bundle's runtime serve the frameworks the app ships?

The same rule pack refuses by (bundler/frameworks/facts.py): each framework installed in
the bundle's site-packages says, in its own build-info file or its driver-table row, the
CUDA it is built for and the oldest cuDNN it runs on. A bundle whose runtime is of another
CUDA family or an older cuDNN (packed before pack checked, or its runtime changed since)
is a problem naming the framework and the file."""

from __future__ import annotations

from pathlib import Path

from bundler.diagnose.doctor.findings import OK, PROBLEM, Finding
from bundler.formats.manifest import Manifest
from bundler.frameworks.facts import fits, fitting_releases, frameworks_in
from bundler.targets.registry import Platform


def framework_findings(platform: Platform, root: Path, manifest: Manifest) -> list[Finding]:
    runtime = root / manifest.runtime_dir
    facts = frameworks_in(root, platform.driver_table(),
                          lambda here, dirs: {d for d in dirs if here / d == runtime})
    cuda, cudnn = manifest.versions.cuda, manifest.versions.cudnn
    findings = []
    for framework in facts:
        if framework.unreadable:
            findings.append(Finding(PROBLEM, "framework", f"{framework.title}'s build-info "
                                    f"file cannot be read ({framework.unreadable}): the "
                                    "CUDA and cuDNN it needs are unknown",
                                    f"reinstall {framework.distribution}"))
            continue
        if framework.ships_own_runtime or not framework.gpu_build:
            continue   # torch brings its own CUDA; a CPU build needs none
        reason = fits(framework, cuda, cudnn)
        if reason is None:
            wanted, by = framework.cudnn_minimum()
            said = f" (cuDNN >= {wanted}, {by})" if wanted else ""
            findings.append(Finding(OK, "framework", f"{framework.title} runs on the "
                                    f"bundle's CUDA {cuda} / cuDNN {cudnn}{said}"))
            continue
        releases = [r.name for r in fitting_releases([framework], platform.release_suffix)]
        findings.append(Finding(
            PROBLEM, "framework", f"{manifest.recipe.name}: {reason}",
            f"re-pack with a release that fits: {', '.join(releases)}" if releases
            else "no release bundler knows fits it"))
    return findings
