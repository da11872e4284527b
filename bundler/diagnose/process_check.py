"""`bundler verify --run APPDIR [-- COMMAND ...]`: what a running app really maps.

verify and doctor read files; only a process shows which copy of cuDNN it runs on. This
starts the packed app — by default its entry script with the bootstrap's import-only
switch (the bootstrap loads the runtime, writes its report and exits 0 before the app's
own code), or the COMMAND given — with `BUNDLER_PROCESS_REPORT` naming a folder where
the bootstrap of every process it starts writes, as the process exits, every module the
process maps: /proc/self/maps on Linux, EnumProcessModules on Windows
(runtime/loader_linux.py, loader_windows.py). It fails on a cuDNN/CUDA module that
is not the bundle's file, on a library mapped from two files (two of one SONAME or DLL
name) and when no process reported: never an "ok" without a process seen.

Which modules are cuDNN/CUDA: the platform's own CUDA naming (windows.toml, linux.toml:
cuda_release_prefixes and cuda_library_majors), cuDNN's family name, and the names of
the bundle's own files; driver libraries (libcuda.so.1, nvcuda.dll) are the machine's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.errors import EXIT_OK, EXIT_PROBLEMS, BundlerError
from bundler.formats.manifest import FoundManifest
from bundler.runtime.rules import IMPORT_ONLY, PROCESS_REPORT
from bundler.targets.registry import Platform, platform_for, this_machine

__all__ = ["MappedModule", "ProcessCheck", "check_process", "print_check"]

_TAIL = 8   # the app's last lines of output kept in a report
NO_PROCESS = ("no process of the app reported what it mapped: the bootstrap did not run "
              "(or stopped the app) in any process the command started")


@dataclass(frozen=True)
class MappedModule:
    """One cuDNN/CUDA file a process mapped."""

    pid: int
    name: str          # its SONAME (Linux) or file name (Windows): what a load asks for
    path: str          # as the process named it
    from_bundle: bool


@dataclass(frozen=True)
class ProcessCheck:
    app: str
    command: tuple[str, ...]
    import_only: bool             # the default: the bootstrap's loads only, no app code
    exit_code: int | None         # None: it did not start, or was stopped
    processes: tuple[int, ...]    # the pids that reported
    modules: tuple[MappedModule, ...]
    foreign: tuple[str, ...]      # "pid: path": cuDNN/CUDA modules not from the bundle
    doubled: tuple[str, ...]      # "pid: name: path, path": one library from two files
    problems: tuple[str, ...]     # why the process cannot be judged (and no process
    #                               reported: NO_PROCESS, said where it is printed)
    output: tuple[str, ...]       # the app's last lines on stderr

    @property
    def ok(self) -> bool:
        return bool(self.processes) and not (self.foreign or self.doubled or self.problems)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "ok": self.ok}


def check_process(found: FoundManifest, command: list[str], timeout: float) -> ProcessCheck:
    """Run the app (`command`, or its entry import-only) and judge what it mapped."""
    manifest = found.manifest
    platform = platform_for(manifest.platform, found.path)
    import_only = not command
    if import_only:
        command = _default_command(found, platform)
    with tempfile.TemporaryDirectory(prefix="bundler-run-") as folder:
        env = {**os.environ, PROCESS_REPORT: folder}
        if import_only:
            env[IMPORT_ONLY] = "1"
        exit_code, output, problems = _run(command, env, found, timeout)
        reports = _read_reports(Path(folder), problems)
    if exit_code is not None and exit_code != 0:
        problems.append(f"the app exited with status {exit_code}" + (
            f": {output[-1]}" if output else ""))
    bundled = {_key(platform, f.path) for f in manifest.files}
    bundled_names = {key.rsplit("/", 1)[-1] for key in bundled}
    modules: list[MappedModule] = []
    foreign, doubled = [], []
    for report in reports:
        pid, app = int(report["pid"]), str(report["app"])
        seen = [_module(platform, pid, app, path, bundled)
                for path in report["modules"] if _counts(platform, path, bundled_names)]
        modules += seen
        foreign += [f"{pid}: {m.path}" for m in seen if not m.from_bundle]
        by_name: dict[str, list[str]] = {}
        for module in seen:
            by_name.setdefault(platform.name_key(module.name), []).append(module.path)
        doubled += [f"{pid}: {name}: {', '.join(paths)}" for name, paths in by_name.items()
                    if len(paths) > 1]
    return ProcessCheck(app=str(found.root), command=tuple(command), import_only=import_only,
                        exit_code=exit_code, processes=tuple(int(r["pid"]) for r in reports),
                        modules=tuple(modules), foreign=tuple(foreign),
                        doubled=tuple(doubled), problems=tuple(problems), output=output)


def _default_command(found: FoundManifest, platform: Platform) -> list[str]:
    """The entry script run by this Python: only a folder app of this machine's platform."""
    entry = found.manifest.bootstrap.entry
    here = this_machine()
    if not entry or not entry.endswith(".py") or not found.manifest.bootstrap.path:
        raise BundlerError(f"{found.root}: the bundle has no entry script verify can run "
                           "(a frozen or native app)",
                           "give the command that starts it: bundler verify --run APPDIR -- "
                           "COMMAND ...")
    if here is None or here.name != platform.name:
        raise BundlerError(f"{found.root}: a {platform.os_name} bundle cannot run on this "
                           "machine by itself",
                           "give the command that starts it (e.g. its Python under Wine): "
                           "bundler verify --run APPDIR -- COMMAND ...")
    return [sys.executable, str(found.root / entry)]


def _run(command: list[str], env: dict[str, str], found: FoundManifest, timeout: float
         ) -> tuple[int | None, tuple[str, ...], list[str]]:
    """(exit status or None, its last lines on stderr, problems), run from the app's top."""
    top = found.root.parent if found.root.name == "_internal" else found.root
    try:
        done = subprocess.run(command, env=env, cwd=top, capture_output=True, timeout=timeout,
                              check=False)
    except OSError as exc:
        return None, (), [f"the command {command[0]!r} did not start ({exc})"]
    except subprocess.TimeoutExpired:
        return None, (), [f"the app still ran after {timeout:g} s and was stopped: give "
                          "--timeout, or a command that exits"]
    sys.stderr.write(done.stdout.decode(errors="replace"))
    lines = done.stderr.decode(errors="replace").splitlines()
    return done.returncode, tuple(line for line in lines[-_TAIL:] if line.strip()), []


def _read_reports(folder: Path, problems: list[str]) -> list[dict]:
    reports = []
    for path in sorted(folder.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data.get("modules"), list) or "pid" not in data:
                raise ValueError("not a process report")
        except (OSError, ValueError, AttributeError) as exc:
            problems.append(f"a process report cannot be read ({path.name}: {exc})")
            continue
        reports.append(data)
    return reports


def _key(platform: Platform, path: str) -> str:
    """A path in the form two of a process's paths are compared in."""
    return platform.name_key(path.replace("\\", "/").rstrip("/"))


def _name(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _counts(platform: Platform, path: str, bundled_names: set[str]) -> bool:
    """Whether a mapped file is a cuDNN/CUDA library, by the platform's naming."""
    name, facts = _name(path), platform.facts()
    if not platform.is_library(name) or facts.is_driver(name):
        return False
    return (facts.is_cuda_library(name) or platform.library_stem(name).startswith("cudnn")
            or platform.name_key(name) in bundled_names)


def _module(platform: Platform, pid: int, app: str, path: str, bundled: set[str]
            ) -> MappedModule:
    relative = _key(platform, path)
    top = _key(platform, app) + "/"
    inside = relative[len(top):] if relative.startswith(top) else ""
    return MappedModule(pid=pid, name=_library_name(platform, path), path=path,
                        from_bundle=bool(inside) and inside in bundled)


def _library_name(platform: Platform, path: str) -> str:
    """The name a load asks for: the SONAME the file declares where the platform has
    them (a readable ELF file on this machine), else its file name."""
    if not platform.case_insensitive and os.path.isfile(path):
        try:
            soname = platform.read_library(Path(path)).soname
        except (BundlerError, OSError, ValueError):
            soname = ""
        if soname:
            return soname
    return _name(path)


def print_check(check: ProcessCheck, as_json: bool) -> int:
    """Print the check (JSON, or a line per finding); the exit status."""
    if as_json:
        print(json.dumps(check.to_dict(), indent=2))
        return EXIT_OK if check.ok else EXIT_PROBLEMS
    for line in check.output:
        print(f"app: {line}", file=sys.stderr)
    # The bundle's first, then what is not (each module once: `foreign` lists the same).
    for module in sorted(check.modules, key=lambda m: (not m.from_bundle, m.pid, m.name)):
        where = "bundle" if module.from_bundle else "NOT FROM THE BUNDLE"
        print(f"{where}: {module.pid}: {module.name} {module.path}")
    for item in check.doubled:
        print(f"mapped twice: {item}")
    for problem in check.problems:
        print(f"not verified: {problem}", file=sys.stderr)
    if not check.processes:
        print(f"not verified: {NO_PROCESS}", file=sys.stderr)
    mode = "its entry, import-only" if check.import_only else "the command"
    if check.ok:
        count = len({m.path for m in check.modules})
        print(f"ok: {len(check.processes)} process(es) of {check.app} ({mode}) map "
              f"{count} cuDNN/CUDA libraries, each once, all from the bundle")
        return EXIT_OK
    print(f"{check.app}: the running app ({mode}) does not run on the bundle's runtime "
          "alone; hint: " + _hint(check), file=sys.stderr)
    return EXIT_PROBLEMS


def _hint(check: ProcessCheck) -> str:
    if check.problems and not check.processes:
        return ("run the app as its users do (the bootstrap's own message above says "
                "what stopped it), then verify again")
    return ("something loads NVIDIA's libraries from elsewhere (a framework's own copies "
            "in site-packages/nvidia, LD_PRELOAD, a copy on PATH): remove those copies "
            "from the app's environment (docs/diagnosing.md)")
