"""Pure logic of `bundler doctor`: the compatibility tables, the modelled DLL search
order, and the judgements made from gathered facts. (What Windows really loads is
tested under Wine in test_doctor_wine.py.)"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from bundler.diagnose.doctor.findings import PROBLEM, FrameworkReport, place
from bundler.diagnose.doctor.host import (
    DriverFacts,
    InstalledFramework,
    LibraryCopy,
    SearchFolder,
    installed_frameworks,
)
from bundler.diagnose.doctor.machine_checks import judge_machine
from bundler.errors import BundlerError
from bundler.runtime.rules import (
    cuda_needed,
    cuda_text,
    driver_from_file_version,
    judge_driver,
    runs_on,
)
from bundler.targets.registry import windows
from bundler.windows.compat import compat_facts, parse_compat, version_tuple
from bundler.windows.library_search import search_folders
from tests.harness.winenv.paths import PROJECT_ROOT

SYSTEM = {"system32": "/win/system32", "system16": "/win/System", "windows": "/win"}


def test_driver_table_gives_the_newest_cuda_a_driver_runs() -> None:
    compat = compat_facts()
    assert compat.cuda_for_driver("418.96") == "10.1"
    assert compat.cuda_for_driver("411.31") == "10.0"
    assert compat.cuda_for_driver("441.22") == "10.2"
    assert compat.cuda_for_driver("100.00") == ""
    assert compat.min_driver_for("10.1") == "418.96"
    # NVIDIA's table: CUDA 11.8 GA needs 520.06 (522.06 is the installer's own driver).
    assert compat.min_driver_for("11.8") == "520.06"
    assert compat.cuda_for_driver("520.06") == "11.8"
    assert compat.cuda_for_driver("572.61") == "12.8"
    assert compat.cuda_for_driver("576.57") == "12.9.1"   # 12.9 Update 1
    assert compat.cuda_for_driver("576.02") == "12.9"
    assert compat.min_driver_for("12.9.1") == "576.57"
    assert compat.min_driver_for("11.8.1") == "520.06"   # an update the table lacks: GA


def test_driver_table_covers_every_cuda_a_framework_names() -> None:
    """Else doctor could not name the driver to install."""
    compat = compat_facts()
    for entry in compat.frameworks:
        assert compat.oldest_driver_for(entry.cuda), entry.name


@pytest.mark.parametrize("file_version, driver", [
    ("26.21.14.4166", "441.66"), ("25.21.14.1131", "411.31"), ("27.21.14.5148", "451.48"),
    ("1.2.3", ""), ("", "")])
def test_driver_version_from_nvcuda_file_version(file_version: str, driver: str) -> None:
    assert driver_from_file_version(file_version) == driver


@pytest.mark.parametrize("distribution, version, cuda, cudnn", [
    ("tensorflow", "2.3.1", "10.1", "7.6"),
    ("tensorflow-gpu", "2.4.0", "11.0", "8.0"),
    ("tensorflow", "2.10.0", "11.2", "8.1"),
    ("paddlepaddle-gpu", "2.1.0.post101", "10.1", "7.6"),
    # PyPI's Windows 2.2.2-2.4.2 are CUDA 10.2 builds (their paddle/version/__init__.py)
    ("paddlepaddle_gpu", "2.2.2", "10.2", "7.6.5"),
    ("paddlepaddle-gpu", "2.6.2", "11.8", "8.6.0"),
    ("torch", "1.8.1+cu101", "10.1", "7.6"),
])
def test_framework_table(distribution: str, version: str, cuda: str, cudnn: str) -> None:
    entry = compat_facts().framework_entry(distribution, version)
    assert entry is not None
    assert (entry.cuda, entry.cudnn) == (cuda, cudnn)


@pytest.mark.parametrize("distribution, version", [
    ("tensorflow", "2.11.0"), ("torch", "1.8.1+cpu"), ("torch", "1.8.1"),
    ("paddlepaddle-gpu", "3.0.0"), ("numpy", "2.3.0")])
def test_framework_table_leaves_unknown_releases_alone(distribution: str,
                                                       version: str) -> None:
    assert compat_facts().framework_entry(distribution, version) is None


def test_versions_and_cuda_numbers() -> None:
    assert version_tuple("2.1.0.post101") == (2, 1, 0)
    assert version_tuple("1.8.1+cu101") == (1, 8, 1)
    assert version_tuple("2.4.0rc1") == (2, 4, 0)
    assert cuda_text(10010) == "10.1" and cuda_text(11020) == "11.2"
    assert cuda_needed("10.1") == 10010
    assert cuda_needed("11.8") == 11080   # what a driver of CUDA 11.8 reports
    assert cuda_needed("11") == 11000


def test_compat_file_is_read_strictly(tmp_path: Path) -> None:
    with pytest.raises(BundlerError, match="unknown key"):
        parse_compat({"scan": [], "driver": {"minimum": {}}, "extra": 1}, tmp_path)


def test_search_order_follows_windows_and_lists_cuda_path_apart() -> None:
    environ = {"PATH": os.pathsep.join(["/decoy", "/win/system32", '"/quoted dir"', ""]),
               "CUDA_PATH": "/cuda", "CUDA_PATH_V10_1": "/cuda101", "CUDA_PATHX": "/no"}
    folders = search_folders(environ, application="/python", system=SYSTEM,
                             current="/here")
    table = [(f.path, f.label, f.searched, f.order) for f in folders]
    assert table == [
        ("/python", "application folder", True, 1),
        ("/win/system32", "System32, PATH[2]", True, 2),
        ("/win/System", "System", True, 3),
        ("/win", "Windows folder", True, 4),
        ("/here", "current folder", True, 5),
        ("/decoy", "PATH[1]", True, 6),
        ("/quoted dir", "PATH[3]", True, 7),
        (os.path.join("/cuda", "bin"), "CUDA_PATH", False, 0),
        (os.path.join("/cuda101", "bin"), "CUDA_PATH_V10_1", False, 0),
    ]


def _folder(path: str, label: str, order: int) -> SearchFolder:
    return SearchFolder(path, label, order > 0, order)


def _copy(name: str, folder: SearchFolder, sha: str, machine: str = "AMD64",
          version: str = "8.0.3.33") -> LibraryCopy:
    return LibraryCopy(name=name, path=f"{folder.path}/{name}", folder=folder, size=10,
                   machine=machine, version=version, sha256=sha)


DECOY = _folder("/decoy", "PATH[1]", 6)
TOOLKIT = _folder("/cuda/bin", "CUDA_PATH", 0)
LATER = _folder("/later", "PATH[2]", 7)
NO_DRIVER = DriverFacts(True, "", "nvcuda.dll cannot be loaded: Windows error 126", 0, "", "",
                        "", (), "nvcuda.dll")
OLD_DRIVER = DriverFacts(True, "/win/system32/nvcuda.dll", "", 10000, "411.31",
                         "nvcuda.dll file version 25.21.14.1131", "", (), "nvcuda.dll")


def _judge(copies: list[LibraryCopy], driver: DriverFacts = OLD_DRIVER,
           frameworks: list[FrameworkReport] | None = None, bits: int = 64):
    return judge_machine(windows(), compat_facts(), [DECOY, LATER, TOOLKIT], place(copies),
                         driver, frameworks or [], bits)


def _problems(report) -> list[str]:
    return [f.message for f in report.findings if f.level == PROBLEM]


def test_two_different_cudnn_copies_are_a_problem_naming_both_and_the_winner() -> None:
    copies = [_copy("cudnn64_8.dll", TOOLKIT, "aa"),
              _copy("cudnn64_8.dll", DECOY, "bb", version="8.0.0.0")]
    report = _judge(copies)
    roles = {p.copy.path: p.role for p in report.libraries}
    assert roles == {"/decoy/cudnn64_8.dll": "picked", "/cuda/bin/cudnn64_8.dll": "not searched"}
    [problem] = [p for p in _problems(report) if "cudnn64_8" in p]
    assert "picks /decoy/cudnn64_8.dll (PATH[1], version 8.0.0.0)" in problem
    assert "not searched: /cuda/bin/cudnn64_8.dll (CUDA_PATH, version 8.0.3.33)" in problem
    assert not report.ok


def test_identical_copies_and_shadowing_order() -> None:
    copies = [_copy("cudart64_101.dll", LATER, "aa"), _copy("cudart64_101.dll", DECOY, "aa")]
    placed = place(copies)
    assert [(p.copy.folder.label, p.role) for p in placed] == [("PATH[1]", "picked"),
                                                              ("PATH[2]", "shadowed")]
    report = _judge(copies)
    assert not [p for p in _problems(report) if "copies" in p]
    assert any("2 identical copies" in f.message for f in report.findings)


def test_a_32_bit_dll_and_a_damaged_one_are_problems() -> None:
    bad = LibraryCopy("cublas64_10.dll", "/decoy/cublas64_10.dll", DECOY, 5, "", "", "",
                  error="/decoy/cublas64_10.dll: not a valid Windows DLL")
    report = _judge([_copy("cudnn64_8.dll", DECOY, "", machine="I386"), bad])
    problems = " | ".join(_problems(report))
    assert "is a 32-bit (I386) DLL; a 64-bit process cannot load it (Windows error 193)" \
        in problems
    assert "not a valid Windows DLL" in problems


def test_no_driver_is_a_problem() -> None:
    report = _judge([], driver=NO_DRIVER)
    assert _problems(report) == ["no NVIDIA driver: nvcuda.dll cannot be loaded "
                                 "(Windows error 126)"]


def test_a_cuda_runtime_newer_than_the_driver_is_a_problem() -> None:
    report = _judge([_copy("cudart64_101.dll", DECOY, "", version="6.14.11.10010")])
    assert report.driver.cuda == "10.0" and report.driver.cuda_by_version == "10.0"
    [problem] = _problems(report)
    assert "is a CUDA 10.1 runtime; the driver supports only CUDA 10.0" in problem


def test_frameworks_against_the_table() -> None:
    compat = compat_facts()
    tf = InstalledFramework("tensorflow", "2.3.0", "/site")
    torch = InstalledFramework("torch", "1.8.1+cu101", "/site")
    frameworks = [FrameworkReport(f, compat.framework_entry(f.distribution, f.version))
                  for f in (tf, torch)]
    copies = [_copy("cudart64_101.dll", DECOY, ""), _copy("cublas64_10.dll", DECOY, "")]
    report = _judge(copies, frameworks=frameworks)
    problems = " | ".join(_problems(report))
    assert "tensorflow 2.3.0 loads cudnn64_7.dll by name; no folder" in problems
    assert "tensorflow 2.3.0 is built for CUDA 10.1; the driver supports only CUDA 10.0" \
        in problems
    assert "torch 1.8.1+cu101 is built for CUDA 10.1" in problems
    assert any("torch 1.8.1+cu101 ships its own CUDA" in f.message for f in report.findings)


def test_a_cuda_the_table_lacks_still_gets_a_worded_hint() -> None:
    compat = replace(compat_facts(), driver_minimum=())
    tf = InstalledFramework("tensorflow", "2.3.0", "/site")
    frameworks = [FrameworkReport(tf, compat.framework_entry(tf.distribution, tf.version))]
    report = judge_machine(windows(), compat, [DECOY], [], OLD_DRIVER, frameworks, 64)
    [hint] = [f.hint for f in report.findings if f.level == PROBLEM and "built for" in f.message]
    assert hint.startswith("update the NVIDIA driver to one that supports CUDA 10.1")


def test_installed_frameworks_are_read_from_metadata_without_importing(tmp_path: Path
                                                                       ) -> None:
    info = tmp_path / "tensorflow-2.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tensorflow\n"
                                   "Version: 2.3.0\n")
    found = installed_frameworks(windows(), compat_facts(), path=[str(tmp_path)])
    assert [(f.distribution, f.version) for f in found] == [("tensorflow", "2.3.0")]


@pytest.mark.parametrize("require", [True, False])
def test_the_manifest_carries_require_driver(require: bool) -> None:
    import json

    from bundler.pack.emit import build_manifest
    from bundler.pack.resolve import ResolvedRuntime
    from bundler.recipe.load import find_recipe

    recipe = find_recipe("cudnn-8.0.3.33-cuda10.1-win-x64", PROJECT_ROOT)
    manifest = build_manifest(recipe, ["core"], "cudnn", ResolvedRuntime([], []),
                              {"path": "_cudnn_bootstrap.py", "sha256": "0"}, require)
    data = json.loads(manifest.to_bytes())
    assert data["require_driver"] is require
    assert data["versions"] == {"cudnn": "8.0.3.33", "cuda": "10.1", "min_driver": "418.96"}


# The versions of the shipped recipes, as their manifests carry them.
CU101 = {"cuda": "10.1", "min_driver": "418.96"}
CU118 = {"cuda": "11.8", "min_driver": "520.06", "min_driver_compat": "452.39"}
NVCUDA = "C:\\Windows\\system32\\nvcuda.dll"


def test_the_manifest_versions_are_the_recipes() -> None:
    from dataclasses import asdict

    from bundler.formats.manifest import BootstrapEntry
    from bundler.pack.emit import build_manifest
    from bundler.pack.resolve import ResolvedRuntime
    from bundler.recipe.load import find_recipe

    for name, versions in (("cudnn-8.0.3.33-cuda10.1-win-x64", CU101),
                           ("cudnn-8.9.4.25-cuda11-win-x64", CU118)):
        manifest = build_manifest(find_recipe(name, PROJECT_ROOT), [], "cudnn",
                                  ResolvedRuntime([], []), BootstrapEntry(sha256="0", path="b"))
        plain = {k: v for k, v in asdict(manifest.versions).items() if v and k != "cudnn"}
        assert plain == versions


@pytest.mark.parametrize("versions, file_version, cuda, problem, note", [
    # CUDA 11.0's own driver reports 11000 but is below the 11.x compatibility minimum.
    (CU118, "27.21.14.5148", 11000, "needs an NVIDIA driver >= 452.39 (>= 520.06 for all "
     "of its features): update", ""),
    (CU118, "27.21.14.5239", 11000, "", "older than 520.06, the driver of CUDA 11.8: this "
     "app's runtime runs under CUDA minor-version compatibility"),
    (CU118, "31.0.15.1601", 11070, "", "(version 516.01) is older than 520.06"),
    (CU118, "31.0.15.2006", 11080, "", ""),
    # No version resource: cuDriverGetVersion decides (the major, for CUDA 11).
    (CU118, "", 11000, "", ""),
    (CU118, "", 10020, "supports CUDA 10.2 (cuDriverGetVersion 10020)", ""),
    (CU101, "25.21.14.1131", 10000, "(version 411.31) supports CUDA 10.0 (cuDriverGetVersion "
     "10000), but this app's CUDA 10.1 runtime needs an NVIDIA driver >= 418.96", ""),
    (CU101, "25.21.14.1896", 10010, "", ""),
    (CU101, "", 10000, "needs an NVIDIA driver >= 418.96: update", ""),
])
def test_the_driver_check_applies_the_recipes_figures(versions: dict, file_version: str,
                                                      cuda: int, problem: str,
                                                      note: str) -> None:
    found = judge_driver(versions, NVCUDA, cuda, file_version, "")
    assert (problem in found["problem"]) and (bool(found["problem"]) == bool(problem))
    assert (note in found["note"]) and (bool(found["note"]) == bool(note))
    assert found["driver_version"] == driver_from_file_version(file_version)


def test_the_driver_check_without_a_driver_names_the_minimum() -> None:
    found = judge_driver(CU118, "", 0, "", "nvcuda.dll cannot be loaded: Windows error 126")
    assert found["problem"].startswith("no NVIDIA driver found (nvcuda.dll cannot be loaded: "
                                       "Windows error 126); this app's CUDA 11.8 runtime "
                                       "needs an NVIDIA driver >= 452.39")


def test_runs_on_by_version_else_by_cuda() -> None:
    assert not runs_on("451.48", 11000, "11.8", "452.39", True)
    assert runs_on("452.39", 11000, "11.8", "452.39", True)
    assert runs_on("", 11000, "11.8", "452.39", True)
    assert not runs_on("", 11070, "11.8", "520.06", False)


def test_compat_table_knows_minor_version_compatibility() -> None:
    compat = compat_facts()
    assert compat.oldest_driver_for("10.1") == "418.96"
    assert compat.oldest_driver_for("11.8") == "452.39"
    assert compat.oldest_driver_for("12.9") == "528.33"
    assert compat.minor_compatible_from("10.2") == ""


@pytest.mark.parametrize("version, cuda, problem", [
    ("451.48", 11000, True),    # CUDA 11.0's driver, below 452.39
    ("456.38", 11010, False),   # CUDA 11.1's: runs TF 2.5 (CUDA 11.2) by minor-version compat.
])
def test_a_framework_against_the_driver_by_its_version(version: str, cuda: int,
                                                       problem: bool) -> None:
    compat = compat_facts()
    tf = InstalledFramework("tensorflow", "2.5.0", "/site")
    frameworks = [FrameworkReport(tf, compat.framework_entry(tf.distribution, tf.version))]
    driver = DriverFacts(True, NVCUDA, "", cuda, version, "nvidia-smi", "", (), "nvcuda.dll")
    report = judge_machine(windows(), compat, [DECOY], [], driver, frameworks, 64)
    found = [f for f in report.findings if f.level == PROBLEM and "built for" in f.message]
    assert bool(found) == problem
    if found:
        assert found[0].hint == "update the NVIDIA driver to >= 452.39"


@pytest.mark.parametrize("name, release", [
    ("cudart64_101.dll", (10, 1)), ("cudart64_110.dll", (11, 0)), ("cudart64_12.dll", (12, 0)),
    ("cublas64_11.dll", (11, 0)), ("kernel32.dll", None)])
def test_the_cuda_a_library_name_pins(name: str, release: tuple[int, int] | None) -> None:
    from bundler.windows.facts import windows_facts

    assert windows_facts().cuda_release_of(name) == release


def test_a_copy_on_path_of_a_dll_torch_ships_itself_is_a_problem(tmp_path: Path) -> None:
    from bundler.diagnose.doctor.host import framework_libraries

    lib = tmp_path / "torch" / "lib"
    lib.mkdir(parents=True)
    for name in ("cudnn64_9.dll", "torch_cpu.dll", "cudart64_12.dll"):
        (lib / name).write_bytes(b"MZ")
    torch = InstalledFramework("torch", "2.5.1+cu124", str(tmp_path))
    compat = compat_facts()
    own = framework_libraries(torch, windows(), compat.scan)
    assert own == (str(lib / "cudart64_12.dll"), str(lib / "cudnn64_9.dll"))
    driver = DriverFacts(True, NVCUDA, "", 12040, "551.61", "nvidia-smi", "", (), "nvcuda.dll")
    copy = _copy("cudnn64_9.dll", DECOY, "a" * 64)
    report = judge_machine(windows(), compat, [DECOY], place([copy]), driver,
                           [FrameworkReport(torch, None, own, "absolute")], 64)
    found = [f for f in report.findings
             if "a bare-name load of cudnn64_9.dll gets /decoy/cudnn64_9.dll" in f.message]
    assert found and found[0].level == PROBLEM
    assert f"not its own {lib / 'cudnn64_9.dll'}" in found[0].message
    assert "WinError 127" in found[0].message
