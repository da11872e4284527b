"""The framework table's rows close their gaps (issue 43 item 2): every TensorFlow 2.x
row names its CUDA's eight (or seven) libraries and its cuDNN minimum; a row no release
can satisfy (TensorFlow 2.4's cusolver64_10.dll, CUDA 11.0's name) is refused at pack
naming the library and the CUDA that has it; Paddle's CUDA builds named by their version
tag (2.2.2.post101: CUDA 10.1) are judged by the tag, not as PyPI's default build."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.frameworks.facts import FrameworkFacts, cuda_named, fits, fitting_releases
from bundler.targets.registry import windows
from tests.harness.packing import run_cli
from tests.harness.winenv.shaped import dist_info

# version: (its CUDA, the cuDNN major, the cuDNN minimum, how many libraries it loads)
TENSORFLOW = {
    "2.0.4": ("10.0", "7", "7.4", 7), "2.1.4": ("10.1", "7", "7.6", 7),
    "2.3.4": ("10.1", "7", "7.6", 7), "2.4.4": ("11.0", "8", "8.0", 8),
    "2.5.3": ("11.2", "8", "8.1", 8), "2.9.3": ("11.2", "8", "8.1", 8),
    "2.10.1": ("11.2", "8", "8.1", 8),
}


@pytest.mark.parametrize("version", sorted(TENSORFLOW))
def test_every_tensorflow_2_row_names_its_cudas_libraries(version: str) -> None:
    cuda, cudnn_major, minimum, count = TENSORFLOW[version]
    facts = windows().facts()
    row = windows().driver_table().framework_entry("tensorflow-gpu", version)
    assert row is not None and (row.cuda, row.cudnn) == (cuda, minimum), row
    assert len(row.loads) == count, row.loads
    assert f"cudnn64_{cudnn_major}.dll" in row.loads
    major = int(cuda.split(".")[0])
    for name in row.loads:   # each a library of its CUDA (cudart64_110 is 11.0's)
        if not name.startswith("cudnn"):
            assert major in facts.cuda_majors_of(name), (name, row.name)
    assert any(n.startswith("cufft") for n in row.loads)
    assert any(n.startswith("cusolver") for n in row.loads)


def test_tensorflow_2_4_is_refused_naming_the_library_no_release_ships(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """init writes TO DECIDE; pack of its spec (and of any CUDA 11 release) refuses,
    naming cusolver64_10.dll and the CUDA that has it, before any input is read."""
    app = tmp_path / "app"
    dist_info(app / "Lib" / "site-packages", "tensorflow-gpu", "2.4.4")
    (app / "main.py").write_text("import tensorflow\n")
    code, _, err = run_cli(capsys, "init", app)
    assert code == 0, err
    spec = (tmp_path / "app.spec").read_text()
    assert "TO DECIDE: cusolver64_10.dll (loaded by tensorflow-gpu 2.4.4)" in spec
    assert "recipe: TO DECIDE: no cuDNN release bundler knows" in spec
    code, _, err = run_cli(capsys, "pack", tmp_path / "app.spec", "--offline")
    assert code == 2, err
    assert "tensorflow-gpu 2.4.4 loads cusolver64_10.dll" in err
    assert "no release bundler knows ships cusolver64_10.dll for CUDA 11" in err
    assert "cusolver64_10.dll is CUDA 11.0's" in err
    assert "the CUDA 10.1 and 10.2 runtime sets ship it" in err
    assert "wheel cache" not in err   # refused before any input is looked for
    row = windows().driver_table().framework_entry("tensorflow-gpu", "2.4.4")
    assert fitting_releases([FrameworkFacts("tensorflow-gpu", "2.4.4", row=row)],
                            "win-x64") == []


@pytest.mark.parametrize("version, cuda, said, row_name", [
    ("2.2.2", "10.2", "row 'PaddlePaddle 2.2-2.4 (CUDA 10.2)'", "(CUDA 10.2)"),
    ("2.2.2.post101", "10.1", "its version tag post101", "post101 (CUDA 10.1)"),
    ("2.4.2.post112", "11.2", "its version tag post112", "post112 (CUDA 11.2)"),
    ("2.6.2.post126", "12.6", "its version tag post126", ""),   # no row: the tag alone
])
def test_paddle_builds_are_judged_by_their_version_tag(version: str, cuda: str, said: str,
                                                       row_name: str) -> None:
    table = windows().driver_table()
    row = table.framework_entry("paddlepaddle-gpu", version)
    assert (row.name if row else "").endswith(row_name) and bool(row) == bool(row_name)
    named, by = cuda_named("paddlepaddle-gpu", version)
    facts = FrameworkFacts("paddlepaddle-gpu", version, by, cuda=named, row=row)
    assert facts.cuda_needed()[0] == cuda
    assert said in facts.cuda_needed()[1]
    wrong = "10.2" if cuda != "10.2" else "11"
    assert fits(facts, wrong, "") is not None
    releases = fitting_releases([facts], "win-x64")
    assert releases and all(fits(facts, r.cuda, r.cudnn) is None for r in releases)
    if row is not None and row.loads:
        assert "nvjpeg64_1" in " ".join(row.loads) or cuda.startswith("12")


def test_a_tagged_paddle_installed_without_its_build_info_gets_its_cudas_release(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2.2.2.post101 (CUDA 10.1, cuDNN 7): a CUDA 10.1 release with nvJPEG, not the PyPI
    build's CUDA 10.2; packed with a CUDA 10.2 release it is refused, naming the row."""
    app = tmp_path / "app"
    dist_info(app / "Lib" / "site-packages", "paddlepaddle-gpu", "2.2.2.post101")
    (app / "main.py").write_text("import paddle\n")
    code, _, err = run_cli(capsys, "init", app)
    assert code == 0, err
    spec = (tmp_path / "app.spec").read_text()
    assert 'recipe = "cudnn-7.6.5.32-cuda10.1-win-x64"' in spec, spec
    assert "# nvjpeg: nvjpeg64_10.dll: loaded by paddlepaddle-gpu 2.2.2.post101" in spec
    (tmp_path / "app.spec").write_text(spec.replace("cuda10.1-win-x64", "cuda10.2-win-x64"))
    code, _, err = run_cli(capsys, "pack", tmp_path / "app.spec", "--offline")
    assert code == 2, err
    assert "is built for CUDA 10.1 (its version tag post101 says 10.1)" in err, err
    assert "cudnn-7.6.5.32-cuda10.1-win-x64" in err


def test_a_refusal_suggests_the_release_pack_fetches_before_a_newer_zip() -> None:
    """cudnn64_8.dll for CUDA 11: NVIDIA's newest is 8.9.7.29, a login-only zip; pack
    fetches 8.9.5.29 itself (its PyPI wheel), as init picks it. Without a wheel, the zip."""
    from bundler.recipe.load import families_dir
    from bundler.releases.render import release_shipping
    assert release_shipping("cudnn64_8.dll", "11", families_dir(), "win-x64") == \
        "cudnn-8.9.5.29-cuda11-win-x64"
    assert release_shipping("cudnn64_7.dll", "10.1", families_dir(), "win-x64") == \
        "cudnn-7.6.5.32-cuda10.1-win-x64"
