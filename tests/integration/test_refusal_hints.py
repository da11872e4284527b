"""A refused pack's hint names a release of the app's CUDA and cuDNN major (issue 27
item 3): an app built for CUDA 12 that imports cudnn64_8.dll, packed with a cuDNN 9
recipe, was told to use cudnn-8.0.3.33-cuda10.1-win-x64 (the first shipped recipe with
that DLL, of CUDA 10.1), and the catalogue fallback could name a Linux release."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.harness.packing import run_cli
from tests.harness.winenv.shaped import Shape, build_shaped


@pytest.mark.parametrize("imports, recipe, wanted", [
    # No shipped recipe is cuDNN 8 for CUDA 12: the catalogue's newest.
    (("cudnn64_8.dll", "cublas64_12.dll"), "cudnn-9.28.0.42-cuda12-win-x64",
     r"e\.g\. cudnn-8\.9\.7\.29-cuda12-win-x64 "),
    # The shipped CUDA 11 recipe ships both.
    (("cudnn64_8.dll", "cublas64_11.dll"), "cudnn-9.28.0.42-cuda12-win-x64",
     r"use cudnn-8\.9\.4\.25-cuda11-win-x64"),
    # Packed with the seed (CUDA 10.1): a cuDNN 9 release of the app's CUDA 11.
    (("cudnn64_9.dll", "cublas64_11.dll"), "cudnn-8.0.3.33-cuda10.1-win-x64",
     r"e\.g\. cudnn-9\.[\d.]+-cuda11-win-x64 "),
])
def test_a_wrong_major_refusal_names_a_release_of_the_apps_cuda(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], imports: tuple[str, ...],
        recipe: str, wanted: str) -> None:
    app = tmp_path / "app"
    build_shaped(Shape("model_runner.pyd", tuple((name, ()) for name in imports)), app)
    (app / "main.py").write_text("import model_runner\n")
    spec = tmp_path / "app.spec"
    spec.write_text(f'[app]\nname = "svc"\npath = "app"\nentry = "main.py"\n\n'
                    f'[runtime]\nrecipe = "{recipe}"\n')
    code, _, err = run_cli(capsys, "pack", str(spec), "--offline")
    assert code == 2, err
    assert re.search(wanted, err), err
    assert "cuda10.1-win-x64 (" not in err and "use cudnn-8.0.3.33" not in err
    assert "linux" not in err
