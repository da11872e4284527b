"""`bundler inspect` of a manylinux wheel reads its .so members as Linux libraries: the
wheel's tag names the platform (issue 29: the members were listed, their facts never
read, because inspect picked members by the Windows platform's name rule)."""

from __future__ import annotations

from pathlib import Path

from bundler.diagnose.inspection import inspect_path
from tests.harness.wheelkit import make_wheel
from tests.linux.test_linux_bundle import GRAPH, _library
from tests.linux.test_linux_bundle import pytestmark as linux_with_gcc

pytestmark = linux_with_gcc


def test_a_manylinux_wheels_libraries_are_read_as_linux_libraries(tmp_path: Path) -> None:
    graph = _library(tmp_path / "build", "libcudnn_graph.so.9", GRAPH.replace("MARKER", "1"))
    wheel = make_wheel(tmp_path / "wheels", {
        "nvidia/cudnn/lib/libcudnn_graph.so.9": graph.read_bytes(),
        "nvidia/cudnn/__init__.py": b""}, name="nvidia_cudnn_cu13", version="9.19.0.56",
        platform="manylinux_2_27_x86_64")
    report = inspect_path(wheel)
    assert "nvidia/cudnn/lib/libcudnn_graph.so.9" in [m.name for m in report.members]
    [library] = report.dlls
    assert (library.name, library.machine, library.bits, library.error) == (
        "libcudnn_graph.so.9", "X86_64", 64, "")
