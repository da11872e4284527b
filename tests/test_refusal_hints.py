"""A refused pack's hint names a release of the app's CUDA and cuDNN major (issue 27
item 3): an app built for CUDA 12 that imports cudnn64_8.dll, packed with a cuDNN 9
recipe, was told to use cudnn-8.0.3.33-cuda10.1-win-x64 (the first shipped recipe with
that DLL, of CUDA 10.1), and the catalogue fallback could name a Linux release."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.packing import run_cli
from tests.winenv.shaped import Shape, build_shaped


@pytest.mark.parametrize("imports, recipe, wanted", [
    (("cudnn64_8.dll", "cublas64_12.dll"), "cudnn-9.28.0.42-cuda12-win-x64",
     "cudnn-8.9.7.29-cuda12-win-x64"),
    (("cudnn64_8.dll", "cublas64_11.dll"), "cudnn-9.28.0.42-cuda12-win-x64",
     "-cuda11-win-x64"),
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
    assert "cudnn64_8.dll" in err and wanted in err
    assert "cuda10.1" not in err and "linux" not in err
