"""The pack summary's "not provided" lines name only what nothing provides (issue 27).

A TensorFlow app's tensorflow/python/**/*.pyd import _pywrap_tensorflow_internal.pyd,
which the app ships in tensorflow/python/ (45 of the real 2.10.1 wheel's 60 .pyd files:
read with pefile); its _pywrap_tensorflow_internal.pyd imports Normaliz.dll, and other
app binaries Cabinet.dll and msi.dll, all three parts of Windows. None of them is a
"not provided" line; a DLL no one has still is. The binaries are stand-ins built with
mingw carrying those import tables (tests/harness/winenv/shaped.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.targets.registry import windows
from tests.harness.packing import SEED, run_cli
from tests.harness.winenv import require_toolchain
from tests.harness.winenv.shaped import Shape, build_shaped, marker

INTERNAL = "_pywrap_tensorflow_internal.pyd"


def _spec(root: Path, sources: dict[str, Path]) -> Path:
    lines = "\n".join(f'{sid} = "{p.as_posix()}"' for sid, p in sources.items())
    spec = root / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\n\n[runtime]\n'
                    f'recipe = "{SEED}"\nallow_unsigned = ["*.dll"]\n\n[sources]\n{lines}\n')
    return spec


def test_what_the_app_or_windows_provides_is_not_a_not_provided_line(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    require_toolchain()
    tf = tmp_path / "app" / "Lib" / "site-packages" / "tensorflow" / "python"
    build_shaped(Shape(INTERNAL, (("Normaliz.dll", ("IdnToAscii",)),)), tf)
    for folder, name in ((tf, "_pywrap_tfe.pyd"), (tf / "framework", "_dtypes.pyd"),
                         (tf / "util", "_pywrap_utils.pyd")):
        build_shaped(Shape(name, ((INTERNAL, (marker(INTERNAL),)),)), folder)
    build_shaped(Shape("installer_helper.pyd", (("Cabinet.dll", ("FCICreate",)),
                                                ("msi.dll", ("MsiOpenDatabaseW",)),
                                                ("vendor_sdk.dll", ("sdk_open",)))),
                 tmp_path / "app" / "Lib" / "site-packages" / "helper")
    code, out, err = run_cli(capsys, "pack", _spec(tmp_path, {"cudnn": standin_zip,
                                                               "cuda": standin_toolkit}))
    assert code == 0, err
    lines = [line for line in out.splitlines() if "not provided" in line]
    assert lines == [
        "  not provided: vendor_sdk.dll, imported by Lib/site-packages/helper/"
        "installer_helper.pyd: neither the bundle nor the system has it; that file loads "
        "only where the machine provides it"], out


def test_normaliz_cabinet_and_msi_are_parts_of_windows() -> None:
    facts = windows().facts()
    assert all(facts.is_system(name) for name in ("Normaliz.dll", "CABINET.dll", "msi.dll"))


@pytest.mark.parametrize("name", ["dxcore.dll", "MSVCP140_ATOMIC_WAIT.dll", "msvcp140_2.dll",
                                  "VCCORLIB140.dll", "api-ms-win-core-synch-l1-2-0.dll"])
def test_windows_and_the_vc_redistributable_provide_these(name: str) -> None:
    """onnxruntime 1.22 imports dxcore.dll, 1.31 MSVCP140_ATOMIC_WAIT.dll: neither is a
    "not provided" line."""
    assert windows().facts().is_system(name)


@pytest.mark.parametrize("name", ["cufft64_100.dll", "curand64_100.dll", "cusolver64_100.dll",
                                  "cusparse64_100.dll"])
def test_cuda_10_0_math_libraries_are_cuda_libraries(name: str) -> None:
    facts = windows().facts()
    assert facts.is_cuda_library(name) and facts.cuda_majors_of(name.lower()) == (10,)
