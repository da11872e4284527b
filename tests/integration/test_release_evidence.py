"""Every readable version fact must agree with the recipe (issue 28 item 2): what any
DLL's cudnnGetVersion returns (the shim cudnn64_8.dll included, not only the sub-library
the recipe names) and a FileVersion that reads as a cuDNN release. Stand-ins of cuDNN
8.0.5.39 zipped under the 8.0.3.33 name are refused and the previous bundle stays; only
the absence of evidence is a note."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bundler.pack.resolve import release_number
from tests.harness.packing import Workspace, run_cli, snapshot
from tests.harness.winenv import require_toolchain
from tests.harness.winenv.build import build_runtime, make_nvidia_zip, nvidia_zip_name

OTHER = (8, 0, 5, 39)


@pytest.fixture(scope="module")
def other_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stand-in DLLs of cuDNN 8.0.5.39: FileVersion 8.0.5.39, cudnnGetVersion 8005
    (`mov eax, 8005; ret` in the shim and in cudnn_ops_infer64_8)."""
    require_toolchain()
    return build_runtime(tmp_path_factory.mktemp("cudnn-8.0.5.39"), cudnn_version=OTHER).dir


@pytest.fixture
def workspace(packed_workspace: Workspace) -> Workspace:
    return packed_workspace


def _zip_with(tmp_path: Path, standin_dir: Path, other_dir: Path, taken: list[str]) -> Path:
    """The 8.0.3.33 stand-in zip, named as NVIDIA names 8.0.3.33's, with `taken` DLLs
    from the 8.0.5.39 build."""
    folder = tmp_path / "mixed"
    shutil.copytree(standin_dir, folder)
    for name in taken:
        shutil.copy(other_dir / name, folder / name)
    return make_nvidia_zip(folder, tmp_path / "downloads" / nvidia_zip_name(), "deflate")


def test_release_numbers_are_cudnns_own() -> None:
    assert [release_number(v) for v in ("7.6.5.32", "8.0.3.33", "8.9.7.29", "9.1.0.70",
                                        "9.19.0.56")] == [7605, 8003, 8907, 90100, 91900]


@pytest.mark.parametrize(("taken", "said"), [
    (["cudnn64_8.dll", "cudnn_ops_infer64_8.dll", "cudnn_ops_train64_8.dll",
      "cudnn_cnn_infer64_8.dll", "cudnn_cnn_train64_8.dll", "cudnn_adv_infer64_8.dll",
      "cudnn_adv_train64_8.dll"],
     ["cudnn_ops_infer64_8.dll: its cudnnGetVersion returns 8005",
      "cudnn_adv_train64_8.dll has version 8.0.5.39, a cuDNN release other than the "
      "recipe's 8.0.3.33"]),
    (["cudnn64_8.dll"], ["cudnn64_8.dll: its cudnnGetVersion returns 8005, the recipe "
                         "expects 8003"]),
    (["cudnn_cnn_infer64_8.dll"], ["cudnn_cnn_infer64_8.dll has version 8.0.5.39"]),
], ids=["the-whole-set", "the-shim-alone", "a-file-version-alone"])
def test_another_release_under_the_recipes_name_is_refused_and_the_bundle_stays(
        workspace: Workspace, tmp_path: Path, standin_runtime, other_release: Path,
        taken: list[str], said: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    archive = _zip_with(tmp_path, standin_runtime.dir, other_release, taken)
    before = snapshot(workspace.root)
    # --update-lock: the lock would accept the new input; the release check must not.
    code, out, err = run_cli(capsys, "pack", workspace.spec, "--source", f"cudnn={archive}",
                             "--update-lock")
    assert code == 2 and out == ""
    for text in said:
        assert text in err
    assert "holds another release than the recipe names" in err
    assert snapshot(workspace.root) == before


def test_a_set_whose_evidence_agrees_packs_without_a_note(
        workspace: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """The stand-ins' FileVersion and cudnnGetVersion say 8.0.3.33: read, checked, no
    note. (Only absent evidence is a note, not a refusal: code bundler cannot read,
    tests/wine/test_cudnn7_wine.py.)"""
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    line = next(text for text in out.splitlines() if text.startswith("  input cudnn:"))
    assert "not checked" not in line
