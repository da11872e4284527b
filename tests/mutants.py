"""Break the bootstrap, doctor, the lock, --zip, the embedded-python builder, the Linux
release families, the glibc check, the Linux bootstrap's refusal, Linux doctor and
Linux input layouts one mechanism at a time; see which tests notice.

    python3 -m tests.mutants            # every mutant
    python3 -m tests.mutants flags0     # one, by name

Each mutant is one textual change (README, "What the bootstrap does, and why", the
doctor findings, docs/formats.md's lock rules, the zip's determinism). It is applied
to a copy of this checkout (the repository is never changed), the tests that cover it
run there with `-x`, and the mutant is reported killed (a test failed) or survived
(every test passed). Exit 1 if any survived. Needs the Wine harness (tests/setup.sh);
about a minute per bootstrap mutant, seconds for the lock and zip ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOTSTRAP = "bundler/runtime/activation.py"   # the pieces pack assembles the bootstrap of
BOOT_WINDOWS = "bundler/runtime/loader_windows.py"
BOOT_LINUX = "bundler/runtime/loader_linux.py"
PROCESS_CHECK = "bundler/diagnose/process_check.py"
PROCESS_TESTS = ("tests/linux/test_linux_process_truth.py",)
PROCESS_JUDGE = "bundler/diagnose/process_judge.py"
PROCESS_RUN = "bundler/diagnose/process_run.py"
TRACE_LINUX = "bundler/linux/process_trace.py"
PROCESS_DECOY_TESTS = ("tests/linux/test_linux_process_decoys.py",)
BUNDLE_CHECKS = "bundler/diagnose/doctor/bundle_checks.py"
BOOTSTRAP_TESTS = ("tests/wine/test_bootstrap_mechanisms.py", "tests/wine/test_pack_windows.py",
                   "tests/wine/test_doctor_wine.py")
DOCTOR_TESTS = ("tests/wine/test_bootstrap_mechanisms.py", "tests/wine/test_doctor_wine.py",
                "tests/unit/test_doctor_logic.py")
LOCK = "bundler/pack/lock.py"
ZIP = "bundler/pack/zip/output.py"
LOCK_TESTS = ("tests/integration/test_lock_conventions.py",)
EMBED = "bundler/pack/builders/embedded_python.py"
EMBED_TESTS = ("tests/integration/test_embedded_python.py",
               "tests/wine/test_embedded_python_wine.py")
EMBED_VERIFY_TESTS = ("tests/integration/test_embedded_python_verify.py",)
RELOCK = "bundler/pack/wheel_lock.py"
RELOCK_TESTS = ("tests/integration/test_embedded_python_relock.py",)
TARGET_RESOLVE = "bundler/pack/builders/target_resolve.py"
REQUIREMENT_FILES = "bundler/pack/requirement_files.py"
TARGET_TESTS = ("tests/integration/test_embedded_python_target.py",)
ZIP_TESTS = ("tests/integration/test_zip_output.py",)
ZIP_WRITER = "bundler/pack/zip/writer.py"
ZIP_STREAMS = "bundler/pack/store/zip_streams.py"
ZIP_REUSE_TESTS = ("tests/integration/test_zip_reuse.py",)
ZIP_UNREAD_TESTS = ("tests/integration/test_zip_unread.py",)
ZIP_UNCHANGED = "bundler/pack/zip/unchanged.py"
ZIP_UNCHANGED_TESTS = ("tests/integration/test_zip_unchanged.py",)
ZIP_LEVEL_TESTS = ("tests/integration/test_zip_level.py",)
PROGRESS_TESTS = ("tests/integration/test_progress_lines.py",)
UP_TO_DATE = "bundler/pack/up_to_date.py"
UP_TO_DATE_TESTS = ("tests/integration/test_up_to_date.py",)
FRESH_STAMPS = "bundler/pack/fresh_stamps.py"
FRESH_INPUT_TESTS = ("tests/integration/test_up_to_date_inputs.py",)
HASHED = "bundler/pack/store/hashed.py"
HASHED_TESTS = ("tests/integration/test_store_hashed.py",)
INSTALLED_AGAIN = "bundler/pack/builders/installed_again.py"
INSTALLED_AGAIN_TESTS = ("tests/integration/test_embedded_python_installed_again.py",)
SCAN_MEMO = "bundler/pack/scan_memo.py"
SCAN_MEMO_TESTS = ("tests/integration/test_scan_memo.py",)
# Issue 42 items 1 and 3 (the store's owners; what a lock pins).
TRUST = "bundler/pack/store/trust.py"
OWNERS_TESTS = "tests/integration/test_store_owners.py"
VERIFY = "bundler/diagnose/verify.py"
LOCK_BUNDLE_TESTS = "tests/integration/test_lock_bundle.py"
INIT_TESTS = ("tests/integration/test_init.py",)
# Issue 42 item 4 (hostile files of the app), item 2 (the bootstrap's imports) and
# issue 40 item 3's last clause (a bundle run on another OS says so).
HOSTILE_TESTS = ("tests/integration/test_hostile_app_files.py",)
SHADOW_TESTS = ("tests/linux/test_bootstrap_shadows.py",)
FACTS = "bundler/frameworks/facts.py"
NAMES = "bundler/frameworks/loaded_names.py"
FACTS_TESTS = ("tests/integration/test_framework_facts.py",)
INIT_FITS_TESTS = ("tests/integration/test_init_fits.py",)
REFUSAL_HINT_TESTS = ("tests/integration/test_refusal_hints.py",)
LINUX_RELEASE_TESTS = ("tests/linux/test_linux_releases.py",)
GLIBC_TESTS = ("tests/linux/test_linux_glibc.py",)
LINUX_DOCTOR_TESTS = ("tests/linux/test_linux_doctor.py",)
ROWS_TESTS = ("tests/integration/test_framework_rows.py",)
RECIPES_FOR_TESTS = ("tests/integration/test_recipes_for.py",)
# Issue 43 item 5: each runtime once on disk (the wheel or its files in the store).
PINS = "bundler/pack/store/pins.py"
WHEEL_ONCE_TESTS = ("tests/integration/test_wheel_once.py", "tests/unit/test_store_pins.py")


@dataclass(frozen=True)
class Mutant:
    name: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS = (
    # Issue 43: the framework table's last gaps, releases chosen from the framework.
    Mutant("tf-2-4-row-short", "TensorFlow 2.4's row lists three of its eight libraries "
           "(init+pack made a bundle on which TF ran on the CPU)",
           "bundler/windows/compat.toml",
           'loads = ["cudart64_110.dll", "cublas64_11.dll", "cublasLt64_11.dll", '
           '"cufft64_10.dll",\n         "curand64_10.dll", "cusolver64_10.dll", '
           '"cusparse64_11.dll", "cudnn64_8.dll"]\n\n# TensorFlow 2.5.3',
           'loads = ["cudart64_110.dll", "cublas64_11.dll", "cudnn64_8.dll"]\n\n# TensorFlow 2.5.3',
           ROWS_TESTS),
    Mutant("tagged-build-takes-the-plain-row", "Paddle's 2.2.2.post101 (CUDA 10.1) is judged "
           "by the PyPI build's row (CUDA 10.2)", "bundler/platforms/driver_table.py",
           "        if build_tag(version) != self.local:",
           "        if self.local and build_tag(version) != self.local:", ROWS_TESTS),
    Mutant("paddle-tag-unread", "a Paddle version tag no row has says no CUDA",
           "bundler/frameworks/build_names.py", "    if found:\n        digits = found.group(1)",
           "    if False:\n        digits = found.group(1)", ROWS_TESTS),
    Mutant("hint-zips-first", "a refusal's hint and recipes --for put login-only zips before "
           "the PyPI releases pack fetches", "bundler/frameworks/fitting.py",
           "key=lambda r: (fetchable(r), version_tuple(r.cudnn), version_tuple(r.cuda))",
           "key=lambda r: (version_tuple(r.cudnn), version_tuple(r.cuda))",
           RECIPES_FOR_TESTS),
    Mutant("hint-release-lacks-a-library", "a release whose runtime set lacks a library the "
           "framework loads is suggested (TF 2.4: every CUDA 11 release)",
           "bundler/frameworks/fitting.py", "        if not loads or _ships_all(release, loads):",
           "        if True:", ROWS_TESTS),
    Mutant("nowhere-cuda-unsaid", "a library no release ships is refused without the CUDA "
           "that has it", "bundler/pack/app_needs.py",
           "            ) or _nowhere(recipe, need, app_cuda, frameworks)",
           '            ) or "no recipe bundler knows has it"', ROWS_TESTS),
    Mutant("framework-wheel-unread", "recipes --for judges a framework by its table row, "
           "never its wheel", "bundler/init/wheel_facts.py",
           "    return Looked(requirement, wheel_facts(wheel, platform), wheel.name, where)",
           '    return Looked(requirement, None, missing="unread")', RECIPES_FOR_TESTS),
    Mutant("init-pins-by-name-only", "init judges a requirements pin by its name and row, "
           "never its wheel (cupy-cuda12x 13.6 got cuDNN 9, which pack refuses)",
           "bundler/init/requirements.py",
           "    found = requested(lines, platform, [*links, *find_links], offline, "
           "pinned_only=True)",
           "    found = requested(lines, platform, [], True, pinned_only=True)",
           RECIPES_FOR_TESTS),
    Mutant("framework-wheel-kept", "a framework wheel fetched to read two files is kept "
           "whole in the wheel cache (hundreds of MB each)", "bundler/init/wheel_facts.py",
           '                _unpack(got[0], folder / "site")\n'
           "                shutil.rmtree(kept, ignore_errors=True)\n"
           '                os.replace(folder / "site", kept)\n',
           "                os.replace(got[0], kept)\n", RECIPES_FOR_TESTS),
    Mutant("manylinux-tags-narrow", "pip is asked for the target's manylinux_2_27 tag alone "
           "(a manylinux2014 wheel is not found)", "bundler/init/wheel_facts.py",
           "    tags = [f\"{name}_{major}_{n}_{arch}\" for n in range(minor, 4, -1)]",
           "    return [tag]", RECIPES_FOR_TESTS),
    Mutant("cache-frameworks-unseen", "bundler cache neither shows nor prunes what was "
           "read of framework wheels", "bundler/pack/store/caches.py",
           "        elif folder.name == FRAMEWORKS and folder.is_dir():",
           "        elif False:", RECIPES_FOR_TESTS),
    Mutant("recipes-for-cpu-build-listed", "recipes --for lists every release for a CPU "
           "build (which needs none)", "bundler/commands/recipes_for.py",
           "    needing = [f for f in found.frameworks if f.gpu_build and not "
           "f.ships_own_runtime]",
           "    needing = list(found.frameworks)", RECIPES_FOR_TESTS),
    Mutant("refusal-suggests-a-zip", "a refusal's catalogue suggestion is the newest "
           "login-only zip, not the PyPI release pack fetches", "bundler/releases/render.py",
           "    return (wheels or fitting)[-1].name if fitting else \"\"",
           "    return fitting[-1].name if fitting else \"\"", ROWS_TESTS),
    Mutant("build-info-call-taken", "a call in a build-info file (x = f(5)) is taken as "
           "no value, not as a file that cannot be read", "bundler/frameworks/facts.py",
           '                raise ValueError("a call")\n', "                return None\n",
           HOSTILE_TESTS),
    Mutant("build-info-version-unchecked", "a CUDA or cuDNN figure that is no version "
           "('v8.6', []) is compared as an empty one (fits() stopped with an IndexError)",
           "bundler/frameworks/facts.py",
           "bad = _unprintable_figure(said) or _not_a_version(said)",
           "bad = _unprintable_figure(said)", HOSTILE_TESTS),
    Mutant("build-info-pipe-absent", "a build-info file that is a pipe, a device or a folder "
           "is taken as absent", "bundler/frameworks/facts.py", "if os.path.lexists(path):",
           "if path.is_file():", HOSTILE_TESTS),
    Mutant("scan-binary-unchecked", "the app scan opens a binary without checking it is a "
           "regular file (a pipe hangs it)", "bundler/pack/app_scan.py",
           "            require_scannable(path, str(path))", "            pass", HOSTILE_TESTS),
    Mutant("scan-binary-unbounded", "the app scan reads a binary of any size (a sparse 20 GB "
           "one for minutes)", "bundler/frameworks/loaded_names.py",
           "MAX_BINARY_BYTES = 4 << 30", "MAX_BINARY_BYTES = 1 << 60", HOSTILE_TESTS),
    Mutant("metadata-read-plainly", "a dist-info's METADATA is read with a plain read (a pipe "
           "hangs it)", "bundler/frameworks/installed.py",
           'return read_bounded(path, MAX_METADATA_BYTES).decode("utf-8", "replace")',
           'return path.read_text("utf-8", "replace")', HOSTILE_TESTS),
    Mutant("recipes-read-per-name", "every shipped recipe is read again for each name a "
           "refusal looks up", "bundler/recipe/load.py",
           "    return list(_read_recipes(tuple(stamps)))",
           "    return [load_recipe_file(path) for path, _ in stamps]", HOSTILE_TESTS),
    Mutant("bootstrap-imports-unguarded", "the bootstrap's imports run with the app's folder "
           "first on sys.path (a json.py beside main.py runs in it)", "bundler/pack/emit.py",
           'guarded = "with _StandardLibraryFirst():\\n"', 'guarded = "if True:\\n"',
           SHADOW_TESTS),
    Mutant("injected-lines-import-files", "the lines added to main.py import importlib.util "
           "from sys.path (an importlib/ beside main.py runs first under -S)",
           "bundler/pack/emit.py", "import sys as _bundler_sys, _frozen_importlib as "
           "_bundler_util\n", "import sys as _bundler_sys, importlib.util as _bundler_util\n",
           SHADOW_TESTS),
    Mutant("shadows-left-cached", "the standard library's modules the app shadows stay in "
           "sys.modules (the app's own import json gets the standard one)",
           "bundler/runtime/first.py", "                    del sys.modules[module]",
           "                    pass", SHADOW_TESTS),
    Mutant("stdlib-in-app-set-aside", "the bootstrap's guard takes the standard library of "
           "an embedded CPython inside the app's folder for the app's modules",
           "bundler/runtime/first.py",
           'return bool(file) and not any(key.startswith(s + "/") for s in self.standard) \\',
           'return bool(file) and not any(False for s in self.standard) \\',
           ("tests/wine/test_embedded_python_wine.py",)),
    Mutant("wrong-os-silent", "a bundle run on another OS does nothing and says nothing",
           "bundler/runtime/activation.py",
           "        _not_for_this_os()  # nothing of it can load here: said, not silent",
           "        pass", SHADOW_TESTS),
    # Issue 27 items 1-2: frameworks describe themselves; their minimums are enforced.
    Mutant("framework-file-unread", "the app scan does not read a framework's build-info "
           "file", FACTS, "            if os.path.lexists(path):", "            if False:",
           FACTS_TESTS),
    Mutant("table-minimum-ignored", "the driver table's cuDNN minimum is not a minimum",
           FACTS, "        if self.row is not None and self.row.cudnn:\n",
           "        if False:\n", FACTS_TESTS),
    Mutant("cudnn-minimum-unchecked", "a cuDNN older than the framework's own is accepted",
           FACTS, "if have[:1] != floor[:1] or have < floor:", "if have[:1] != floor[:1]:",
           FACTS_TESTS),
    Mutant("cudnn-major-unchecked", "a newer cuDNN major (9 for an 8.6.0 framework) fits",
           FACTS, "if have[:1] != floor[:1] or have < floor:", "if have < floor:",
           FACTS_TESTS),
    Mutant("cuda-family-unchecked", "a runtime of another CUDA family fits", FACTS,
           "if built and cuda and not same_cuda_family(built, cuda):", "if False:",
           FACTS_TESTS),
    Mutant("unreadable-facts-ignored", "a build-info file that cannot be read is ignored",
           FACTS, "        if facts.unreadable:\n", "        if False:\n", FACTS_TESTS),
    Mutant("fit-checked-after-inputs", "pack opens the recipe's inputs before the fit check",
           "bundler/pack/pipeline.py", "        refuse_unfit_release(spec.recipe, "
           "spec.app_path)\n", "        pass\n", FACTS_TESTS),
    Mutant("loaded-names-unread", "the app scan ignores the names binaries load by name",
           "bundler/pack/app_scan.py",
           "            loaded = loaded_from(held.names, platform).names\n",
           "            loaded = ()\n", FACTS_TESTS),
    Mutant("utf16-names-missed", "names held as UTF-16LE (LoadLibraryW's) are not read",
           NAMES, "for run in _UTF16.finditer(around):", "for run in _UTF16.finditer(b''):",
           FACTS_TESTS),
    Mutant("piece-overlap-lost", "a name cut by the 8 MiB piece boundary is missed", NAMES,
           "            tail = window[-_LONGEST:]\n", "            tail = b''\n",
           FACTS_TESTS),
    Mutant("loader-not-required", "names count in a binary that calls no loader", NAMES,
           "    if not loader:\n", "    if False:\n", FACTS_TESTS),
    Mutant("loader-first-hit-only", "only the first place a loader's name could start is "
           "checked", NAMES, "            at = window.find(literal, at + 1)\n",
           "            at = -1\n", FACTS_TESTS),
    Mutant("fallbacks-demanded", "every version a binary names is demanded", NAMES,
           "chosen = group if len(group) == 1 else real if len(real) == 1 else []",
           "chosen = group", FACTS_TESTS),
    Mutant("fallback-shipped-unpicked", "of a fallback list, the name a runtime ships is "
           "not demanded", NAMES, "else real if len(real) == 1 else []", "else []",
           FACTS_TESTS),
    Mutant("fit-reads-old-bundles", "pack's first check reads the frameworks of an earlier "
           "bundle inside the app folder", "bundler/pack/app_scan.py",
           "lambda here, dirs: outputs_in(here, dirs, None))", "None)", FACTS_TESTS),
    Mutant("doctor-frameworks-unjudged", "doctor does not judge a bundle's frameworks by "
           "pack's rule", "bundler/diagnose/doctor/bundle_frameworks.py",
           "reason = fits(framework, cuda, cudnn)", "reason = None", FACTS_TESTS),
    # Paddle 2.5-2.6 loads nvjpeg64_11.dll by name: the CUDA 11 runtime set ships it.
    Mutant("paddle-nvjpeg-unlisted", "the Paddle 2.5-2.6 row does not list nvjpeg64_11.dll",
           "bundler/windows/compat.toml",
           'below = "2.7"\ncuda = "11.8"\ncudnn = "8.6.0"\nloads = ["cublas64_11.dll", '
           '"cudnn64_8.dll", "cufft64_10.dll", "cusolver64_11.dll",\n         '
           '"cusparse64_11.dll", "nvjpeg64_11.dll"]',
           'below = "2.7"\ncuda = "11.8"\ncudnn = "8.6.0"\nloads = ["cublas64_11.dll", '
           '"cudnn64_8.dll", "cufft64_10.dll", "cusolver64_11.dll",\n         '
           '"cusparse64_11.dll"]', INIT_FITS_TESTS),
    Mutant("cuda11-nvjpeg-by-default", "the CUDA 11 cuDNN 8.9.4 recipe ships nvJPEG to "
           "every app", "recipes/cudnn-8.9.4.25-cuda11-win-x64.toml",
           "[components.nvjpeg]\ndefault = false\n", "[components.nvjpeg]\ndefault = true\n",
           ("tests/integration/test_app_scan.py",)),
    Mutant("cuda11-set-nvjpeg-by-default", "the CUDA 11 runtime set ships nvJPEG to every "
           "app", "recipes/families/cuda11-win-x64.toml",
           "[components.nvjpeg]\ndefault = false\n", "[components.nvjpeg]\ndefault = true\n",
           ("tests/integration/test_releases.py", "tests/linux/test_linux_releases.py")),
    Mutant("launcher-drops-arguments", "embedded-python: the .cmd does not pass %*", EMBED,
           '"%~dp0{script}" %*\'', '"%~dp0{script}"\'', EMBED_TESTS),
    Mutant("pth-without-the-app", "embedded-python: the ._pth leaves the app folder out",
           EMBED, 'lines = ["..", f"python{embed.tag}.zip"', 'lines = [f"python{embed.tag}.zip"',
           EMBED_TESTS),
    Mutant("embedded-entry-without-bootstrap", "embedded-python: no bootstrap in the entry",
           EMBED, "built = build_folder_app(spec, recipe, staging, target, options)",
           "built = build_folder_app(__import__('dataclasses').replace(spec, entry=''), "
           "recipe, staging, target, options)", EMBED_TESTS),
    Mutant("resolve-with-host-markers", "embedded-python: the requirements are resolved "
           "with this machine's markers (Linux), not the target's", TARGET_RESOLVE,
           '"--python-platform", target.platform,', '"--python-platform", "linux",',
           TARGET_TESTS),
    Mutant("resolve-with-minor-version", "embedded-python: the requirements are resolved "
           "for CPython 3.X.0, not the bundle's full version", TARGET_RESOLVE,
           'target.python, "--only-binary"', 'target.python[:4], "--only-binary"',
           TARGET_TESTS),
    Mutant("lock-target-unchecked", "embedded-python: a lock whose wheels were resolved "
           "for another target (or none recorded) is installed as it is", RELOCK,
           "or old.wheels_for != wheels_target(spec, platform)):", "):", TARGET_TESTS),
    Mutant("hash-pins-unchecked", "embedded-python: the requirement files' --hash pins "
           "are not checked against the resolved wheels", "bundler/pack/builders/pip_wheels.py",
           "    if pins is None:\n        return resolved\n",
           "    if True:\n        return resolved\n",
           TARGET_TESTS),
    Mutant("requirements-boms-ignored", "a UTF-16 requirements file (PowerShell 5's pip "
           "freeze >) is read as UTF-8", REQUIREMENT_FILES, "for bom, encoding in _BOMS:",
           "for bom, encoding in ():", TARGET_TESTS),
    Mutant("missing-find-links-passed", "a --find-links folder that does not exist is "
           "handed to uv (which fails) instead of left out as pip does", REQUIREMENT_FILES,
           "if not local.is_dir():", "if False:", RELOCK_TESTS),
    Mutant("repack-resolves-again", "embedded-python: a re-pack with unchanged requirement "
           "files resolves with pip instead of installing the lock's wheels", RELOCK,
           "if (spec.requirements is None or old is None", "if (True or old is None",
           RELOCK_TESTS),
    Mutant("nested-requirements-unrecorded", "the lock records the top requirements file "
           "only, not the -r/-c files it names", LOCK,
           "if nested := nested_files(requirements):", "if nested := {}:", RELOCK_TESTS),
    Mutant("locked-requirements-checked-late", "--locked compares the requirement files "
           "with the lock only after the pack's work", RELOCK,
           'if policy != "locked" or old is None or old.spec is None',
           "if True", RELOCK_TESTS),
    Mutant("cached-wheel-unhashed", "a locked wheel in the cache is taken by its name, not "
           "checked by its sha256", "bundler/pack/builders/pip_wheels.py",
           "return kept.is_file() and sha256_file(kept, f\"hashing {kept.name}\") == sha256",
           "return kept.is_file()", RELOCK_TESTS),
    Mutant("download-hint-without-offline", "a failed pip download does not suggest "
           "--offline when the wheel cache keeps wheels", "bundler/pack/builders/pip_wheels.py",
           "               if kept else \"\")", "               if False else \"\")",
           RELOCK_TESTS),
    Mutant("wheel-data-misplaced", "embedded-python: a wheel's .data/purelib files land "
           "under the .data folder, not in site-packages", "bundler/pack/builders/wheel_install.py",
           '"purelib": rest, "platlib": rest,', '"purelib": f"{data}/purelib/{rest}", '
           '"platlib": rest,', ("tests/unit/test_wheel_install.py",)),
    Mutant("wheel-escapes-site-packages", "embedded-python: a wheel member with '..' is "
           "written outside site-packages", "bundler/pack/builders/wheel_install.py",
           'if path.is_absolute() or ".." in path.parts or', "if False and",
           ("tests/unit/test_wheel_install.py",)),
    Mutant("no-add-dll-directory", "os.add_dll_directory is not called", BOOT_WINDOWS,
           "_dll_directory = os.add_dll_directory(runtime_folder())", "pass",
           BOOTSTRAP_TESTS),
    Mutant("flags0", "LoadLibraryExW flags 0 instead of 0x1100", BOOT_WINDOWS,
           "_LOAD_FLAGS = 0x00001100", "_LOAD_FLAGS = 0", BOOTSTRAP_TESTS),
    Mutant("alphabetical", "preload in name order, not the manifest's load_order",
           BOOT_WINDOWS, 'for relpath in manifest.get("load_order", [])]',
           'for relpath in sorted(manifest.get("load_order", []))]',
           BOOTSTRAP_TESTS),
    Mutant("linux-alphabetical", "Linux: preload in name order, not the manifest's load_order",
           BOOT_LINUX, 'for relpath in manifest.get("load_order", []):\n        path = ',
           'for relpath in sorted(manifest.get("load_order", [])):\n        path = ',
           ("tests/linux/test_linux_bundle.py", "tests/linux/test_linux_bootstrap_stops.py")),
    Mutant("no-same-name-check", "a same-named DLL already loaded is not refused",
           BOOT_WINDOWS,
           "if existing and not same_file(existing, path):", "if False:", BOOTSTRAP_TESTS),
    Mutant("no-driver-check", "activate() skips the driver check", BOOT_WINDOWS,
           "    global _dll_directory\n    check_driver()\n", "    global _dll_directory\n",
           BOOTSTRAP_TESTS),
    Mutant("no-runtime-load-findings", "doctor: _runtime_load_findings returns []",
           BUNDLE_CHECKS, "    component was not selected): harmless unless a foreign copy is "
           'on the search path."""\n',
           "    component was not selected): harmless unless a foreign copy is "
           'on the search path."""\n    return []\n', DOCTOR_TESTS),
    Mutant("no-system32-check", "doctor: the System32/VC++ presence check is off",
           BUNDLE_CHECKS, 'if dep.status == "system" and system and not '
           "_system_dll_present(dep.name, system):", "if False:", DOCTOR_TESTS),
    Mutant("optional-signature-without-hash", "signature_optional lets an unsigned DLL "
           "through without a known sha256", "bundler/pack/signatures.py",
           "elif found.status == UNSIGNED and item.file.signature_optional \\\n"
           "                and vouched.get(item.file.source):",
           "elif found.status == UNSIGNED and item.file.signature_optional:",
           ("tests/integration/test_trust_ladder.py",)),
    Mutant("known-hashes-without-the-catalogue", "an archive's known sha256 is the recipe "
           "pin alone, not NVIDIA's archive as the catalogue records it",
           "bundler/pack/signatures.py",
           'release = find_release(recipe.name) if spec.kind == "archive" else None',
           "release = None", ("tests/integration/test_trust_ladder.py",)),
    Mutant("trust-line-is-the-recipes-text", "the summary's input line is the recipe's "
           "static text, not what the pack checked", "bundler/pack/signatures.py",
           "    own = [entry for entry in files if entry.source == sid]\n",
           "    return recipe.sources[sid].trust\n", ("tests/integration/test_trust_ladder.py",)),
    Mutant("manifest-without-inputs", "the manifest does not record how each input was "
           "vouched for", "bundler/pack/emit.py",
           "require_driver=require_driver, built=built,\n"
           "        inputs=tuple(InputTrust(sid, text) for sid, text in "
           "sorted(resolved.trust.items())))",
           "require_driver=require_driver, built=built)",
            ("tests/integration/test_trust_ladder.py",)),
    Mutant("release-number-only-where-named", "cudnnGetVersion is compared only in the DLL "
           "the recipe names (the shim's is not read)", "bundler/pack/resolve.py",
           "elif number is not None and number != wanted:",
           "elif number is not None and number != wanted and file.cudnn_get_version:",
           ("tests/integration/test_release_evidence.py",)),
    Mutant("file-version-release-ignored", "a FileVersion naming another cuDNN release is "
           "not compared", "bundler/pack/resolve.py",
           "if said and not file.version and _is_cudnn(recipe.target, name) and",
           "if False and said and not file.version and _is_cudnn(recipe.target, name) and",
           ("tests/integration/test_release_evidence.py",)),
    Mutant("recipes-shows-static-trust", "bundler recipes shows the recipe's static trust "
           "text, not the ladder a pack applies", "bundler/commands/cmd_recipes.py",
           "f\"{ladder(recipe, source.id)}\")", "f\"{source.trust}\")",
           ("tests/integration/test_trust_ladder.py",)),
    Mutant("lock-pins-no-manifest", "verify --lock ignores the lock's manifest and entry pins",
           "bundler/diagnose/verify.py", "    _check_locked_bundle(found, lock, report, hashes)\n",
           "", ("tests/integration/test_lock_bundle.py",)),
    Mutant("lock-records-no-bundle", "the pack writes no manifest/entry pins into the lock",
           "bundler/pack/pipeline.py", "components=[c.name for c in selection.components], "
           "bundle=bundle)", "components=[c.name for c in selection.components])",
           ("tests/integration/test_lock_bundle.py",)),
    Mutant("locked-lets-an-app-edit-by", "--locked writes a lock whose entry pin moved", LOCK,
           "if changes or by_spec or outputs:", "if changes or by_spec:",
           ("tests/integration/test_lock_bundle.py",)),
    Mutant("lock-ignores-the-spec", "a spec change is refused like a changed input", LOCK,
           "refused = _input_changes(old, new, file_sources or {}) if by_spec else changes",
           "refused = changes", LOCK_TESTS),
    Mutant("lock-trusts-a-spec-change", "a spec change lets any changed input through",
           LOCK, 'if old.recipe.name != new.recipe.name:\n        return []',
           "if True:\n        return []", LOCK_TESTS),
    Mutant("locked-lets-changes-by", "--locked packs whatever changed", LOCK,
           "        if changes or by_spec or outputs:\n", "        if False:\n", LOCK_TESTS),
    Mutant("spec-change-swaps-archive", "a spec change lets a replaced archive in",
           LOCK, "return kind is not None and kind.one_file", "return False",
           ("tests/integration/test_lock_source_pins.py",)),
    Mutant("no-format-1", "a format-1 lock is refused", "bundler/formats/lockfile.py",
           "READ_FORMATS = (1, 2)", "READ_FORMATS = (2,)", LOCK_TESTS),
    Mutant("zip-of-this-moment", "zip members carry the current time", ZIP_WRITER,
           "_DOS_DATE = (0 << 9) | (1 << 5) | 1",
           "_DOS_DATE = ((__import__('time').localtime().tm_year - 1980) << 9) | 33",
           ZIP_TESTS),
    Mutant("zip-replaces-any-zip", "--zip replaces a zip bundler did not write", ZIP,
           "if path.exists() and not _written_by_bundler(path, target.name):", "if False:",
           ("tests/integration/test_zip_paths.py",)),
    Mutant("zip-in-walk-order", "zip members in the order the folder lists them", ZIP,
           "return sorted(found, key=lambda entry: entry[1])", "return found", ZIP_TESTS),
    Mutant("zip-before-the-swap", "the zip is published before the bundle is swapped in",
           "bundler/pack/pipeline.py",
           "for i in staged}, zip_level)\n"
           "        if zipped is not None:\n            zipped.publish()\n",
           "for i in staged}, zip_level)\n"
           "                zipped.publish()\n", ZIP_TESTS),
    Mutant("zip-shipped-by-the-next-pack", "the folder builder copies a bundle's zip",
           "bundler/pack/builders/folder.py", "elif is_bundle_zip(folder / name):",
           "elif False:", ("tests/integration/test_zip_paths.py",)),
    Mutant("zip-modes-of-this-machine", "a Windows bundle's zip takes this machine's modes",
           ZIP, "return path.suffix.lower() in _WINDOWS_EXECUTABLE",
           "return bool(path.stat().st_mode & stat.S_IXUSR)",
            ("tests/integration/test_zip_paths.py",)),
    Mutant("embedded-python-unlisted", "embedded-python: python/ and the launcher are not "
           "in the manifest", EMBED, "made=(PYTHON_DIR, launcher.name), left_out=left_out,",
           "left_out=left_out,", EMBED_VERIFY_TESTS),
    Mutant("verify-skips-built", "verify does not check the files a builder added",
           "bundler/diagnose/verify.py", "    _check_built(found, report, hashes)\n", "",
           EMBED_VERIFY_TESTS),
    Mutant("requirements-not-locked", "the lock records app.requirements' path, not its "
           "contents", LOCK, 'if requirements is not None and requirements.is_file() and '
           '"app" in record:', "if False:", EMBED_VERIFY_TESTS),
    Mutant("zip-partials-kept", "--zip: a killed pack's temporary zip is never removed", ZIP,
           "    remove_stale_partials(path)\n", "", ("tests/integration/test_zip_partial.py",)),
    Mutant("zip-partial-shipped", "--zip: a killed pack's temporary zip is app content",
           ZIP, "    if _PARTIAL.fullmatch(path.name):\n", "    if False:\n",
           ("tests/integration/test_zip_partial.py",)),
    # Issue 30 item 2: --zip reuses work.
    Mutant("zip-streams-not-reused", "--zip: every member is compressed again", ZIP_WRITER,
           "return self._streams.find(content, member.size), content",
           "return None, content", ZIP_REUSE_TESTS),
    Mutant("zip-stream-unchecked", "--zip: a kept stream is copied without its hash checked",
           ZIP_STREAMS, "if digest.hexdigest() != kept.record.stream_sha256 or \\\n",
           "if False and \\\n", ZIP_REUSE_TESTS),
    Mutant("zip-record-unsealed", "--zip: a kept stream's record is read without its seal",
           ZIP_STREAMS, "body = unseal(self._key, _KIND, key,",
           "body = (lambda *a: a[3].get('body'))(self._key, _KIND, key,", ZIP_REUSE_TESTS),
    Mutant("zip-key-ignores-settings", "--zip: a stream of another level is reused",
           ZIP_STREAMS, 'f"{content_sha256}\\0{self._settings}"', 'f"{content_sha256}"',
           ZIP_REUSE_TESTS),
    Mutant("zip-rehashes-staged", "--zip: files the pack hashed as it staged them are read "
           "again", "bundler/pack/pipeline.py",
           "{str(i.path): i.sha256 for i in staged}, zip_level)", "{}, zip_level)",
           ZIP_REUSE_TESTS),
    # Issue 41 item 4: an edit re-packed with --zip copies the kept streams unread.
    Mutant("zip-stream-stamp-unchecked", "--zip: a kept stream with a record of its last "
           "hash is copied unread whatever its stamp", ZIP_STREAMS,
           "        if now[0] != kept.record.compressed or hashed.known(\n"
           "                self._root, self._key, kept.key, now, _HASHED) is None:\n",
           "        if False:\n", ZIP_UNREAD_TESTS),
    Mutant("zip-stream-records-unused", "--zip: every kept stream is read and hashed again",
           ZIP_STREAMS, "        before = self._proven(kept)\n",
           "        before = None\n", ZIP_UNREAD_TESTS),
    Mutant("zip-stream-hash-unrecorded", "--zip: a kept stream read and hashed leaves no "
           "record of its stamp", ZIP_STREAMS,
           "            if self._clock is not None and stamp(kept.path) == before:",
           "            if False:",
           ZIP_UNREAD_TESTS),
    Mutant("zip-stream-copy-unrechecked", "--zip: a stream written while the kernel copies "
           "it is taken", ZIP_STREAMS,
           "        if done == kept.record.compressed and self._proven(kept) == before:",
           "        if done == kept.record.compressed:", ZIP_UNREAD_TESTS),
    Mutant("zip-stream-record-outlives-stream", "--zip: a dropped (pruned, trimmed) stream "
           "leaves the record of its last hash", ZIP_STREAMS,
           "        for path in (*self._paths(key), _HASHED.path(self._root, key)):",
           "        for path in self._paths(key):", ZIP_UNREAD_TESTS),
    Mutant("zip-stream-orphan-records-kept", "cache prune leaves the records of streams "
           "deleted by hand", "bundler/pack/store/caches.py",
           "            streams.drop_orphans()   # records of streams deleted by hand\n",
           "            pass\n", ZIP_UNREAD_TESTS),
    Mutant("zip-stream-records-of-object-kind", "--zip: a stream's record of its last hash "
           "is sealed as an object's (one is taken for the other)", ZIP_STREAMS,
           '_HASHED = hashed.Records("hashed-zip-stream",',
           '_HASHED = hashed.Records("hashed-object",', ZIP_UNREAD_TESTS),
    Mutant("zip-compare-hashes-before-walk", "--zip: an edited bundle's old zip has its "
           "streams hashed before the walk finds the edit", ZIP_UNCHANGED,
           "        self.streams.append((start, record.compressed, record.stream_sha256, "
           "record.size))\n", "        self.streams.append((start, record.compressed, "
           "record.stream_sha256, record.size)) or self._hashes.submit(_stream_sha256, "
           "self._path, start, record.compressed).result()\n", ZIP_UNREAD_TESTS),
    Mutant("file-copy-no-fallback", "a kernel that refuses copy_file_range (EXDEV, ENOSYS) "
           "fails the copy", "bundler/support/file_copy.py",
           "        except OSError:   # ENOSYS, EXDEV, EINVAL...: this way cannot copy these "
           "files\n            continue\n", "        except OSError:\n            raise\n",
           ZIP_UNREAD_TESTS),
    Mutant("zip-one-lane", "--zip: pieces are compressed on one thread", ZIP_WRITER,
           'ThreadPoolExecutor(self._workers, thread_name_prefix="zip")',
           'ThreadPoolExecutor(1, thread_name_prefix="zip")', ZIP_REUSE_TESTS),
    Mutant("zip-streams-untrimmed", "--zip: kept streams ignore the store's size cap", ZIP,
           "        streams.trim(frozenset(writer.used))\n", "        pass\n",
           ZIP_REUSE_TESTS),
    Mutant("zip-rewritten-unchanged", "--zip: a zip that holds the bundle's bytes is "
           "written again", ZIP, "        if unchanged is not None:\n            return "
           "unchanged\n", "        if False:\n            return unchanged\n",
           ZIP_UNCHANGED_TESTS),
    Mutant("zip-unchanged-streams-unhashed", "--zip: an unchanged zip's streams are taken "
           "unread", ZIP_UNCHANGED, "                same = future.result() == expected\n",
           "                same = True\n", ZIP_UNCHANGED_TESTS),
    Mutant("zip-unchanged-end-unchecked", "--zip: bytes after a zip's end pass as unchanged",
           ZIP_UNCHANGED, "            if out.tell() != size:\n                return None\n",
           "            if False:\n                return None\n",
           ZIP_UNCHANGED_TESTS),
    Mutant("zip-unchanged-publish-unchecked", "--zip: a zip changed after its check is left",
           ZIP, "            if _stamp(self.final) != self.checked:\n",
           "            if False:\n", ZIP_UNCHANGED_TESTS),
    Mutant("zip-unchanged-change-time-ignored", "--zip: a careful write (size and mtime "
           "put back) to a zip during its check goes unseen", ZIP,
           "        return stamp(path)\n", "        return stamp(path)[:2]\n",
           ZIP_UNCHANGED_TESTS),
    Mutant("fresh-listing-unchecked", "up to date: an entry added to a recorded folder "
           "goes unseen", FRESH_STAMPS,
           "    for kind in (\"folders\", \"listed\"):\n        for root, entries in then[kind]",
           "    for kind in ():\n        for root, entries in then[kind]", UP_TO_DATE_TESTS),
    Mutant("fresh-debris-unseen", "up to date: a killed --zip's debris is left",
           FRESH_STAMPS, "if is_pack_file_of(path, entry.name))", "if False)",
           UP_TO_DATE_TESTS),
    Mutant("fresh-change-time-ignored", "up to date: a file written with its size and "
           "modification time put back passes", "bundler/support/file_stamps.py",
           "    return facts.st_size, facts.st_mtime_ns, facts.st_ctime_ns, facts.st_ino,",
           "    return facts.st_size, facts.st_mtime_ns, 0, facts.st_ino,",
           UP_TO_DATE_TESTS),
    Mutant("fresh-unreadable-is-absent", "up to date: a file whose stamp cannot be read "
           "counts as absent, so a record stays true while it changes",
           FRESH_STAMPS, "    except (FileNotFoundError, NotADirectoryError):\n        return None",
           "    except OSError:\n        return None", UP_TO_DATE_TESTS),
    Mutant("fresh-unreadable-entry-is-absent", "up to date: a folder entry whose stamp "
           "cannot be read counts as gone", "bundler/support/file_stamps.py",
           "        except FileNotFoundError:\n            facts = None",
           "        except OSError:\n            facts = None", UP_TO_DATE_TESTS),
    Mutant("fresh-windows-listing-by-creation", "up to date on Windows: a folder's entries "
           "carry the creation time for the change time", "bundler/support/file_stamps.py",
           "info.change or info.creation", "info.creation",
           ("tests/wine/test_file_stamps_wine.py",)),
    Mutant("fresh-windows-creation-time", "up to date on Windows: Python's st_ctime (the "
           "creation time) stands for the change time, so a careful edit passes",
           "bundler/support/file_stamps.py",
           "    _stamp, _listing = _windows_stamp, _windows_listing\n", "",
           ("tests/wine/test_file_stamps_wine.py",)),
    Mutant("fresh-record-unsealed", "up to date: a record is believed without its seal",
           UP_TO_DATE, "body = unseal(key, _KIND, pack.name, read_json(",
           'body = (lambda *given: given[3]["body"])(key, _KIND, pack.name, read_json(',
           UP_TO_DATE_TESTS),
    Mutant("fresh-own-code-unwatched", "up to date: a changed bundler is not a change",
           "bundler/pack/pipeline.py", "folders = [target, own_code(), shipped_recipe_dir()]",
           "folders = [target, shipped_recipe_dir()]", UP_TO_DATE_TESTS),
    Mutant("fresh-options-unkeyed", "up to date: another --zip, --copy or --out is not a "
           "change", UP_TO_DATE, "for name, value in options.items()}",
           "for name, value in {}.items()}", UP_TO_DATE_TESTS),
    Mutant("fresh-variables-unkeyed", "up to date: a changed PIP_/BUNDLER_ variable is not a "
           "change", UP_TO_DATE, "if name.startswith(_VARIABLE_PREFIXES) or name in _VARIABLES}",
           "if False}", UP_TO_DATE_TESTS),
    Mutant("fresh-zip-unstamped", "up to date: a removed zip is not a change",
           "bundler/pack/pipeline.py", "files.append(zip_path)", "pass",
           UP_TO_DATE_TESTS),
    Mutant("fresh-inputs-written-mid-pack", "up to date: a pack that wrote into its own "
           "app folder (a lock, a zip in an app of \".\") is recorded", UP_TO_DATE,
           "            _changed_since(taken, {str(path) for path in made.outputs}, started):",
           "            False:", ("tests/integration/test_zip_paths.py",)),
    Mutant("installed-records-outlive-bundles", "cache prune keeps the installed/ record "
           "of an embedded-python bundle that is gone", "bundler/pack/builders/installed_again.py",
           "if not isinstance(body, dict) or not Path(str(bundle)).is_dir():",
           "if not isinstance(body, dict):", ("tests/integration/test_scan_memo.py",)),
    Mutant("scan-records-outlive-bundles", "cache prune keeps what was read of binaries no "
           "bundle holds any more", "bundler/pack/scan_memo.py",
           "        if path.stem not in named:\n", "        if False:\n",
           ("tests/integration/test_scan_memo.py",)),
    Mutant("init-unread-requirements-unsaid", "init passes a requirements.txt it does not "
           "read (a link, a named pipe) by in silence", "bundler/init/command.py",
           "    for line in unread_requirements(app, spec.parent):\n",
           "    for line in ():\n", ("tests/integration/test_hostile_files.py",)),
    Mutant("fresh-locked-kept-lock", "up to date: a --locked pack that kept a lock the next "
           "pack rewrites is recorded", "bundler/pack/pipeline.py",
           "if builder.inputs_known and _lock_is(spec.lock_path, lock.to_bytes())",
           "if builder.inputs_known", FRESH_INPUT_TESTS),
    Mutant("fresh-nested-requirements-unstamped", "up to date: an edited -r/-c file of "
           "the requirements is not a change", "bundler/pack/pipeline.py",
           "        files += [spec.requirements.parent / name   # a URL's file is pip's",
           "        files += [] and [spec.requirements.parent / name   # a URL's file is pip's",
           ("tests/integration/test_embedded_python_relock.py",)),
    # Issue 41 items 1-4: what was read, shared store objects, why in full, no re-reads.
    Mutant("fresh-link-target-unstamped", "up to date: a link is stamped, not what it "
           "points to (a toolkit file linked elsewhere, its target edited)", FRESH_STAMPS,
           "    return list(target) if target is not None else _DANGLING\n",
           "    return []\n", FRESH_INPUT_TESTS),
    Mutant("fresh-inputs-unresolved", "up to date: `~` and links in an input's path are "
           "not resolved into the key (another HOME)", "bundler/commands/cmd_pack.py",
           '               "inputs": _inputs_here(spec, args)}', "               }",
           FRESH_INPUT_TESTS),
    Mutant("fresh-shipped-recipes-unwatched", "up to date: an edited family file of the "
           "shipped recipes is not a change", "bundler/pack/pipeline.py",
           "folders = [target, own_code(), shipped_recipe_dir()]",
           "folders = [target, own_code()]", FRESH_INPUT_TESTS),
    Mutant("fresh-dependencies-unwatched", "up to date: an edited dependency of bundler is "
           "not a change", "bundler/pack/pipeline.py",
           "    modules, packages = own_dependencies()\n",
           "    modules, packages = [], []\n", FRESH_INPUT_TESTS),
    Mutant("fresh-dependency-versions-unkeyed", "up to date: another version of a "
           "dependency is not a change", UP_TO_DATE,
           "version for name, version in dependencies().items()}",
           "version for name, version in {}.items()}", FRESH_INPUT_TESTS),
    Mutant("fresh-environment-unlisted", "up to date: a wheel added to the site-packages "
           "the one-copy check examines is not a change", "bundler/pack/pipeline.py",
           "listed=python_environment.interpreter_site_packages(),", "listed=(),",
           FRESH_INPUT_TESTS),
    Mutant("fresh-folder-itself-unstamped", "up to date: a folder's own stamp is not kept "
           "(an app file deleted while the pack ran; a bundle moved and linked back)",
           FRESH_STAMPS, "found: dict[str, Stamp | None] = {ROOT: file_stamp(root)}",
           "found: dict[str, Stamp | None] = {}", FRESH_INPUT_TESTS),
    Mutant("fresh-shared-objects-distrusted", "up to date: another bundle's link to the "
           "same store objects packs in full", FRESH_STAMPS,
           "                if name in shared and _only_linked(was, is_now):\n",
           "                if False:\n", FRESH_INPUT_TESTS),
    Mutant("fresh-shared-object-bytes-unread", "up to date: a store object whose change "
           "time moved is taken unread", FRESH_STAMPS,
           "    if digest.hexdigest() != sha256 or after != now:\n",
           "    if False:\n", FRESH_INPUT_TESTS),
    Mutant("fresh-why-unsaid", "a full pack does not say why", "bundler/commands/cmd_pack.py",
           '    say(f"bundler: packing in full: {why}")\n', "", FRESH_INPUT_TESTS),
    # Issue 41: the previous bundle's site-packages taken again (builders/installed_again.py).
    Mutant("installed-again-unused", "every embedded-python re-pack unpacks its wheels "
           "again", INSTALLED_AGAIN, "    if record is None or record.get(\"set\") != made_from:",
           "    if True:", INSTALLED_AGAIN_TESTS),
    Mutant("installed-again-stamp-unchecked", "a previous site-packages file is taken by "
           "its record whatever its stamp now", INSTALLED_AGAIN,
           "isinstance(recorded, list) and list(now) == recorded \\\n"
           "                and now[2] < at:",
           "True:", INSTALLED_AGAIN_TESTS),
    Mutant("installed-again-own-writes-stamped", "the pack that unpacked the wheels records "
           "the stamps of files it wrote (a write before the stamp goes unseen)",
           INSTALLED_AGAIN, "        then = proven.get(relpath)\n",
           "        then = proven.get(relpath) or stamp(site / relpath, follow_links=False)\n",
           INSTALLED_AGAIN_TESTS),
    Mutant("scan-memo-unused", "the app scan reads every binary again on every pack",
           SCAN_MEMO, "    return ScanMemo(store.root, store.key, digests) if",
           "    return None if", SCAN_MEMO_TESTS),
    Mutant("scan-memo-keyed-by-path", "the app scan takes what it read from a file at the "
           "same path, whatever its bytes now", SCAN_MEMO,
           "        sha256 = self.digests.get(relpath)\n",
           "        sha256 = hashlib.sha256(relpath.encode()).hexdigest() \\\n"
           "            if relpath in self.digests else None\n", SCAN_MEMO_TESTS),
    Mutant("hashed-stamp-unchecked", "the store takes an object's recorded hash whatever its "
           "stamp now", HASHED, 'body["stamp"] != list(now) or', "False or",
           HASHED_TESTS + FRESH_INPUT_TESTS),
    Mutant("hashed-racy-recorded", "the store records a stamp in the clock's tick (a write "
           "in the same tick goes unseen)", HASHED,
           "    if not proven[2] < at:\n        return False\n", "", HASHED_TESTS),
    Mutant("hashed-racy-believed", "the store believes a record whose clock is not past its "
           "stamp", HASHED, "                not now[2] < int(body[\"at\"]):",
           "                False:", HASHED_TESTS),
    Mutant("hashed-relinked-blindly", "after a link the store records the stamp even where "
           "the file's size or modification time moved", HASHED,
           "        if _same_but_change_time(now, proof.stamp):\n",
           "        if True:\n", HASHED_TESTS),
    Mutant("hashed-records-outlive-objects", "prune leaves the store's records of the "
           "objects it removed", "bundler/pack/store/upkeep.py",
           "        if not store.object_path(record_path.stem).exists():",
           "        if False:", HASHED_TESTS),
    Mutant("hashed-records-unused", "every stored object is read again on every pack",
           "bundler/pack/reuse.py",
           "if known is not None and (member not in with_crc or known.crc is not None):",
           "if False:", HASHED_TESTS),
    Mutant("fresh-objects-not-marked-used", "up to date: the bundle's store objects age "
           "under the size cap", "bundler/commands/cmd_pack.py",
           "            _mark_used(freshness.store, fresh)\n", "", UP_TO_DATE_TESTS),
    Mutant("fresh-recheck-ignored", "pack --recheck answers up to date",
           "bundler/commands/cmd_pack.py", "    if freshness is not None and not args.recheck:",
           "    if freshness is not None:",
           UP_TO_DATE_TESTS),
    Mutant("zip-bar-under-json", "pack --json draws progress bars",
           "bundler/commands/cmd_pack.py",
           "with silenced(args.json or args.quiet):", "with silenced(args.quiet):",
           ZIP_REUSE_TESTS),
    # Issue 41 items 5-6: progress outside a terminal; --zip by ISA-L, --zip-level.
    Mutant("progress-lines-never", "off a terminal long steps print nothing (a CI log "
           "shows no progress)", "bundler/support/progress.py",
           "    return _shown() and not _wanted()", "    return False", PROGRESS_TESTS),
    Mutant("progress-interval-fixed", "$BUNDLER_PROGRESS_INTERVAL is ignored",
           "bundler/support/progress.py", "        every = interval()\n",
           "        every = DEFAULT_INTERVAL\n", PROGRESS_TESTS),
    Mutant("progress-lines-under-quiet", "pack --quiet prints progress lines",
           "bundler/commands/cmd_pack.py", "with silenced(args.json or args.quiet):",
           "with silenced(args.json):", PROGRESS_TESTS),
    Mutant("zip-fast-is-zlib-6", "--zip compresses with zlib 6 by default, not ISA-L",
           "bundler/support/deflate.py", 'return Compressor("isal", _FAST_ISAL) if isal',
           'return Compressor("zlib", 6) if isal', ZIP_LEVEL_TESTS),
    Mutant("zip-fast-without-isal-is-isal", "--zip without ISA-L installed still asks for "
           "it", "bundler/support/deflate.py", "            else Compressor(\"zlib\", _FAST_ZLIB)",
           "            else Compressor(\"isal\", _FAST_ISAL)", ZIP_LEVEL_TESTS),
    Mutant("zip-level-unchecked", "--zip-level takes any digits (0, 10, other scripts' "
           "digits)", "bundler/support/deflate.py",
           'if len(level) == 1 and level in "123456789":', "if level.isdigit():",
           ZIP_LEVEL_TESTS),
    Mutant("zip-level-ignored", "--zip-level is not handed to the zip",
           "bundler/pack/pipeline.py", "for i in staged}, zip_level)",
           "for i in staged}, None)", ZIP_LEVEL_TESTS),
    Mutant("zip-level-unkeyed", "up to date: a pack at another --zip-level is not a change",
           "bundler/commands/cmd_pack.py", '               "zip_level": args.zip_level.settings,\n',
           "", ZIP_LEVEL_TESTS),
    Mutant("zip-key-ignores-isal-version", "--zip: a stream another ISA-L made is reused",
           "bundler/support/deflate.py",
           'return (f"isal {isal.__version__} (ISA-L {isal.ISAL_VERSION}) "',
           'return (f"isal (ISA-L) "', ZIP_LEVEL_TESTS),
    Mutant("zip-key-ignores-processor", "--zip: a stream ISA-L made on another processor "
           "(other code, other bytes) is reused", "bundler/support/deflate.py",
           'f"level {self.level}, sample {_sample_digest(self)}")',
           'f"level {self.level}, sample 0000000000000000")',
           ZIP_LEVEL_TESTS),
    Mutant("zip-progress-per-member", "--zip: progress is told once a member is done, not "
           "piece by piece", ZIP_WRITER, "                if step > 0:   # progress as",
           "                if False:   # progress as", ZIP_REUSE_TESTS),
    Mutant("zip-killed-zip-needs-zip", "a killed --zip's temporary zip is removed only by a "
           "pack of that zip", "bundler/pack/pipeline.py",
           "            remove_killed_zip(target)   # a killed --zip's, whether this pack zips "
           "or not\n", "", ("tests/integration/test_zip_partial.py",)),
    Mutant("zip-spec-key-ignored", "--zip: the spec's app.zip is not written",
           "bundler/pack/pipeline.py", "zip_to = zip_to or spec.zip", "zip_to = zip_to",
           ("tests/integration/test_zip_partial.py",)),
    Mutant("init-no-entry-guess", "init: main.py, __main__.py, app.py are not looked for",
           "bundler/init/writer.py", "named = [by_name[n] for n in ENTRY_NAMES if n in by_name]",
           "named: list[str] = []", INIT_TESTS),
    Mutant("init-always-default", "init: the default recipe whatever the app needs",
           "bundler/init/choice.py", "    if not names and not constraining and not any(",
           "    if True or not any(", INIT_TESTS),
    Mutant("init-no-why", "init: the components without the lines saying why",
           "bundler/init/writer.py",
           'lines.append(f"    # {component}: {comment_text(reason)}")', "pass", INIT_TESTS),
    Mutant("init-overwrites", "init: an existing spec is not refused first",
           "bundler/init/command.py", "if spec.exists() or spec.is_symlink():", "if False:",
           INIT_TESTS),
    Mutant("init-finds-nothing", "init: no input is looked for beside the app",
           "bundler/init/inputs.py", "found = _match(spec, nearby, inside=True)",
           "found = None", INIT_TESTS),
    Mutant("init-not-beside-the-spec", "init: the folders beside the spec's are not searched",
           "bundler/init/inputs.py", "if spec_folder.parent != spec_folder:", "if False:",
           INIT_TESTS),
    Mutant("init-recipe-not-from-inputs", "init: the release of an input found here is not "
           "chosen", "bundler/init/choice.py", "        if fitting:\n", "        if False:\n",
           INIT_TESTS),
    Mutant("init-scripts-unread", "init: the DLLs the app's scripts name are not read",
           "bundler/init/choice.py",
           "            if platform.is_library(name) and (\n",
           "            if False and (\n", INIT_TESTS),
    Mutant("init-frameworks-ignored", "init: the frameworks' figures do not narrow the "
           "releases", "bundler/init/choice.py",
           "if all(fits(f, r.cuda, r.cudnn) is None for f in frameworks)]", "if True]",
           INIT_FITS_TESTS),
    Mutant("init-login-zip-first", "init: a login-only zip is not put after PyPI wheels",
           "bundler/init/choice.py", "key=lambda r: (r.name in have, _fetchable(r))",
           "key=lambda r: r.name in have", INIT_FITS_TESTS),
    Mutant("cuda-name-unread", "a build's name (cupy-cuda101) says no CUDA",
           "bundler/frameworks/build_names.py",
           "    found = _CUDA_IN_NAME.match(normalize(distribution))\n",
           "    found = None\n", INIT_FITS_TESTS),
    Mutant("init-outside-toolkit-first", "init: a toolkit beside the project counts as "
           "the project's", "bundler/init/inputs.py",
           "if nearby.outside(folder) != inside\n", "if True\n", INIT_FITS_TESTS),
    Mutant("init-outside-zip-quiet", "init: a zip beside the project counts as the "
           "project's", "bundler/init/inputs.py",
           "            if nearby.outside(path) == inside:\n                continue\n", "",
           INIT_FITS_TESTS),
    Mutant("init-outside-chooses-release", "init: a release's zip beside the project "
           "chooses the release", "bundler/init/inputs.py",
           "if path.name.lower() in by_file and not found.outside(path)]",
           "if path.name.lower() in by_file]", INIT_FITS_TESTS),
    Mutant("init-comments-unescaped", "init: a file name is written raw into a comment",
           "bundler/init/writer.py", 'return "".join(c if c.isprintable() else',
           'return text or "".join(c if c.isprintable() else', INIT_FITS_TESTS),
    Mutant("init-scans-git", "init: needs and copies under .git count",
           "bundler/init/choice.py", '    return _VCS in path.split("/")',
           "    return False", INIT_FITS_TESTS),
    Mutant("init-unreadable-unsaid", "init: a build-info file pack cannot read is not "
           "said", "bundler/init/choice.py",
           '"refuses it: reinstall it" for f in frameworks if f.unreadable)',
           '"refuses it: reinstall it" for f in frameworks if False)', INIT_FITS_TESTS),
    Mutant("init-path-not-checked", "init: a non-UTF-8 path goes into the spec (exit 3)",
           "bundler/init/writer.py", '        text.encode("utf-8")\n',
           '        text.encode("utf-8", "surrogateescape")\n', INIT_FITS_TESTS),
    Mutant("init-requirements-unread", "init: requirements.txt pins name no framework",
           "bundler/init/requirements.py", "    lines, links = lines_of([str(path)])",
           "    lines, links = [], []", INIT_FITS_TESTS),
    Mutant("init-never-embedded", "init: never the embedded-python builder",
           "bundler/init/command.py",
           'if asked == "folder" or (asked is None and requirements is None):', "if True:",
           INIT_FITS_TESTS),
    Mutant("init-no-allow-unsigned-line", "init: no commented allow_unsigned for a zip by "
           "path", "bundler/init/writer.py", """return [*lines, '# allow_unsigned""",
           """return [] and [*lines, '# allow_unsigned""", INIT_TESTS),
    Mutant("hint-any-cuda-recipe", "a refusal names a shipped recipe of another CUDA",
           "bundler/pack/app_needs.py", "             and _of_cuda(r.cuda, app_cuda)\n", "",
           REFUSAL_HINT_TESTS),
    Mutant("hint-recipe-cuda", "a refusal's release is of the recipe's CUDA, not the app's",
           "bundler/pack/app_needs.py",
           "cuda = str(max(app_cuda)) if app_cuda else recipe.cuda", "cuda = recipe.cuda",
           REFUSAL_HINT_TESTS),
    Mutant("hint-any-platform", "a refusal's release may be another platform's",
           "bundler/releases/render.py", "and (not platform or r.platform == platform)]", "]",
           REFUSAL_HINT_TESTS),
    Mutant("linux-family-windows-names", "Linux families keep the Windows file names",
           "bundler/releases/families.py", "return target.library_file(stem, version)",
           "return file", LINUX_RELEASE_TESTS),
    Mutant("no-linux-rows", "the generator has no manylinux row for cuDNN cu12",
           "tools/generate_catalogue.py",
           '    Family("nvidia-cudnn-cu12", _MANYLINUX, "nvidia/cudnn/lib", _SO),\n', "",
           LINUX_RELEASE_TESTS),
    Mutant("glibc-not-read", "the ELF reader does not read .gnu.version_r",
           "bundler/linux/elf_file.py", "glibc = _glibc_needed(image)", 'glibc = ""',
           GLIBC_TESTS),
    Mutant("glibc-not-checked", "the bootstrap does not compare the machine's glibc",
           BOOT_LINUX, 'problem = glibc_problem(manifest.get("versions", {})',
           'problem = "" and glibc_problem(manifest.get("versions", {})', GLIBC_TESTS),
    Mutant("linux-driver-unchecked", "doctor does not probe libcuda.so.1 for a Linux bundle",
           BUNDLE_CHECKS, "driver=_driver(manifest.platform, versions))", "driver={})",
           LINUX_DOCTOR_TESTS),
    Mutant("linux-mapped-elsewhere-ignored", "the Linux bootstrap does not refuse a library "
           "already loaded from elsewhere", BOOT_LINUX,
           "if existing and not same_library_file(existing, path):", "if False:",
           ("tests/linux/test_linux_bootstrap_stops.py",
           "tests/linux/test_linux_process_truth.py")),
    Mutant("linux-copy-by-file-name", "the Linux bootstrap knows a loaded copy by its file "
           "name in /proc/self/maps, not by SONAME (the check before issue 27)", BOOT_LINUX,
           "    existing = loaded_as(name)\n",
           "    existing = _mapped_libraries().get(name, '')\n",
           ("tests/linux/test_linux_process_truth.py",)),
    Mutant("linux-soname-unread", "the Linux bootstrap checks a loaded file by its file "
           "name only, not by the SONAME it declares", BOOT_LINUX,
           "_refuse_other(_soname(handle._handle) or os.path.basename(relpath), path)",
           "_refuse_other(os.path.basename(relpath), path)", PROCESS_TESTS),
    Mutant("linux-identity-by-path", "the Linux bootstrap compares paths, not st_dev/st_ino",
           BOOT_LINUX, "return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)",
           "return a == b", ("tests/linux/test_linux_process_truth.py",)),
    Mutant("import-only-runs-the-app", "verify --run's import-only switch lets the app run",
           BOOTSTRAP, "        _write_process_report(folder)\n        raise SystemExit(0)\n",
           "        _write_process_report(folder)\n", PROCESS_TESTS),
    Mutant("run-check-misses-doubles", "verify --run: a library mapped twice passes",
           PROCESS_JUDGE, "if len(distinct) > 1:", "if len(distinct) > 99:", PROCESS_TESTS),
    Mutant("run-check-doubles-by-file-name", "verify --run: two copies are found by file "
           "name, not SONAME", PROCESS_JUDGE,
           "        if Path(source).is_file() and platform.is_library_file(Path(source)):\n",
           "        if False:\n", PROCESS_TESTS + PROCESS_DECOY_TESTS),
    # Issue 40 item 4: process truth from the kernel, not from the process.
    Mutant("run-untraced", "verify --run judges what each process reported of itself, not "
           "what the kernel saw", PROCESS_RUN, "    if trace.traced:\n        return trace\n",
           "    if False:\n        return trace\n", PROCESS_DECOY_TESTS),
    Mutant("trace-misses-children", "the Linux tracer does not follow forked children",
           TRACE_LINUX, "_O_TRACESYSGOOD | _O_TRACEFORK |", "_O_TRACESYSGOOD |",
           PROCESS_DECOY_TESTS),
    Mutant("trace-reads-by-name", "the Linux tracer reads a mapped file by its name, not "
           "through the process's fd", TRACE_LINUX,
           'sha256="", readable=f"/proc/self/fd/{held}")',
           "sha256='', readable=name if os.path.exists(name) else '')", PROCESS_DECOY_TESTS),
    Mutant("interposer-unseen", "verify --run does not read what API a library defines",
           "bundler/diagnose/api_exports.py",
           "    return tuple(sorted(n for n in set(names) if API_NAMES.match(n)))[:_SHOWN]",
           "    return ()", PROCESS_DECOY_TESTS),
    Mutant("bundle-by-file-name", "verify --run: a file named like a bundled one anywhere is "
           "the bundle's", PROCESS_JUDGE, "    relative = bundle.relative(obj.path)\n",
           "    relative = 'cudnn/' + file_name(obj.path).strip()\n", PROCESS_DECOY_TESTS),
    Mutant("timeout-kills-the-child-only", "at --timeout only the command's own process is "
           "killed", TRACE_LINUX, "            pids = sorted(self.seen)\n",
           "            pids = [self.first]\n", PROCESS_DECOY_TESTS),
    Mutant("untraced-unsaid", "verify --run passes untraced without saying so",
           PROCESS_CHECK, '        seen = "traced" if check.traced else "reported, NOT TRACED"',
           '        seen = "traced"', PROCESS_DECOY_TESTS),
    Mutant("timeout-unsaid", "a timeout is not a problem of its own", PROCESS_CHECK,
           "    if trace.timed_out:\n        killed = ",
           "    if False:\n        killed = ", PROCESS_DECOY_TESTS),
    Mutant("import-only-runs-the-script", "import-only verify --run runs the entry script "
           "(its lines above the bootstrap lines too), not the bootstrap lines alone",
           PROCESS_CHECK, '[str(python or sys.executable), "-c", IMPORT_ONLY_RUN, ',
           "[str(python or sys.executable), ", PROCESS_TESTS),
    Mutant("run-check-foreign-passes", "verify --run: a CUDA library not from the bundle "
           "passes", PROCESS_JUDGE, "            if not module.from_bundle:\n",
           "            if False:\n", PROCESS_TESTS),
    Mutant("windows-trace-misses-children", "the Windows debugger debugs the command's "
           "own process only", "bundler/windows/process_trace.py",
           "creationflags=_DEBUG_PROCESS)", "creationflags=2)",   # DEBUG_ONLY_THIS_PROCESS
           ("tests/wine/test_process_decoys_wine.py",)),
    Mutant("windows-trace-misses-dlls", "the Windows debugger records no DLL load",
           "bundler/windows/process_trace.py", "        elif event.code == _LOAD_DLL:",
           "        elif False:", ("tests/wine/test_process_truth_wine.py",)),
    Mutant("run-ok-without-a-process", "verify --run: ok when no process reported",
           PROCESS_CHECK, "return bool(self.processes) and not (", "return not (",
           PROCESS_TESTS),
    Mutant("linux-driver-unchecked-at-start", "the Linux bootstrap does not check the "
           "driver", BOOT_LINUX,
           "        raise BundledRuntimeError(problem)\n    check_driver()\n",
           "        raise BundledRuntimeError(problem)\n",
           ("tests/linux/test_linux_bootstrap_stops.py",)),
    Mutant("linux-bundle-load-unexplained", "doctor APPDIR says nothing of how a Linux "
           "bundle loads", BUNDLE_CHECKS, "+ preload_findings(target, manifest.load_order))",
           "+ [])", ("tests/linux/test_linux_doctor_bundle.py",)),
    Mutant("linux-frameworks-unjudged", "machine doctor on Linux says nothing of frameworks",
           "bundler/diagnose/doctor/machine_frameworks.py",
           "        findings += _opens_findings(here, title, framework, placed)\n",
           "        findings += []\n", ("tests/linux/test_linux_doctor_machine.py",)),
    Mutant("linux-layouts-unknown", "a Linux input's layout is read as a Windows one",
           "bundler/releases/channels.py", '"linux-x64": (_linux_folder, _linux_zip),',
           '"linux-x64": (_folder, _windows_zip),',
           ("tests/linux/test_linux_installed_wheels.py",)),
    # Messages (issue 17): each refusal short and to the point, each gap said.
    Mutant("refusal-repeats", "a refusal's lists repeat their items",
           "bundler/support/suggest.py", "unique = list(dict.fromkeys(items))",
           "unique = list(items)", ("tests/integration/test_app_scan.py",)),
    Mutant("suggestion-per-dll", "a refusal suggests a recipe per DLL, not one for all",
           "bundler/pack/app_needs.py", 'uses = [f"use {whole[0]}"] if whole else',
           "uses = [] if whole else", ("tests/integration/test_app_scan.py",)),
    Mutant("unprovided-unsaid", "pack says nothing of imports nothing provides",
           "bundler/pack/app_needs.py", "_unprovided(recipe, scan) if scan is not None else (),",
           "(),", ("tests/integration/test_app_scan.py",)),
    Mutant("entry-checked-late", "a typo in app.entry is found in the staging copy",
           "bundler/pack/pipeline.py", "    check_entry(spec)   # a typo", "    pass  # a typo",
           ("tests/integration/test_pack_refusals.py",)),
    Mutant("empty-dist-left", "a failed first pack leaves the dist/ it made",
           "bundler/pack/output.py", "        _remove_if_empty(made)", "        pass",
           ("tests/integration/test_pack_refusals.py",)),
    Mutant("wheel-missing-as-misnamed", "a missing source is judged by its name first",
           "bundler/pack/sources/wheel_source.py", "if not location.exists():", "if False:",
           ("tests/integration/test_wheel.py",)),
    Mutant("no-component-guess", "an unknown component gets no 'did you mean'",
           "bundler/recipe/selection.py", 'f"{did_you_mean(name, recipe.components, 0.6)}",',
           '"",',
           ("tests/integration/test_cli.py",)),
    Mutant("spec-libraries-ignored", "a spec's [scan] libraries is not read (only its "
           "deprecated alias dlls)", "bundler/pack/spec.py",
           'named = "dlls" if "dlls" in table.names() else "libraries"', 'named = "dlls"',
           ("tests/integration/test_libraries_key.py",)),
    Mutant("doctor-json-no-libraries", "doctor APPDIR --json lacks libraries",
           "bundler/diagnose/doctor/view.py",
           '        "libraries": libraries,\n        "dlls": libraries,   # deprecated alias of '
           'libraries until 1.0\n        "driver": {"checked"',
           '        "dlls": libraries,   # deprecated alias of libraries until 1.0\n'
           '        "driver": {"checked"', ("tests/integration/test_libraries_key.py",)),
    Mutant("cache-prune-ignores-app-wheel-pins", "bundler cache prune removes the app "
           "wheels a lock names", "bundler/pack/store/caches.py",
           "wheel.name in named.app_wheels, WHEELS)", "False, WHEELS)",
           ("tests/integration/test_cache_all.py",)),
    Mutant("cache-prune-ignores-embed-pin", "bundler cache prune removes the embeddable "
           "CPython a lock's app.python names", "bundler/pack/store/caches.py",
           "            sha256s.add(embed.sha256)\n", "            pass\n",
           ("tests/integration/test_cache_all.py",)),
    Mutant("windows-machine-json-no-libraries", "doctor --json of a machine lacks "
           "libraries", "bundler/diagnose/doctor/view.py",
           '        "libraries": libraries,\n        "dlls": libraries,   # deprecated alias of '
           'libraries until 1.0\n        "driver": _machine_driver',
           '        "dlls": libraries,   # deprecated alias of libraries until 1.0\n'
           '        "driver": _machine_driver',
           ("tests/unit/test_doctor_platforms.py", "tests/integration/test_libraries_key.py")),
    Mutant("doctor-checks-one", "doctor of a folder of bundles checks the first only",
           "bundler/commands/cmd_doctor.py", "for found in found_bundles(folder, lock)]",
           "for found in found_bundles(folder, lock)[:1]]", ("tests/integration/test_tamper.py",)),
    Mutant("antivirus-for-any-file", "verify blames an antivirus for any changed file",
           "bundler/diagnose/verify.py", "if any(_LIBRARY.search(name) for name in names):",
           "if True:", ("tests/integration/test_tamper.py",)),
    # Issue 29 items 3 and 5: the bootstrap assembled per platform; report()'s libraries.
    Mutant("report-without-libraries", "report() returns its list as 'dlls' only", BOOTSTRAP,
           '"driver": _driver, "libraries": libraries, "dlls": libraries}',
           '"driver": _driver, "dlls": libraries}',
           ("tests/meta/test_bootstrap_assembly.py", "tests/meta/test_doc_claims.py")),
    Mutant("bootstrap-docstrings-shipped", "pack ships the pieces' docstrings",
           "bundler/pack/emit.py", "        dropped.update(range(first, last))\n",
           "        pass\n", ("tests/meta/test_bootstrap_assembly.py",)),
    Mutant("bootstrap-traceback", "the app's start-up failure prints a traceback",
           BOOTSTRAP, "        sys.excepthook = _stop_quietly(sys.excepthook)\n",
           "        pass\n", ("tests/linux/test_linux_bootstrap_stops.py",
                               "tests/wine/test_bootstrap_damage_wine.py")),
    Mutant("signature-check-rereads", "pack hands signify no streamed Authenticode digest",
           "bundler/pack/signatures.py",
           "return self._recipe.target.signature_digest(size)",
           "return None", ("tests/integration/test_authentihash.py",)),
    Mutant("authentihash-hashes-checksum", "the streamed digest hashes the CheckSum field",
           "bundler/windows/authentihash.py",
           "ranges = [(optional_offset + 64, optional_offset + 68)]   # CheckSum",
           "ranges: list[tuple[int, int]] = []", ("tests/integration/test_authentihash.py",)),
    Mutant("inflate-with-zlib", "ISA-L is installed but zlib inflates",
           "bundler/support/deflate.py", "    from isal import isal_zlib as _engine\n",
           "    import zlib as _engine\n", ("tests/unit/test_deflate.py",)),
    Mutant("inflater-output-held-back", "output ISA-L holds back after the input is dropped",
           "bundler/support/zip_decoders.py", "if not data and len(out) < OUT:", "if not data:",
           ("tests/unit/test_deflate.py",)),
    Mutant("deflate64-slice-pieces", "Deflate64 output is handed on slice by slice (~1 KB "
           "pieces), not gathered into 1 MiB ones", "bundler/support/zip_decoders.py",
           "            if self._held + len(out) < OUT:\n"
           "                self._gathered.append(out)\n"
           "                self._held += len(out)\n"
           "            else:\n"
           "                yield from self._pieces(out)\n", "            yield out\n",
           ("tests/unit/test_deflate64.py",)),
    Mutant("deflate64-tail-dropped", "the Deflate64 output still gathered at a member's end "
           "is dropped", "bundler/support/zip_decoders.py", "    yield from decoder.finish()\n",
           "", ("tests/unit/test_deflate64.py",)),
    Mutant("deflate64-unbounded", "Deflate64 calls on 32 KiB slices are not bounded (a run "
           "of zeros inflates to hundreds of MB in one call)", "bundler/support/zip_decoders.py",
           "        self._bound = 0 if careful else _DEFLATE64_BOUND", "        self._bound = 0",
           ("tests/unit/test_deflate64.py", "tests/unit/test_bounded.py")),
    Mutant("deflate64-again-not-skipped", "a member decoded a second time hands on again "
           "what the bounded try already handed on", "bundler/support/zip_reader.py",
           "        yield from skipped(decoded(Deflate64(careful=True), again), delivered)",
           "        yield from decoded(Deflate64(careful=True), again)",
           ("tests/unit/test_deflate64.py",)),
    Mutant("deflate64-again-unread", "a member decoded a second time is not read again from "
           "its start", "bundler/support/zip_reader.py",
           "        again = itertools.chain(self._read_again(member, fed), (chunk,), raw)",
           "        again = itertools.chain((chunk,), raw)",
           ("tests/unit/test_deflate64.py",)),
    Mutant("stage-one-lane", "sources are staged one at a time", "bundler/pack/stage.py",
           "ThreadPoolExecutor(lane_count(len(jobs))", "ThreadPoolExecutor(1",
           ("tests/unit/test_stage_parallel.py",)),
    Mutant("archive-one-part", "one archive's members are inflated on one lane only",
           "bundler/pack/sources/archive_source.py",
           "        if workers < self._parallel_from() or len(names) < 2 or \\\n",
           "        if True or workers < self._parallel_from() or len(names) < 2 or \\\n",
           ("tests/unit/test_stage_one_archive.py",)),
    Mutant("deflate64-parts-from-4-cores", "a Deflate64 archive is cut into parts only from "
           "4 cores, as a deflate one", "bundler/pack/sources/archive_source.py",
           "        return (DEFLATE64_PARALLEL_CORES if 2 * deflate64 >",
           "        return (PARALLEL_CORES if 2 * deflate64 >",
           ("tests/unit/test_stage_one_archive.py",)),
    Mutant("archive-hash-skipped", "on the parallel path the archive's sha256 is not "
           "that of its bytes in order", "bundler/pack/sources/archive_source.py",
           "        return [self._hash_in_order(),\n", "        self._digest._done = 'e3b0'\n"
           "        return [self._hash_in_order(),\n",
           ("tests/unit/test_stage_one_archive.py",)),
    Mutant("evict-chmods-shared-inode", "store eviction chmods the object (a bundle's link)",
           "bundler/pack/store/store.py", "            attempt(path)\n",
           "            path.chmod(0o600)\n            attempt(path)\n",
           ("tests/integration/test_store_upkeep.py",)),
    Mutant("store-key-read-blocking", "the store key is opened with a plain open()",
           "bundler/pack/store/seal.py", "with open_regular(path) as handle:",
           "with open(path, 'rb') as handle:",
           ("tests/integration/test_store_upkeep.py::test_a_key_file_that_is_not_a_file_is_passed_over"
            "_without_hanging",)),
    Mutant("store-max-any-float", "BUNDLER_STORE_MAX is read with float()",
           "bundler/pack/store/upkeep.py", "size = _SIZE.fullmatch(text)",
           "size = _SIZE.fullmatch(text) or re.fullmatch(r'(?P<number>.*?)(?P<unit>)', text)",
           ("tests/integration/test_store_upkeep.py",)),
    # Issue 42 items 1 and 3: the store is this user's alone; a lock pins the whole bundle.
    Mutant("store-tree-unchecked", "a store with entries others own or can write is used",
           "bundler/pack/store/store.py", "        check_tree(root)\n", "        pass\n",
           (OWNERS_TESTS,)),
    Mutant("store-tree-top-only", "the store's check does not look below its folders",
           TRUST, "                folders.append(path)\n", "                pass\n",
           (OWNERS_TESTS,)),
    Mutant("store-owner-unchecked", "another user's object in the store is used", TRUST,
           "    if facts.st_uid != os.getuid():\n        raise Untrusted(path, f\"another",
           "    if False:\n        raise Untrusted(path, f\"another", (OWNERS_TESTS,)),
    Mutant("store-links-unnamed", "a link in the store is not said to be one", TRUST,
           "            if stat.S_ISLNK(found.st_mode):\n", "            if False:\n",
           (OWNERS_TESTS,)),
    Mutant("store-key-mode-unchecked", "a store key others can read is used",
           TRUST, "    if facts.st_mode & (stat.S_IRWXG | stat.S_IRWXO):\n",
           "    if False:\n", (OWNERS_TESTS,)),
    Mutant("store-key-folder-unchecked", "a store key in a folder others can write is used",
           TRUST, "    if folder.st_uid != os.getuid() or folder.st_mode & _OTHERS_WRITE:\n",
           "    if False:\n", (OWNERS_TESTS,)),
    Mutant("store-folders-umask", "the store's folders follow the umask (002: group-writable)",
           TRUST, "os.mkdir(folder, mode & ~_OTHERS_WRITE)", "os.mkdir(folder)",
           (OWNERS_TESTS,)),
    Mutant("store-marker-umask", "the store's use markers follow the umask",
           "bundler/pack/store/store.py", "marker.touch(mode=0o644)", "marker.touch()",
           (OWNERS_TESTS,)),
    Mutant("prune-drops-registration-in-flight", "prune deletes a registration being written",
           "bundler/pack/store/store.py", "            if entry.name.startswith(\".\"):\n",
           "            if False:\n", (OWNERS_TESTS,)),
    Mutant("prune-looks-then-unlinks", "prune forgets a lock registered while it looks",
           "bundler/pack/store/upkeep.py", "            _drop_registration(store, entry, lock)\n",
           "            entry.unlink(missing_ok=True)\n", (OWNERS_TESTS,)),
    Mutant("lock-record-optional", "verify/doctor --lock take a lock without its bundle "
           "record", VERIFY, "    if lock is None or lock.bundle is not None or predates:\n",
           "    if True:\n", (LOCK_BUNDLE_TESTS,)),
    Mutant("lock-record-partial", "a bundle record that leaves the manifest out is believed",
           VERIFY, "                                 for relpath in needed if relpath not in "
           "lock.bundle]\n", "                                 for relpath in needed if False]\n",
           (LOCK_BUNDLE_TESTS,)),
    Mutant("locked-keeps-stripped-lock", "pack --locked keeps a lock without its bundle "
           "record", LOCK, "    if policy == \"locked\" and old.bundle is None and new.bundle:\n",
           "    if False:\n", (LOCK_BUNDLE_TESTS,)),
    Mutant("manifest-link-followed", "plain verify reads a manifest that is a link",
           VERIFY, "    if manifest_link and manifest_link != runtime_link:", "    if False:",
           (LOCK_BUNDLE_TESTS,)),
    Mutant("init-lists-every-name", "init writes a line for each of thousands of names",
           "bundler/init/writer.py", "    for need in choice.unsupplied[:_LISTED]:\n",
           "    for need in choice.unsupplied:\n",
           ("tests/integration/test_init_bounded.py",)),
    Mutant("version-control-chars-taken", "a build-info version with a line break or an "
           "escape sequence is taken (10.1\\n\\x1b[31mRED as CUDA 10.1)",
           "bundler/frameworks/facts.py", "    if bad:   # a version with",
           "    if False:   # a version with", ("tests/integration/test_version_text.py",)),
    Mutant("zip-twin-separator-unsaid", "a zip's backslash twin is said to differ in case",
           "bundler/support/zip_reader.py",
           '    if first.replace("\\\\", "/") == second.replace("\\\\", "/"):\n',
           "    if False:\n", ("tests/unit/test_zip_twins.py",)),
    Mutant("inspect-kind-unsaid", "inspect of a named pipe or a device does not say what it is",
           "bundler/diagnose/inspection.py", "        if test(mode):\n", "        if False:\n",
           ("tests/integration/test_version_text.py",)),
    # Issue 28 item 6: a stored file evicted or replaced between its check and its link.
    Mutant("store-race-no-fallback", "a stored file gone at link time fails the pack",
           "bundler/pack/reuse.py",
           "            except ObjectGone as gone:   # the stage reads this source from its input",
           "            except ImportError as gone:", ("tests/integration/test_store_race.py",)),
    Mutant("store-race-link-unchecked", "a link is not checked to be the file hashed",
           "bundler/pack/store/store.py", "        if file_stamp(target.stat()) != stamp:\n",
           "        if False:\n", ("tests/integration/test_store_race.py",)),
    Mutant("store-race-copy-unchecked", "a copy is not checked to be of the file hashed",
           "bundler/pack/store/store.py",
           "        if file_stamp(os.fstat(source.fileno())) != stamp:",
           "        if False:", ("tests/integration/test_store_race.py",)),
    Mutant("store-race-placed-kept", "a source's files placed before one was gone stay",
           "bundler/pack/reuse.py", "            item.path.unlink(missing_ok=True)\n",
           "            pass\n", ("tests/integration/test_store_race.py",)),
    Mutant("installed-runtime-any-cuda", "a site-packages CUDA runtime of another major is "
           "taken", "bundler/releases/runtime_inputs.py",
           'if normalize(package).startswith(_CUDA_RUNTIME) and version.split(".")[0] != major:',
           "if False:", ("tests/integration/test_runtime_inputs_hostile.py",)),
    Mutant("dist-info-any-version", "a dist-info's version is not checked",
           "bundler/releases/runtime_inputs.py", "if not _VERSION.fullmatch(version):",
           "if False:", ("tests/integration/test_runtime_inputs_hostile.py",)),
    Mutant("version-json-read-whole", "a toolkit's version.json is read with read_text()",
           "bundler/releases/runtime_inputs.py",
           "data = read_json(path, _MAX_VERSION_FILE_BYTES, SourceError, hint,",
           "data = __import__('json').loads(path.read_text()) or (path, hint,",
           ("tests/integration/test_runtime_inputs_hostile.py",)),
    Mutant("pyinstaller-top-folder-0700", "a PyInstaller bundle keeps mkdtemp's mode 0700",
           "bundler/pack/builders/pyinstaller.py",
           "    shutil.copymode(layout.folder, staging)\n", "",
            ("tests/integration/test_bundle_modes.py",)),
    Mutant("verify-follows-links", "verify hashes what a link in the bundle reaches",
           "bundler/support/bundle_files.py",
           "    link = link_on_the_way(root, relpath)\n    if link:",
           "    link = ''\n    if link:", ("tests/integration/test_verify_links.py",)),
    Mutant("verify-walk-follows-links", "verify's walk of the runtime folder follows links",
           "bundler/support/bundle_files.py", "entry.stat(follow_symlinks=False)",
           "entry.stat(follow_symlinks=True)",
           ("tests/integration/test_verify_links.py::test_links_added_to_the_runtime_folder_are_listed_not"
            "_entered",)),
    Mutant("verify-hashes-any-size", "verify hashes a file whose size is not the manifest's",
           "bundler/support/bundle_files.py",
           "if size is not None and facts.st_size != size:", "if False:",
           ("tests/integration/test_verify_links.py::test_a_file_of_another_size_is_reported_without_being"
            "_hashed",)),
    Mutant("verify-walks-a-linked-python", "an embedded bundle's python/ link is followed",
           "bundler/diagnose/verify.py",
           "linked = {folder for folder in folders if link_on_the_way(found.root, folder)}",
           "linked: set[str] = set()", ("tests/unit/test_verify_links_embedded.py",)),
    Mutant("zip-writes-through-links", "pack --zip PATH writes through a link at PATH", ZIP,
           "        if is_link(os.lstat(path)):", "        if False:",
           ("tests/integration/test_zip_hostile.py",)),
    Mutant("zip-names-not-checked", "a name that is not UTF-8 reaches zipfile (exit 3)", ZIP,
           "        if not is_unicode(relpath):", "        if False:",
           ("tests/integration/test_zip_hostile.py",)),
    Mutant("windows-name-raw-bytes", "a name of raw bytes passes the Windows name rule",
           "bundler/support/paths.py", "    if not is_unicode(part):", "    if False:",
           ("tests/integration/test_zip_hostile.py",)),
    Mutant("hash-opens-blocking", "hashing opens a named pipe and waits on it",
           "bundler/support/hashing.py", 'return open(path, "rb", opener=regular_opener)',
           'return open(path, "rb")',
           ("tests/integration/test_store_upkeep.py::test_a_fifo_where_a_stored_file_should_be_is_passed"
            "_over",)),
    Mutant("verify-reads-linked-entry", "verify reads an entry script through a link",
           "bundler/diagnose/verify.py", "    link = link_on_the_way(found.root, entry)\n",
           '    link = ""\n',
           ("tests/integration/test_verify_links.py::test_an_entry_script_replaced_by_a_link_is_not_read",)),
    # One copy in the process (issue 27 item 4): bundler/frameworks/environment.py, pack/one_copy.py
    Mutant("env-no-path-loaders", "no framework in the app's environment counts as loading "
           "by path", "bundler/frameworks/environment.py",
           "loaders.setdefault(key, PathLoader(name, dist.version, opens[key]))", "pass",
           ("tests/integration/test_one_copy.py",)),
    Mutant("env-imports-ignored", "the outside Python's frameworks count though the app does "
           "not import them", "bundler/frameworks/environment.py",
           "or modules.get(key, key) in code.modules)", "or True)",
           ("tests/integration/test_one_copy.py",)),
    Mutant("preload-always-counts", "onnxruntime counts though the app never calls "
           "preload_dlls()", "bundler/frameworks/environment.py",
           "(key not in calls or code.may_call(calls[key]))", "True",
           ("tests/integration/test_one_copy.py",)),
    Mutant("env-record-only", "a wheel's libraries are read from RECORD, present or not",
           "bundler/frameworks/environment.py",
           'and not f.startswith("..") and (folder / f).is_file())', 'and not f.startswith(".."))',
           ("tests/integration/test_one_copy_embedded.py",)),
    Mutant("second-copies-not-refused", "the folder builder packs beside a second copy",
           "bundler/pack/app_needs.py",
           "            refuse_second_copies(environment, recipe, components)\n",
           "            pass\n",
           ("tests/integration/test_one_copy.py",)),
    Mutant("embedded-keeps-nvidia-wheels", "the embedded-python builder keeps the nvidia-* "
           "wheels the bundle provides", EMBED,
           "left_out = leave_out_provided(site_packages, recipe)", "left_out = ()",
           ("tests/integration/test_one_copy_embedded.py",)),
    Mutant("left-out-whole-wheel", "a wheel the bundle provides in part is left out whole",
           "bundler/pack/one_copy.py",
           "whole = all(PurePosixPath(lib).name in names for lib in wheel.libraries)",
           "whole = True", ("tests/integration/test_one_copy_embedded.py",)),
    Mutant("left-out-not-needed", "what the left-out wheels held is not selected",
           "bundler/pack/pipeline.py",
           "              for w in left_out for dll in w.libraries]\n",
           "              for w in left_out for dll in w.libraries if False]\n",
           ("tests/integration/test_one_copy_embedded.py",)),
    Mutant("doctor-ignores-environment", "doctor does not look at the app's environment",
           BUNDLE_CHECKS, "+ environment_findings(target, found.root, manifest)", "+ []",
           ("tests/integration/test_one_copy.py",)),
    Mutant("no-first-call-completion", "a selection is not completed with what its "
           "libraries load at their first call (core alone: cuDNN's shim without ops_infer "
           "or graph)", "bundler/recipe/selection.py",
           "            pending.extend(supplier for _, _, supplier in _first_call_loads(recipe,"
           " name))\n", "",
           ("tests/linux/test_linux_installed_wheels.py::test_a_linux_app_packs_from_the_installed_"
            "site_packages", "tests/wine/test_components_complete.py")),
    Mutant("no-completion-reasons", "the pack summary does not say why a component came "
           "along", "bundler/pack/pipeline.py",
           "reasons={**selection.reasons, **completed}", "reasons={**selection.reasons}",
           ("tests/wine/test_components_complete.py",)),
    Mutant("recipes-hides-what-it-brings", "bundler recipes NAME does not say what a "
           "component brings to work", "bundler/commands/cmd_recipes.py", "        if brings:\n",
           "        if False:\n", ("tests/wine/test_components_complete.py",)),
    Mutant("app-pyd-not-provided", "a binary the app ships in another folder (a .pyd) does "
           "not count as provided to the app's other binaries", "bundler/pack/app_needs.py",
           ",\n              *(platform.name_key(PurePosixPath(by).name) for by, _ in "
           "scan.imports)}", "}", ("tests/integration/test_unprovided_lines.py",)),
    Mutant("windows-parts-not-system", "Normaliz.dll, Cabinet.dll and msi.dll are not "
           "system DLLs", "bundler/windows/windows.toml",
           '    "normaliz.dll", "cabinet.dll", "msi.dll",\n', "",
           ("tests/integration/test_unprovided_lines.py::test_what_the_app_or_windows_provides_is_not_a_"
            "not_provided_line",)),
    Mutant("nvrtc-builtins-pinned-minor", "an installed or wheel NVRTC of another CUDA minor "
           "is asked for the pinned minor's builtins library", "bundler/releases/runtime_inputs.py",
           '|^(libnvrtc-builtins\\.so\\.\\d+\\.)\\d+$"', '"',
           ("tests/unit/test_runtime_inputs_minor.py",)),
    # Issue 28: magic before pefile (test_pe_magic.py)
    Mutant("pe-headers-unchecked", "pefile is handed a file whose headers were not checked "
           "(a truncated DLL reads as one importing nothing)", "bundler/windows/pe_file.py",
           "    if problem:\n        raise CheckError(f\"{path}: not a valid Windows DLL (not a PE",
           "    if False:\n        raise CheckError(f\"{path}: not a valid Windows DLL (not a PE",
           ("tests/integration/test_pe_magic.py",)),
    Mutant("damaged-library-not-bundled", "a damaged runtime library is also said 'not "
           "selected' for each library importing it", "bundler/pack/resolve.py",
           "bundled = {platform.name_key(item.file.name) for item in staged}",
           "bundled = {platform.name_key(name) for name in infos}",
           ("tests/integration/test_pe_magic.py::test_a_truncated_runtime_dll_is_refused_naming_it",)),
    Mutant("pe-closed-by-pefile", "each PE file read is closed by pefile's PE.close(), "
           "which runs a full garbage collection per file", "bundler/windows/pe_file.py",
           "    finally:\n        _release(image)\n    return returned_constant(code)",
           "    finally:\n        image.close()\n    return returned_constant(code)",
           ("tests/integration/test_pe_magic.py::test_reading_a_dll_runs_no_garbage_"
            "collection_and_unmaps_it",)),
    Mutant("pe-import-thunks-parsed", "every imported function of every PE file is parsed "
           "(bundler asks only for the DLL names)", "bundler/windows/pe_file.py",
           "            import_dllnames_only=True)", "            import_dllnames_only=False)",
           ("tests/integration/test_pe_magic.py::test_imports_are_read_as_dll_names_without_"
            "their_functions",)),
    # Issue 28: Windows name rules over every shipped path (test_windows_names_shipped.py)
    Mutant("shipped-names-unasked", "pack does not ask the platform about the staged "
           "bundle's paths (a wheel's aux.py ships in python/)", "bundler/pack/pipeline.py",
           "            refuse_unholdable_names(staging.folder, recipe.target, target.name)\n",
           "", ("tests/integration/test_windows_names_shipped.py",)),
    Mutant("shipped-case-twins", "two shipped paths differing only in case pass",
           "bundler/windows/shipped_names.py", "        if first != relpath:",
           "        if False:",
           ("tests/integration/test_windows_names_shipped.py::test_a_wheel_whose_names_windows_cannot_"
            "hold_is_refused_naming_it[case-twins]",)),
    # Issue 28: links in the app ship as what they point to, --zip too (test_zip_links.py)
    Mutant("app-links-copied-as-links", "a link inside the app folder ships as a link",
           "bundler/pack/builders/folder.py", "copytree(app, staging, symlinks=False,",
           "copytree(app, staging, symlinks=True,", ("tests/integration/test_zip_links.py",)),
    # Issue 28: bundler's own data never ships (test_own_data_not_shipped.py)
    Mutant("own-data-shipped", "the spec, lock, inputs, store and cache in the app folder "
           "are copied and scanned as the app's", "bundler/pack/builders/folder.py",
           "        if own and (here / name) in own:", "        if False:",
           ("tests/integration/test_own_data_not_shipped.py",)),
    # Issue 29 item 4: one record per variant (tests/meta/test_records.py)
    Mutant("key-of-another-builder", "a key only another builder takes is silently ignored",
           "bundler/pack/spec.py", "if any(_given(spec, key) for key in theirs):",
           "if False:", ("tests/integration/test_spec.py",)),
    Mutant("wheel-source-without-package", "a wheel source without package or version loads",
           "bundler/recipe/load.py", "    if lacking:\n", "    if False:\n",
           ("tests/unit/test_source_kinds.py",)),
    # Issue 29: inspect reads a manylinux wheel's members as Linux libraries (by its tag)
    Mutant("inspect-wheel-read-as-windows", "inspect picks a wheel's members by the Windows "
           "platform's name rule", "bundler/diagnose/inspection.py",
           "    candidates = tagged or list(all_platforms())",
           "    candidates = list(all_platforms())[:1]",
           ("tests/linux/test_linux_inspect_wheel.py",)),
    # Issue 40: inspect of a .so and of a .dll give the same bundle_needs rows
    Mutant("inspect-needs-judged-as-windows", "inspect judges a library's imports by the "
           "Windows names whatever its platform", "bundler/diagnose/inspection.py",
           "if is_runtime_library(i, platform)]", "if is_runtime_library(i, all_platforms()[0])]",
           ("tests/linux/test_linux_inspect_rows.py",)),
    # Issue 40: an app's GPU binaries of another platform than the recipe's are refused
    Mutant("other-platform-packed", "an app of ELF GPU libraries packs with a Windows "
           "recipe", "bundler/pack/app_needs.py", "    if own or not other:\n",
           "    if True:\n", ("tests/linux/test_linux_mixups.py",)),
    Mutant("mixed-app-refused", "an app holding both platforms' GPU binaries is refused",
           "bundler/pack/app_needs.py", "    if own or not other:\n",
           "    if not other:\n", ("tests/linux/test_linux_mixups.py",)),
    Mutant("other-platform-unread", "the app scan reads no binary named as another "
           "platform's", "bundler/pack/app_scan.py",
           "            _note_gpu_binary(gpu, path, relpath)   # another platform's, by its name\n",
           "            pass\n", ("tests/linux/test_linux_mixups.py",)),
    # Issue 40: init writes the spec for the app's platform
    Mutant("init-platform-unread", "init takes no platform from the app's GPU binaries",
           "bundler/init/command.py", "    found = app_gpu_binaries(app)\n",
           "    found = ()\n", ("tests/linux/test_linux_init_platform.py",)),
    Mutant("init-both-platforms-taken", "init of an app of both platforms' GPU binaries "
           "picks one", "bundler/init/command.py", "    if len(found) > 1:\n",
           "    if False:\n", ("tests/linux/test_linux_init_platform.py",)),
    Mutant("init-contradicted-platform-taken", "init takes a --platform the app's binaries "
           "contradict", "bundler/init/command.py",
           "        if found and chosen.name not in {g.platform.name for g in found}:\n",
           "        if False:\n", ("tests/linux/test_linux_init_platform.py",)),
    # Issue 29: the seam's members are all required (tests/meta/test_seam.py)
    Mutant("windows-probe-missing", "the Windows platform has no probe_driver",
           "bundler/windows/windows_platform.py", "    def probe_driver(self) -> DriverProbe:",
           "    def _probe_driver(self) -> DriverProbe:", ("tests/meta/test_seam.py",)),
    # Issue 40 item 2: doctor is one path over Platform; its JSON a versioned view.
    Mutant("doctor-other-platform-files-unlisted", "machine doctor lists no other "
           "platform's library files (only Windows DLLs on Linux, as before)",
           "bundler/diagnose/doctor/machine_checks.py",
           "    others = [p for p in all_platforms() if p is not here]\n",
           "    others = [p for p in all_platforms() if p is not here and p.library_word == "
           "'DLL']\n", ("tests/unit/test_doctor_platforms.py",)),
    Mutant("doctor-bare-name-search-unread", "machine doctor does not ask the platform's "
           "bare-name search which copy a load picks", "bundler/diagnose/doctor/host.py",
           "for index, f in enumerate(found, 1)]", "for index, f in enumerate(found[:0], 1)]",
           ("tests/unit/test_doctor_platforms.py",)),
    Mutant("doctor-json-nvcuda-on-linux", "doctor --json names the driver's library nvcuda "
           "on every platform", "bundler/diagnose/doctor/view.py",
           '"driver_library": facts.library, "path": facts.path,',
           '"driver_library": "nvcuda.dll", "nvcuda": facts.path, "path": facts.path,',
           ("tests/unit/test_doctor_platforms.py",)),
    Mutant("doctor-json-unversioned", "doctor --json of a machine carries no schema",
           "bundler/diagnose/doctor/view.py",
           '        "schema": SCHEMA,\n        "kind": "machine",\n',
           '        "kind": "machine",\n', ("tests/unit/test_doctor_platforms.py",)),
    Mutant("doctor-copies-unjudged-on-one-platform", "machine doctor judges the copies of "
           "a name on Windows only", "bundler/diagnose/doctor/machine_checks.py",
           "    for group in _by_name(placed, here).values():\n",
           "    for group in _by_name(placed if here is None or here.library_word == 'DLL' "
           "else [], here).values():\n", ("tests/unit/test_doctor_platforms.py",)),
    Mutant("bundle-search-skipped", "bundle doctor looks for no same-named copy on the "
           "bundle platform's search path", BUNDLE_CHECKS,
           "    placed = _reached(target, environ, names)\n", "    placed = []\n",
           ("tests/linux/test_linux_doctor_bundle.py",)),
    # Issue 43 item 5: a pinned wheel's members recorded under its pin; the wheel kept
    # once ($BUNDLER_KEEP_WHEELS) and what the store holds of it taken without it.
    Mutant("pin-unrecorded", "a pack records no wheel's members under its pin",
           "bundler/pack/reuse.py",
           "        if can_fetch(source.spec) and identities[sid] == source.spec.sha256:\n",
           "        if False:\n", WHEEL_ONCE_TESTS),
    Mutant("stored-wheel-unused", "a pinned wheel the store holds is fetched all the same",
           "bundler/pack/sources/__init__.py",
           "    record = pins.covering(store, spec.sha256, takes)\n",
           "    record = None\n", WHEEL_ONCE_TESTS),
    Mutant("offline-refuses-stored", "--offline refuses a wheel that is not in the wheel "
           "cache though the store holds its files", "bundler/pack/sources/__init__.py",
           "                and not _stored(s, takes[s.id], given, base, environ, store, "
           "True)]\n", "                ]\n", WHEEL_ONCE_TESTS),
    Mutant("keep-none-ignored", "BUNDLER_KEEP_WHEELS=none leaves the wheel in the cache "
           "after the pack", "bundler/pack/pipeline.py",
           "    if store is not None and not keep_wheels:", "    if False:", WHEEL_ONCE_TESTS),
    Mutant("keep-default-drops", "by default a wheel the store holds leaves the wheel "
           "cache", PINS, "    return value == KEEP_ALL\n", "    return False\n",
           WHEEL_ONCE_TESTS),
    Mutant("held-objects-unchecked", "a wheel counts as held by the store with one of its "
           "objects gone (prune with none removes it)", PINS,
           "    return record is not None and record.whole and \\\n"
           "        all(store.object_path(sha).is_file() for sha in record.members.values())\n",
           "    return record is not None and record.whole\n", WHEEL_ONCE_TESTS),
    Mutant("held-whole-subset", "a wheel counts as held whole when the store holds some of "
           "the members its recipes name", PINS,
           "        return self.wanted <= set(self.members)\n", "        return True\n",
           WHEEL_ONCE_TESTS),
    Mutant("covering-objects-unchecked", "a pin record is taken with an object gone from "
           "the store", PINS,
           "    if not all(store.object_path(sha).is_file() for sha in taken.values()):\n"
           "        return None\n", "", WHEEL_ONCE_TESTS),
    Mutant("stored-damage-unfetched", "a stored wheel member that fails its proof is not "
           "fetched: the pack fails", "bundler/pack/sources/__init__.py",
           "        location = cached(spec, root) or fetch(spec, root)\n",
           "        raise offline_error([spec], root, stored=True)\n", WHEEL_ONCE_TESTS),
    Mutant("orphan-pin-kept", "the cap removes an object and keeps the pin record naming it",
           "bundler/pack/store/upkeep.py",
           "    pins.drop_orphans(store)   # a wheel's pin record too: its next pack fetches it\n",
           "", WHEEL_ONCE_TESTS),
    Mutant("cache-in-store-unreported", "bundler cache does not say which wheels the store "
           "also holds", "bundler/pack/store/caches.py",
           "            in_store=sum(1 for e in held if e.cache == name),\n",
           "            in_store=0,\n", WHEEL_ONCE_TESTS),
    Mutant("prune-keeps-held", "cache prune with BUNDLER_KEEP_WHEELS=none keeps the wheels "
           "the store holds", "bundler/pack/store/caches.py",
           "    removable = [] if pins.keep_wheels(environ) else list(held)\n",
           "    removable = []\n", WHEEL_ONCE_TESTS),
    Mutant("inspect-json-unversioned", "inspect --json carries no schema",
           "bundler/commands/output.py",
           'return {"schema": INSPECT_SCHEMA, "path": data["path"],',
           'return {"path": data["path"],', ("tests/integration/test_libraries_key.py",)),
)


def copy_checkout(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", "__pycache__", "dist", "build", ".mypy_cache", ".ruff_cache", ".pytest_cache"))


def apply(mutant: Mutant, tree: Path) -> None:
    path = tree / mutant.file
    text = path.read_text()
    if text.count(mutant.old) != 1:
        raise SystemExit(f"mutant {mutant.name}: {mutant.old!r} is not in {mutant.file} "
                         "exactly once; update tests/mutants.py")
    path.write_text(text.replace(mutant.old, mutant.new))


def run(mutant: Mutant, tree: Path) -> tuple[bool, str, float]:
    """(killed, the first failing test or "", seconds)."""
    copy_checkout(tree)
    apply(mutant, tree)
    env = {**os.environ, "PYTHONPATH": str(tree), "BUNDLER_REQUIRE_WINE": "1"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly",
                           "-p", "no:cacheprovider", *mutant.tests], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    failed = next((line.split()[1] for line in proc.stdout.splitlines()
                   if line.startswith(("FAILED ", "ERROR "))), "")
    (tree.parent / f"{mutant.name}.log").write_text(proc.stdout + proc.stderr)
    return proc.returncode != 0, failed, time.monotonic() - start


def main(names: list[str]) -> int:
    chosen = [m for m in MUTANTS if not names or m.name in names]
    survived = []
    # One fixed folder: the Windows interpreter the harness sets up for it is reused.
    tree = Path(tempfile.gettempdir()) / "bundler-mutants" / "tree"
    for mutant in chosen:
        killed, failed, seconds = run(mutant, tree)
        verdict = f"killed by {failed}" if killed else "SURVIVED"
        print(f"{mutant.name:26} {verdict}  ({mutant.what}; {seconds:.0f} s)", flush=True)
        if not killed:
            survived.append(mutant.name)
    shutil.rmtree(tree, ignore_errors=True)
    print(f"pytest output of each: {tree.parent}/<name>.log")
    print(f"{len(chosen) - len(survived)} killed, {len(survived)} survived"
          + (f": {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
