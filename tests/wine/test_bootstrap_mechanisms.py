"""Each mechanism of the bootstrap (README, "What the bootstrap does, and why") and the
doctor findings that rest on them, each shown by a behaviour that changes when that
mechanism alone is taken away (tests/mutants.py takes them away one at a time).

Static imports between bundled DLLs cannot show them: with the manifest's load order
every import is already loaded, and with the 0x1100 flags every import is found beside
the DLL anyway, so either covers for the other. What does show them is a library that
loads another one while it is itself being loaded (its DllMain), and a DLL that imports
something that is not bundled. tests/harness/standin/probe.c is such a library:

- alpha.dll loads zbase.dll by bare name (plain LoadLibrary) in its DllMain; alpha's
  component requires zbase's, so the manifest loads zbase first. In alphabetical order
  alpha would load first and get the zbase.dll of a decoy folder on PATH.
- beta.dll loads yside.dll in its DllMain with LOAD_LIBRARY_SEARCH_DEFAULT_DIRS (the
  search Python's own ctypes and extension loads use). The recipe says beta `loads`
  yside at run time, which does not order them (only imports and requirements do), so
  beta is preloaded first: only the os.add_dll_directory registration makes the
  runtime folder part of that search.
- gamma.dll imports nvml.dll, a driver DLL, which is not installed (Wine has none) but
  a copy is on PATH: the 0x1100 flags keep a bundled DLL's imports off PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bundler.pack.pipeline import pack
from bundler.pack.spec import load_spec
from tests.harness.packing import make_workspace, own_environ
from tests.harness.winenv import WindowsPython, to_windows_path
from tests.harness.winenv.build import Import, StandinSpec, build_dll

LOAD_LIBRARY_SEARCH_DEFAULT_DIRS = "0x1000"


def probe(name: str, probe_id: int, *, load: str = "", flags: str = "",
          imports: tuple[Import, ...] = (), nvml: bool = False) -> StandinSpec:
    defines = [("STANDIN_PROBE_ID", str(probe_id))]
    if load:
        defines.append(("STANDIN_ATTACH_LOAD", f'"{load}"'))
    if flags:
        defines.append(("STANDIN_ATTACH_FLAGS", flags))
    if nvml:
        defines.append(("STANDIN_EXPORT_NVML", "1"))
    return StandinSpec("probe.c", name, (1, 0, 0, probe_id), defines=tuple(defines),
                       imports=imports, description=f"bootstrap probe {name}",
                       product="bundler test probe")


BUNDLED = (
    probe("zbase.dll", 1),
    probe("alpha.dll", 10, load="zbase.dll"),
    probe("beta.dll", 20, load="yside.dll", flags=LOAD_LIBRARY_SEARCH_DEFAULT_DIRS),
    probe("yside.dll", 1),
    probe("gamma.dll", 30, imports=(Import("nvml.dll", ("nvmlInit_v2",)),)),
)
DECOYS = (probe("zbase.dll", 2), probe("yside.dll", 2), probe("nvml.dll", 2, nvml=True))

RECIPE = '''\
name = "probe-test"
platform = "win-amd64"
description = "bootstrap probes (tests/harness/standin/probe.c)"

[versions]
cudnn = "8.0.3.33"
cuda = "10.1"

[sources.dlls]
kind = "folder"
contents = ["zbase.dll", "alpha.dll", "beta.dll", "yside.dll", "gamma.dll"]

[components.base]
files = ["dlls:zbase.dll"]

[components.alpha]
files = ["dlls:alpha.dll"]
requires = ["base"]

[components.beta]
files = ["dlls:beta.dll"]

[components.yside]
files = ["dlls:yside.dll"]

[components.gamma]
files = ["dlls:gamma.dll"]

[files."beta.dll"]
loads = ["yside.dll"]
'''

# What each DllMain got, read after the bootstrap ran (by absolute path: the same
# modules the bootstrap loaded).
MAIN = '''\
import ctypes, json, os
here = os.path.dirname(os.path.abspath(__file__))
got = {}
for name in ("alpha", "beta"):
    dll = ctypes.CDLL(os.path.join(here, "cudnn", name + ".dll"))
    buffer = ctypes.create_string_buffer(1024)
    dll.probe_attach_path(buffer, len(buffer))
    got[name] = buffer.value.decode("mbcs")
print(json.dumps(got))
'''


@pytest.fixture(scope="module")
def probes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the folder of the bundled probes, the decoy folder put on PATH)."""
    root = tmp_path_factory.mktemp("probes")
    for spec in BUNDLED:
        build_dll(spec, root / "dlls")
    for spec in DECOYS:
        build_dll(spec, root / "decoys")
    return root / "dlls", root / "decoys"


def pack_probes(root: Path, dlls: Path, components: list[str]) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "main.py").write_text(MAIN)
    (root / "probe-test.toml").write_text(RECIPE)
    (root / "app.spec").write_text(
        '[app]\nname = "app"\npath = "app"\nentry = "main.py"\n\n'
        f'[runtime]\nrecipe = "probe-test.toml"\ncomponents = {json.dumps(components)}\n\n'
        f'[sources]\ndlls = "{dlls.as_posix()}"\n')
    return pack(load_spec(root / "app.spec"), environ=own_environ()).out


def test_manifest_orders_a_requirement_first_and_not_by_name(
        tmp_path: Path, probes: tuple[Path, Path]) -> None:
    app = pack_probes(tmp_path, probes[0], ["alpha", "beta", "yside"])
    order = json.loads((app / "cudnn" / "manifest.json").read_text())["load_order"]
    assert order == ["cudnn/beta.dll", "cudnn/yside.dll", "cudnn/zbase.dll", "cudnn/alpha.dll"]


def test_dllmain_loads_during_the_preload_find_the_bundled_copies(
        tmp_path: Path, probes: tuple[Path, Path], app_python: WindowsPython) -> None:
    """Load order: alpha's bare-name load of zbase.dll gets the bundled copy because
    zbase was preloaded first (else: the decoy on PATH). add_dll_directory: beta's
    DEFAULT_DIRS load of yside.dll finds the runtime folder (else: nothing)."""
    dlls, decoys = probes
    app = pack_probes(tmp_path, dlls, ["alpha", "beta", "yside"])
    result = app_python.run([app / "main.py"], path_dirs=[decoys])
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.splitlines()[-1])
    runtime = to_windows_path(app / "cudnn").lower()
    assert got == {"alpha": got["alpha"], "beta": got["beta"]}
    assert got["alpha"].lower() == f"{runtime}\\zbase.dll", got
    assert got["beta"].lower() == f"{runtime}\\yside.dll", got


def test_a_bundled_dlls_import_is_never_taken_from_path(
        tmp_path: Path, probes: tuple[Path, Path], app_python: WindowsPython) -> None:
    """gamma.dll imports nvml.dll, a driver DLL: not installed here, but a copy is on
    PATH. The bootstrap's load flags keep PATH out of the search, so the app stops,
    naming the file and the Windows error, instead of running with that copy."""
    dlls, decoys = probes
    app = pack_probes(tmp_path, dlls, ["gamma"])
    result = app_python.run([app / "main.py"], path_dirs=[decoys])
    assert result.returncode != 0, result.stdout
    assert "cannot load bundled runtime file cudnn/gamma.dll" in result.stderr
    assert "Windows error 126" in result.stderr


def test_doctor_names_the_missing_driver_dll_a_bundled_dll_imports(
        tmp_path: Path, probes: tuple[Path, Path], win_python: WindowsPython) -> None:
    app = pack_probes(tmp_path, probes[0], ["gamma"])
    result = win_python.run(["-m", "bundler", "doctor", app, "--json"])
    assert result.returncode == 1, result.stdout + result.stderr
    problems = [f["message"] for f in json.loads(result.stdout)["findings"]
                if f["level"] == "problem"]
    assert "gamma.dll would not load: it imports nvml.dll, which comes with the NVIDIA " \
        "driver (not installed)" in problems


# --- doctor: run-time loads left out, and the VC++ runtime ------------------------------


def test_doctor_on_a_subset_names_a_left_out_dll_a_foreign_copy_would_replace(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_runtime,
        standin_framework: Path, win_python: WindowsPython) -> None:
    """cudnn64_8.dll loads cudnn_cnn_infer64_8.dll at run time (the recipe's `loads`).
    Packed without it, that is a note; with a foreign copy on the search path, a
    problem: that copy is what the shim would load."""
    workspace = make_workspace(tmp_path / "ws", standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit},
                               extra_runtime='components = ["ops_infer"]\n')
    app = pack(load_spec(workspace.spec), environ=own_environ()).out
    alone = win_python.run(["-m", "bundler", "doctor", app, "--json"])
    notes = [f["message"] for f in json.loads(alone.stdout)["findings"] if f["level"] == "note"]
    assert "cudnn64_8.dll can load cudnn_cnn_infer64_8.dll at run time; it is not bundled " \
        "(its component was not selected)" in notes
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    shutil.copy(standin_runtime["cudnn_cnn_infer64_8.dll"], foreign)
    shadowed = win_python.run(["-m", "bundler", "doctor", app, "--json"], path_dirs=[foreign])
    problems = [f["message"] for f in json.loads(shadowed.stdout)["findings"]
                if f["level"] == "problem"]
    assert ("cudnn64_8.dll loads cudnn_cnn_infer64_8.dll by name at run time; it is not "
            f"bundled, so it would come from {to_windows_path(foreign)}\\"
            "cudnn_cnn_infer64_8.dll (PATH[1], version 8.0.3.33)") in problems


@pytest.fixture
def prefix_without_msvcp140(tmp_path: Path, win_python: WindowsPython) -> Iterator[Path]:
    """A private copy of the Wine prefix whose System32 lacks msvcp140.dll: a Windows
    without the Visual C++ redistributable. Files are hard links (cheap), except the
    registry, which Wine rewrites."""
    prefix = tmp_path / "prefix"
    shutil.copytree(win_python.prefix, prefix, copy_function=os.link, symlinks=True)
    for reg in prefix.glob("*.reg"):
        reg.unlink()
        shutil.copyfile(win_python.prefix / reg.name, reg)
    (prefix / "drive_c" / "windows" / "system32" / "msvcp140.dll").unlink()
    yield prefix
    subprocess.run(["wineserver", "-k"], env={**os.environ, "WINEPREFIX": str(prefix)},
                   check=False, capture_output=True, timeout=60)


def test_doctor_names_a_visual_cpp_runtime_missing_from_system32(
        tmp_path: Path, probes: tuple[Path, Path], win_python: WindowsPython,
        prefix_without_msvcp140: Path) -> None:
    dlls = tmp_path / "vc"
    shutil.copytree(probes[0], dlls)  # then a gamma.dll that imports msvcp140.dll
    build_dll(probe("gamma.dll", 30, imports=(Import("msvcp140.dll", ("_Query_perf_counter",)),)),
              dlls)
    app = pack_probes(tmp_path / "ws", dlls, ["gamma"])
    result = win_python.run(["-m", "bundler", "doctor", app, "--json"],
                            env={"WINEPREFIX": str(prefix_without_msvcp140)}, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    [finding] = [f for f in json.loads(result.stdout)["findings"]
                 if f["message"].startswith("gamma.dll would not load")]
    assert finding["message"].startswith("gamma.dll would not load: it imports msvcp140.dll, "
                                         "which is not in C:\\windows\\system32 nor beside")
    assert "Visual C++ Redistributable" in finding["hint"]
