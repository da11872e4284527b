"""The command line as a user meets it: help, `python -m bundler`, recipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.packing import bundler_cli, run_cli
from tests.harness.winenv import PROJECT_ROOT


def test_python_dash_m_and_help() -> None:
    result = subprocess.run([sys.executable, "-m", "bundler", "--help"], capture_output=True,
                            text=True)
    assert result.returncode == 0
    for command in ("pack", "verify", "recipes"):
        assert command in result.stdout


def test_recipes_lists_the_seed_with_versions(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "recipes")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("cudnn-8.0.3.33-cuda10.1-win-x64"))
    assert "8.0.3.33" in line and "10.1" in line and "win-amd64" in line
    code, out, _ = run_cli(capsys, "recipes", "cudnn-8.0.3.33-cuda10.1-win-x64")
    assert "component cnn_train: cudnn_cnn_train64_8.dll -> ops_infer, ops_train, cnn_infer" in out
    assert "driver >= 418.96" in out


def test_unknown_recipe_and_missing_spec_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "recipes", "cudnn-0")
    assert code == 2 and "no shipped recipe is named 'cudnn-0'" in err
    code, _, err = run_cli(capsys, "pack", "nowhere/app.spec")
    assert code == 2 and "no such spec file" in err and "hint:" in err
    code, _, err = run_cli(capsys, "verify", "nowhere")
    assert code == 2 and "not a folder" in err


def test_an_installed_copy_ships_its_recipes_and_data(tmp_path: Path) -> None:
    """Outside a checkout the recipes and data files must come from the wheel."""
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--target", str(target), str(PROJECT_ROOT)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-m", "bundler", "recipes"], cwd=tmp_path,
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "cudnn-8.0.3.33-cuda10.1-win-x64" in result.stdout
    shipped = [line for line in result.stdout.splitlines() if line.startswith("cudnn-")]
    assert len(shipped) == len(list((PROJECT_ROOT / "recipes").glob("*.toml")))
    # The families and the release catalogue come with the wheel too.
    assert "cudnn9-win-x64: " in result.stdout
    rendered = subprocess.run([sys.executable, "-m", "bundler", "recipes",
                               "cudnn-9.1.0.70-cuda12-win-x64"], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
    assert rendered.returncode == 0, rendered.stderr
    assert "nvidia-cudnn-cu12==9.1.0.70" in rendered.stdout
    bundler_file = subprocess.run([sys.executable, "-c", "import bundler; print(bundler.__file__)"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bundler_file.stdout.startswith(str(target))


def test_recipes_help_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    help_text = bundler_cli("recipes", "--help", capture=True).stdout
    assert "Without NAME: every shipped recipe" in help_text
    assert "a recipe or release name" in help_text and "a version prefix" in help_text
    assert "a bundle made by bundler pack" in bundler_cli("verify", "--help", capture=True).stdout
    code, out, _ = run_cli(capsys, "recipes", "--json")
    listed = json.loads(out)
    assert code == 0 and [r["name"] for r in listed] == [
        p.stem for p in sorted((PROJECT_ROOT / "recipes").glob("*.toml"))]
    code, out, _ = run_cli(capsys, "recipes", "cudnn-8.0.3.33-cuda10.1-win-x64", "--json")
    one = json.loads(out)
    assert one["components"]["cnn_train"]["requires"] == ["ops_infer", "ops_train", "cnn_infer"]
    assert one["min_driver"] == "418.96"


@pytest.mark.parametrize("args", [["--debug", "recipes", "cudnn-0"],
                                  ["recipes", "cudnn-0", "--debug"]])
def test_debug_before_or_after_the_command_shows_the_traceback(args: list[str]) -> None:
    result = bundler_cli(*args, capture=True)
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "no shipped recipe is named" in result.stderr


def test_without_debug_no_traceback() -> None:
    result = bundler_cli("recipes", "cudnn-0", capture=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_doctor_on_linux_says_windows_dlls_on_path_are_judged_as_files_only(
        tmp_path: Path) -> None:
    """On Linux doctor reports the Linux machine (tests/linux/test_linux_doctor_machine.py);
    Windows DLLs found on PATH are listed, said to be judged as files only, without the
    old "this is not Windows" note that contradicted the Linux driver rows."""
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux")
    standin = PROJECT_ROOT / "examples/quickstart/standin-cuda/v10.1/bin"
    env = {**os.environ, "PATH": f"{standin}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run([sys.executable, "-m", "bundler", "doctor"], env=env,
                            capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode in (0, 1), result.stderr
    assert "this is not Windows" not in result.stdout
    assert "Windows DLLs on this machine's PATH (files only):" in result.stdout
    assert "cudart64_101.dll" in result.stdout
    assert ("the DLLs listed are Windows files on this machine's PATH: doctor judged the "
            "files (machine, version, signature), not what a Windows process would load"
            ) in result.stdout


@pytest.mark.parametrize("typo, meant", [
    ("cudnn-9.28.0.42-cud12-win-x64", "'cudnn-9.28.0.42-cuda12-win-x64'"),
    ("cudnn-8.0.3.33-cuda10.1-win", "'cudnn-8.0.3.33-cuda10.1-win-x64'")])
def test_an_unknown_recipe_name_suggests_the_closest(
        capsys: pytest.CaptureFixture[str], typo: str, meant: str) -> None:
    code, _, err = run_cli(capsys, "recipes", typo)
    assert code == 2 and f"no shipped recipe is named '{typo}' (did you mean {meant}?)" in err


@pytest.mark.parametrize("table, typo, meant", [
    ("runtime", "cuffft", "'cufft'"),
    ("runtime", "cnn_infer", "'cnn'"),       # cuDNN 8's name, in a cuDNN 9 recipe
    ("scan", "cusparce", "'cusparse'")])
def test_an_unknown_component_in_a_spec_suggests_the_closest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str, typo: str,
        meant: str) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    spec = tmp_path / "app.spec"
    runtime = '[runtime]\nrecipe = "cudnn-9.28.0.42-cuda12-win-x64"\n'
    listed = f'components = ["{typo}"]\n'
    tables = runtime + listed if table == "runtime" else f"{runtime}\n[scan]\n{listed}"
    spec.write_text(f'[app]\nname = "app"\npath = "app"\n\n{tables}')
    code, _, err = run_cli(capsys, "pack", spec, "--offline")
    assert code == 2, err
    assert (f"recipe cudnn-9.28.0.42-cuda12-win-x64 has no component '{typo}' "
            f"(did you mean {meant}?)") in err
    assert "hint: choose from: cudart, cublas, core," in err
