"""cuDNN 7 (CUDA 10.x), the seeds' frameworks' cuDNN: a Paddle 2.1 app (CUDA 10.1) packs with a
cuDNN 7 release named from the catalogue, its one DLL checked by cudnnGetVersion's code
and the CUDA-style version resource, and the bundle's copy loads under Wine ahead of a
decoy on PATH.

The cuDNN 7 DLL is a stand-in built like NVIDIA's (one DLL, imports only KERNEL32,
FileVersion 6.14.11.10010, cudnnGetVersion = `mov eax, 7604; ret`); the real one is
packed by the opt-in tests/real/test_releases_real.py.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pefile
import pytest

from bundler.formats.manifest import read_manifest
from tests.harness.packing import run_cli
from tests.harness.winenv import WindowsPython, require_toolchain
from tests.harness.winenv.build import build_dll, cudnn_spec
from tests.harness.winenv.shaped import Shape, build_shaped, dist_info
from tests.integration.test_app_scan import write_spec
from tests.wine.test_frameworks_wine import LOADER, decoy_dir, run_loader

RELEASE = "cudnn-7.6.4.38-cuda10.1-win-x64"   # no public sha256: trusted on first pack
MATH = ("cufft64_10.dll", "curand64_10.dll", "cusparse64_10.dll", "cusolver64_10.dll")


def cudnn7_zip(root: Path, number: int = 7604, name: str = "cudnn-10.1-windows10-x64-v7.6.4.38.zip"
               ) -> Path:
    require_toolchain()
    spec = replace(cudnn_spec((7, 6, 4, 38)), name="cudnn64_7.dll", version=(6, 14, 11, 10010),
                   defines=(("STANDIN_CUDNN_VERSION", str(number)),
                            ("STANDIN_CUDART_VERSION", "10010")))
    dll = build_dll(spec, root / "dll")
    path = root / name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(dll, "cuda/bin/cudnn64_7.dll")
        archive.writestr("cuda/NVIDIA_SLA_cuDNN_Support.txt", "stand-in licence\n")
        archive.writestr("cuda/include/cudnn.h", "#define CUDNN_MAJOR 7\n")
    return path


def paddle_app(root: Path, toolkit: Path) -> Path:
    tk = root / "v10.1"
    shutil.copytree(toolkit, tk)
    for name in MATH:
        imports = (("cublas64_10.dll", ("cublasGetVersion_v2",)),) \
            if name.startswith("cusolver") else ()
        build_shaped(Shape(name, imports), tk / "bin")
    # 2.1: the CUDA 10.1 row (PyPI's 2.2.2 is a CUDA 10.2 build, refused with 10.1)
    dist_info(root / "app", "paddlepaddle-gpu", "2.1.3")
    (root / "app" / "main.py").write_text(LOADER)
    return tk


def test_a_paddle_2_1_app_packs_and_loads_its_cudnn_7(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], standin_toolkit: Path,
        win_python: WindowsPython) -> None:
    toolkit = paddle_app(tmp_path, standin_toolkit)
    spec = write_spec(tmp_path, RELEASE, {"cudnn": cudnn7_zip(tmp_path), "cuda": toolkit},
                      entry="main.py")
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert {"cufft", "curand", "cusparse", "cusolver", "core"} <= set(summary["components"])
    manifest = read_manifest(tmp_path / "dist" / "app" / "cudnn" / "manifest.json")
    assert (manifest.versions.cudnn, manifest.versions.cuda) == ("7.6.4.38", "10.1")
    code, text, _ = run_cli(capsys, "pack", spec)
    assert "trusted on first pack" in text
    decoys = decoy_dir(tmp_path, {"cudnn64_7.dll": ("cudnnGetVersion",)})
    loaded = run_loader(win_python, tmp_path / "dist" / "app" / "main.py",
                        ["cudnn64_7.dll"], ["cudnn64_7.dll"], decoys)
    assert loaded["errors"] == {"cudnn64_7.dll": 0}
    assert "\\dist\\app\\cudnn\\" in loaded["modules"]["cudnn64_7.dll"], loaded


def test_a_cudnn_7_of_another_release_is_refused_by_its_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], standin_toolkit: Path) -> None:
    """Its FileVersion says only CUDA 10.1: the release is read from cudnnGetVersion."""
    toolkit = paddle_app(tmp_path, standin_toolkit)
    spec = write_spec(tmp_path, RELEASE, {"cudnn": cudnn7_zip(tmp_path, number=7500),
                                          "cuda": toolkit})
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2
    assert "cudnn64_7.dll: its cudnnGetVersion returns 7500, the recipe expects 7604" in err


def test_a_pinned_cudnn_7_release_refuses_an_archive_that_is_not_the_published_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], standin_toolkit: Path) -> None:
    toolkit = paddle_app(tmp_path, standin_toolkit)
    zip_path = cudnn7_zip(tmp_path, number=7605, name="cudnn-10.1-windows10-x64-v7.6.5.32.zip")
    spec = write_spec(tmp_path, "cudnn-7.6.5.32-cuda10.1-win-x64",
                      {"cudnn": zip_path, "cuda": toolkit})
    code, _, err = run_cli(capsys, "pack", spec)
    assert code == 2 and "sha256" in err


def test_an_era_whose_signing_is_unknown_checks_a_signature_only_where_present(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cuDNN 8.0-8.8 exist only as NVIDIA's login-only zips: whether NVIDIA signed them is
    not known, so an unsigned DLL passes only in a zip verified by a known sha256 (the
    trust ladder, tests/integration/test_trust_ladder.py); this release has none recorded, so the
    unsigned stand-ins are refused unless allow_unsigned names them."""
    require_toolchain()
    from tests.harness.winenv.build import build_runtime, make_nvidia_zip, make_toolkit

    runtime = build_runtime(tmp_path / "dlls", cudnn_version=(8, 1, 1, 33), cuda="10.2")
    archive = make_nvidia_zip(runtime.dir, tmp_path / "cudnn-10.2-windows10-x64-v8.1.1.33.zip",
                              "deflate", cudnn_version=(8, 1, 1, 33))
    toolkit = make_toolkit(runtime.dir, tmp_path / "v10.2", cuda="10.2")
    (tmp_path / "app").mkdir()
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "app"\npath = "app"\n[runtime]\n'
                    'recipe = "cudnn-8.1.1.33-cuda10.2-win-x64"\n[sources]\n'
                    f'cudnn = "{archive.as_posix()}"\ncuda = "{toolkit.as_posix()}"\n')
    code, _, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 2 and "must be signed by 'NVIDIA Corporation'" in err
    spec.write_text(spec.read_text().replace("[sources]", 'allow_unsigned = ["cudnn*"]\n'
                                             "[sources]"))
    code, out, err = run_cli(capsys, "pack", spec, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert {f["signature"] for f in summary["files"] if f["name"].startswith("cudnn")} == {
        "allowed-unsigned"}
    assert "not checked" not in summary["inputs_trusted"]["cudnn"]   # 8101, read and right

    # The era's cudnnGetVersion code was never seen: code bundler cannot read (here
    # `xor eax, eax; ret`) is named in the summary, not refused; another number is.
    unreadable = build_shaped(Shape("cudnn_ops_infer64_8.dll", (), ("cudnnGetVersion",)),
                              tmp_path / "unreadable")
    _patch_export(unreadable, "cudnnGetVersion", bytes.fromhex("31c0c3"))
    _replace_member(archive, "cuda/bin/cudnn_ops_infer64_8.dll", unreadable.read_bytes())
    code, out, err = run_cli(capsys, "pack", spec, "--json", "--update-lock")
    assert code == 0, err
    assert ("cudnn_ops_infer64_8.dll's cudnnGetVersion is code bundler cannot read: its "
            "release is not checked") in json.loads(out)["inputs_trusted"]["cudnn"]


def _replace_member(path: Path, name: str, data: bytes) -> None:
    with zipfile.ZipFile(path) as old:
        members = {info.filename: old.read(info) for info in old.infolist()}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as new:
        for member, content in {**members, name: data}.items():
            new.writestr(member, content)


def _patch_export(path: Path, function: str, code: bytes) -> None:
    image = pefile.PE(str(path))
    rva = next(s.address for s in image.DIRECTORY_ENTRY_EXPORT.symbols
               if s.name == function.encode())
    offset = image.get_offset_from_rva(rva)
    image.close()
    data = bytearray(path.read_bytes())
    data[offset:offset + len(code)] = code
    path.write_bytes(bytes(data))
