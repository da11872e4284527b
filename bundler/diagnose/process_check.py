"""`bundler verify --run APPDIR [-- COMMAND ...]`: what a running app really maps.

verify and doctor read files; only a process shows which copy of cuDNN it runs on. This
starts the packed app — by default its entry script with the bootstrap's import-only
switch (the bootstrap loads the runtime, writes its report and exits 0 before the app's
own code), or the COMMAND given — under a tracer (diagnose/process_run.py): the kernel
(ptrace on Linux) or the debugger (the Windows debug API, also under Wine) records every
file any process of the command maps as code, as it is mapped: a copy renamed, deleted
or unloaded before exit, or mapped by a child that leaves through os._exit, is seen.
Each is judged by what it is (diagnose/process_judge.py: its SONAME read from its bytes,
its content sha256, the cuDNN/CUDA API it defines) against the manifest of the bundle
folder given on the command line, never the folder a process reports for itself.

It fails on a cuDNN/CUDA object that is not the bundle's file, on a library mapped from
two files in one process, on a timeout (the whole process tree is killed) and when no
process ran the bootstrap: never an "ok" without a process seen. Where nothing can trace
(ptrace refused, no Windows Python under Wine) it judges what each process's bootstrap
reported of itself (BUNDLER_PROCESS_REPORT, runtime/loader_*.py), and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from bundler.diagnose.process_judge import MappedModule, judge_trace
from bundler.diagnose.process_run import from_reports, run_command, under_wine, windows_path
from bundler.errors import EXIT_OK, EXIT_PROBLEMS, BundlerError
from bundler.formats.manifest import INJECT_MARKER, FoundManifest
from bundler.runtime.rules import IMPORT_ONLY, PROCESS_REPORT
from bundler.targets.registry import Platform, platform_for, this_machine

__all__ = ["MappedModule", "ProcessCheck", "check_process", "print_check"]

NO_PROCESS = ("no process of the app reported what it mapped: the bootstrap did not run "
              "(or stopped the app) in any process the command started")
_EMBEDDED_PYTHON = ("python", "python.exe")   # an embedded-python bundle's interpreter


@dataclass(frozen=True)
class ProcessCheck:
    app: str
    command: tuple[str, ...]
    import_only: bool             # the default: the bootstrap's loads only, no app code
    traced: bool                  # the kernel/debugger saw every mapping (else: reports)
    untraced_why: str             # why not traced ("" when traced)
    exit_code: int | None         # None: it did not start, or was stopped
    timed_out: bool
    processes: tuple[int, ...]    # the pids whose bootstrap ran (and reported)
    traced_processes: tuple[int, ...]   # every process the tracer saw
    modules: tuple[MappedModule, ...]
    foreign: tuple[str, ...]      # "pid: path": cuDNN/CUDA objects not the bundle's
    doubled: tuple[str, ...]      # "pid: name: path, path": one library from two files
    problems: tuple[str, ...]     # why the process cannot be judged (and no process
    #                               reported: NO_PROCESS, said where it is printed)
    output: tuple[str, ...]       # the app's last lines on stderr

    @property
    def ok(self) -> bool:
        return bool(self.processes) and not (self.foreign or self.doubled or self.problems
                                             or self.timed_out)

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "ok": self.ok}


def check_process(found: FoundManifest, command: list[str], timeout: float) -> ProcessCheck:
    """Run the app (`command`, or its entry import-only) and judge what it mapped."""
    platform = platform_for(found.manifest.platform, found.path)
    import_only = not command
    if import_only:
        command = _default_command(found, platform)
    top = found.root.parent if found.root.name == "_internal" else found.root
    with tempfile.TemporaryDirectory(prefix="bundler-run-") as folder:
        env = {**os.environ, PROCESS_REPORT: windows_path(folder) if under_wine(command)
               else folder}
        if import_only:
            env[IMPORT_ONLY] = "1"
        trace = run_command(platform, command, env, top, timeout, _bundled_python(found))
        try:
            problems = list(trace.problems)
            reports = _read_reports(Path(folder), problems)
            if not trace.traced:
                from_reports(trace, reports)
            judged = judge_trace(found, platform, trace, _tops(found.root, command))
        finally:
            trace.close()
    if trace.exit_code is not None and trace.exit_code != 0:
        problems.append(f"the app exited with status {trace.exit_code}" + (
            f": {trace.output[-1]}" if trace.output else ""))
    if trace.timed_out:
        killed = ", ".join(map(str, trace.killed))
        problems.append(f"timed out: the app still ran after {timeout:g} s; " + (
            f"every process it started was killed ({killed})" if trace.traced else
            f"its session was killed ({killed}; a process that left it was not)"))
    return ProcessCheck(app=str(found.root), command=tuple(command), import_only=import_only,
                        traced=trace.traced, untraced_why=trace.why_not,
                        exit_code=trace.exit_code, timed_out=trace.timed_out,
                        processes=tuple(int(r["pid"]) for r in reports),
                        traced_processes=tuple(sorted(trace.mappings)) if trace.traced
                        else (), modules=judged.modules, foreign=judged.foreign,
                        doubled=judged.doubled, problems=tuple(problems),
                        output=trace.output)


def _tops(root: Path, command: list[str]) -> tuple[str, ...]:
    """The bundle folder as a process may name it: here, and (under Wine) as drive Z:."""
    named = (os.path.realpath(root), str(root.absolute()))
    return named + tuple(windows_path(top) for top in named) if under_wine(command) else named


def _bundled_python(found: FoundManifest) -> Path | None:
    python = found.root.joinpath(*_EMBEDDED_PYTHON)
    return python if python.is_file() else None


# Import-only runs the entry's bootstrap lines and nothing else of the script: not the
# script itself, whose lines above them (a docstring and __future__ imports as packed,
# anything an edit put there since) would run first. The lines are taken from the
# marker to their closing `del`, run as the entry's __main__ with its __file__ and its
# folder first on sys.path (as `python main.py` has it); the bootstrap then writes its
# report and stops the process. Lines that do not stop it exit 3, said in one line.
IMPORT_ONLY_RUN = f"""import sys
entry = sys.argv[1]
with open(entry, encoding="latin-1") as handle:
    lines = handle.read().splitlines(True)
start = next((i for i, line in enumerate(lines) if line.startswith({INJECT_MARKER!r})), None)
end = next((i for i in range(start or 0, len(lines))
            if lines[i].startswith("del _bundler_util")), None)
if start is None or end is None:
    raise SystemExit(entry + ": no bootstrap lines (bundler pack adds them)")
sys.argv = [entry]
if sys.path and sys.path[0] == "":
    sys.path[0] = entry[:max(entry.rfind("/"), entry.rfind(chr(92))) + 1] or "."
exec(compile("".join(lines[start:end + 1]), entry, "exec"),
     {{"__name__": "__main__", "__file__": entry, "__builtins__": __builtins__}})
sys.stderr.write(entry + ": the bootstrap lines ran but did not stop for verify\\n")
sys.exit(3)
"""


def _default_command(found: FoundManifest, platform: Platform) -> list[str]:
    """The entry script's bootstrap lines (IMPORT_ONLY_RUN), run by the bundle's own
    Python where it has one (an embedded-python bundle's python.exe: here, or under Wine
    on another OS), else by this Python (a folder app of this machine's platform)."""
    entry = found.manifest.bootstrap.entry
    here = this_machine()
    if not entry or not entry.endswith(".py") or not found.manifest.bootstrap.path:
        raise BundlerError(f"{found.root}: the bundle has no entry script verify can run "
                           "(a frozen or native app)",
                           "give the command that starts it: bundler verify --run APPDIR -- "
                           "COMMAND ...")
    python = _bundled_python(found)
    if here is not None and here.name == platform.name:
        return [str(python or sys.executable), "-c", IMPORT_ONLY_RUN, str(found.root / entry)]
    if python:   # an embedded-python bundle (Windows): its own python.exe, under Wine
        wine = shutil.which("wine") or shutil.which("wine64")
        if not wine:
            raise BundlerError(f"{found.root}: a {platform.os_name} bundle runs on this "
                               "machine under Wine, and Wine is not installed",
                               "install Wine (e.g. apt install wine64), or run bundler verify "
                               f"--run on {platform.os_name} (docs/diagnosing.md#under-wine)")
        return [wine, windows_path(str(python)), "-c", IMPORT_ONLY_RUN,
                windows_path(str(found.root / entry))]
    raise BundlerError(f"{found.root}: a {platform.os_name} bundle cannot run on this "
                       "machine by itself",
                       "give the command that starts it (e.g. its Python under Wine): "
                       "bundler verify --run APPDIR -- COMMAND ...")


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
        why = f" ({module.why})" if module.why else ""
        print(f"{where}: {module.pid}: {module.name} {module.path}{why}")
    for item in check.doubled:
        print(f"mapped twice: {item}")
    for problem in check.problems:
        print(f"not verified: {problem}", file=sys.stderr)
    if not check.processes:
        print(f"not verified: {NO_PROCESS}", file=sys.stderr)
    if not check.traced:
        print(f"not traced: {check.untraced_why}; judged from what each process reported of "
              "itself (a library unloaded, renamed or deleted before exit, or mapped by a "
              "child that left through os._exit, is not seen)", file=sys.stderr)
    mode = "its entry, import-only" if check.import_only else "the command"
    if check.ok:
        count = len({m.path for m in check.modules})
        seen = "traced" if check.traced else "reported, NOT TRACED"
        print(f"ok: {len(check.processes)} process(es) of {check.app} ({mode}; {seen}) map "
              f"{count} cuDNN/CUDA libraries, each once, all from the bundle")
        return EXIT_OK
    print(f"{check.app}: " + ("the running app timed out" if check.timed_out else
                              f"the running app ({mode}) does not run on the bundle's "
                              "runtime alone") + "; hint: " + _hint(check), file=sys.stderr)
    return EXIT_PROBLEMS


def _hint(check: ProcessCheck) -> str:
    if check.timed_out:
        return ("give a longer --timeout, or a command that exits by itself (the default, "
                "the entry import-only, stops after the bootstrap's loads)")
    if check.problems and not check.processes:
        return ("run the app as its users do (the bootstrap's own message above says "
                "what stopped it), then verify again")
    if check.foreign or check.doubled:
        return ("something loads NVIDIA's libraries from elsewhere (a framework's own copies "
                "in site-packages/nvidia, LD_PRELOAD, a copy on PATH, another copy of the "
                "app): remove those copies from the app's environment (docs/diagnosing.md)")
    return "see the lines above: each says what stopped the check (docs/diagnosing.md)"
