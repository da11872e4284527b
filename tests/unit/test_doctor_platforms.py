"""Machine doctor is one path over `Platform` (issue 40 item 2): the report of each
platform has the same keys and sections, is judged by the same findings in the
platform's words, and lists another platform's library files found on this machine as
files, whichever platform this machine is. The platforms' real objects with fake
environments: a Windows stand-in DLL on PATH and a real ELF library (renamed) on
LD_LIBRARY_PATH, examined as this machine once as Windows and once as Linux."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bundler.diagnose.doctor import examine_machine, machine_view, render_machine
from bundler.diagnose.doctor.findings import PROBLEM, plural
from bundler.diagnose.doctor.view import SCHEMA
from bundler.targets.registry import Platform, linux, windows
from tests.harness.winenv.paths import PROJECT_ROOT

STANDIN = PROJECT_ROOT / "examples/quickstart/standin-cuda/v10.1/bin"
ELF = [Path("/lib/x86_64-linux-gnu") / n for n in ("libz.so.1", "libgcc_s.so.1")]

pytestmark = pytest.mark.skipif(not all(p.is_file() for p in ELF),
                                reason="needs two x86-64 Linux shared libraries")

# Each platform's copy of a cuDNN/CUDA name, and another file of the same name.
SAMPLES = {"win-amd64": ("cudart64_101.dll", STANDIN / "cudart64_101.dll",
                         STANDIN / "cublas64_10.dll"),
           "linux-x86_64": ("libcudnn.so.9", ELF[0], ELF[1])}


def _folders(tmp_path: Path, second: bool = False) -> dict[str, str]:
    """PATH and LD_LIBRARY_PATH, each holding its platform's library (a second folder
    with a different file of that name when `second`)."""
    environ = {}
    for platform in (windows(), linux()):
        name, first, other = SAMPLES[platform.name]
        folders = []
        for index, source in enumerate((first, other) if second else (first,)):
            folder = tmp_path / f"{platform.search_path_variable}-{index}"
            folder.mkdir()
            shutil.copy(source, folder / name)
            folders.append(str(folder))
        environ[platform.search_path_variable] = ":".join(folders)
    return environ


def _shape(value: object) -> object:
    """The keys of a JSON value, nested: what must not differ between platforms."""
    if isinstance(value, dict):
        return {key: _shape(item) for key, item in value.items() if key != "dlls"}
    if isinstance(value, list):
        shapes = {json.dumps(_shape(item), sort_keys=True) for item in value}
        return sorted(shapes)
    return type(value).__name__ if value is not None else "null"


@pytest.fixture
def views(tmp_path: Path) -> dict[str, dict]:
    environ = _folders(tmp_path)
    return {here.name: machine_view(examine_machine(here, environ), here)
            for here in (windows(), linux())}


def test_each_platforms_machine_report_has_the_same_keys(views: dict[str, dict]) -> None:
    win, lin = views["win-amd64"], views["linux-x86_64"]
    assert win["schema"] == lin["schema"] == SCHEMA
    assert set(win) == set(lin)
    assert _shape(win["driver"]) == _shape(lin["driver"])
    entry_keys = {frozenset(entry) for view in views.values() for entry in view["libraries"]}
    assert len(entry_keys) == 1
    for view in views.values():
        assert view["libraries"] == view["dlls"]   # the deprecated alias, until 1.0


def test_each_platform_words_the_report_in_its_own_words(views: dict[str, dict]) -> None:
    win, lin = views["win-amd64"], views["linux-x86_64"]
    assert (win["driver"]["driver_library"], lin["driver"]["driver_library"]) == (
        "nvcuda.dll", "libcuda.so.1")
    assert (win["search_path_variable"], lin["search_path_variable"]) == (
        "PATH", "LD_LIBRARY_PATH")
    assert "nvcuda" not in json.dumps(lin).lower()   # no Windows-internal name on Linux


@pytest.mark.parametrize("here, other", [(windows(), linux()), (linux(), windows())])
def test_the_other_platforms_files_are_listed_as_files_on_every_platform(
        views: dict[str, dict], here: Platform, other: Platform) -> None:
    view = views[here.name]
    own_name, other_name = SAMPLES[here.name][0], SAMPLES[other.name][0]
    rows = {(e["name"], e["platform"], e["role"]) for e in view["libraries"]}
    assert (own_name, here.name, "picked") in rows
    assert (other_name, other.name, "file only") in rows
    [own] = [e for e in view["libraries"] if e["name"] == own_name]
    assert own["reached_as"] == f"{here.search_path_variable}[1]"
    messages = [f["message"] for f in view["findings"]]
    assert (f"the {plural(other.library_word)} listed are {other.os_name} files on this "
            f"machine's {other.search_path_variable}: doctor judged the files (machine, "
            f"version, signature), not what a {other.os_name} process would load") in messages
    assert not any(m.startswith(f"{other_name}:") for m in messages)   # no load judged


@pytest.mark.parametrize("here", [windows(), linux()])
def test_each_platforms_report_renders_the_same_sections(tmp_path: Path,
                                                         here: Platform) -> None:
    report = examine_machine(here, _folders(tmp_path))
    lines = render_machine(report, here)
    headings = [line for line in lines if line and not line.startswith(" ")]
    other = linux() if here is windows() else windows()
    word, others = plural(here.library_word), plural(other.library_word)
    assert headings[:6] == [
        f"bundler doctor: this machine ({report.python}, {report.bits}-bit, {here.name})",
        f"where a bare-name {here.library_word} load looks, in order "
        f"({here.search_order_text}):",
        f"cuDNN / CUDA {word} found:",
        f"{other.os_name} {others} on this machine's {other.search_path_variable} "
        "(files only):",
        "driver:", "frameworks (how each opens NVIDIA's " + word + "):"
        if report.frameworks else "findings:"]
    [driver_row] = [line for line in lines if line.startswith(f"  {here.driver_library}")]
    assert driver_row


@pytest.mark.parametrize("here", [windows(), linux()])
def test_two_different_copies_are_judged_the_same_on_every_platform(
        tmp_path: Path, here: Platform) -> None:
    report = examine_machine(here, _folders(tmp_path, second=True))
    name = SAMPLES[here.name][0]
    variable = here.search_path_variable
    [problem] = [f for f in report.findings if f.message.startswith(f"{name}: 2 different")]
    assert problem.level == PROBLEM
    first, second = (tmp_path / f"{variable}-{i}" / name for i in (0, 1))
    assert f"a bare-name load picks {first} ({variable}[1]" in problem.message
    assert f"it shadows: {second} ({variable}[2]" in problem.message
    assert f"take the other folder off {variable}" in problem.hint


def test_a_machine_of_no_platform_lists_every_platforms_files_as_files(
        tmp_path: Path) -> None:
    """macOS: bundler packs for no platform of it. Both platforms' files are listed as
    files, nothing is judged as a load, the driver is not asked, and the JSON has the
    keys a platform's has."""
    environ = _folders(tmp_path)
    report = examine_machine(None, environ)
    assert {(p.copy.name, p.role) for p in report.libraries} == {
        (SAMPLES[p.name][0], "file only") for p in (windows(), linux())}
    assert report.findings[0].about == "machine" and not report.driver.facts.checked
    assert render_machine(report, None)[-1] == "no problems found in what can be checked here."
    view = machine_view(report, None)
    assert view["platform"] == "" and set(view) == set(
        machine_view(examine_machine(linux(), environ), linux()))
