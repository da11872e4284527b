"""What the Windows platform gained behind the seam (issue 29 item 2): its own
bare-name search and driver probe, answering in the same types as Linux's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bundler.platforms.api import FoundLibrary
from bundler.runtime.rules import driver_from_file_version as bootstraps_rule
from bundler.targets.registry import linux, windows
from bundler.windows.driver import driver_from_file_version


@pytest.mark.parametrize("file_version", ["26.21.14.4166", "31.0.15.5222", "25.21.14.1131",
                                          "1.2.3", "a.b.c.d", ""])
def test_windows_names_the_driver_release_by_the_bootstraps_rule(file_version: str) -> None:
    assert driver_from_file_version(file_version) == bootstraps_rule(file_version)


def test_windows_bare_name_search_picks_the_first_copy_whatever_its_case(
        tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for folder, name in ((first, "seamtest64_9.dll"), (second, "SEAMTEST64_9.DLL")):
        folder.mkdir()
        (folder / name).write_bytes(b"MZ")
    found = windows().bare_name_search(("seamtest64_*.dll",),
                                       os.pathsep.join([str(first), str(second)]))
    assert found == [
        FoundLibrary("seamtest64_9.dll", str(first / "seamtest64_9.dll"), "PATH[1]", "picked"),
        FoundLibrary("SEAMTEST64_9.DLL", str(second / "SEAMTEST64_9.DLL"), "PATH[2]",
                     "shadowed")]


def test_both_platforms_probe_a_driver_in_one_shape() -> None:
    """Off its OS a platform's probe says why it found none instead of failing."""
    for platform in (windows(), linux()):
        probe = platform.probe_driver()
        assert isinstance(probe.cuda, int) and isinstance(probe.error, str)
        assert probe.path or probe.error


def test_linux_search_folders_are_ld_library_path_in_order() -> None:
    folders = linux().search_folders({"LD_LIBRARY_PATH": "/a::/b"}, "/python")
    assert [(f.path, f.label, f.searched, f.order) for f in folders] == [
        ("/a", "LD_LIBRARY_PATH[1]", True, 1), (".", "LD_LIBRARY_PATH[2]", True, 2),
        ("/b", "LD_LIBRARY_PATH[3]", True, 3)]
