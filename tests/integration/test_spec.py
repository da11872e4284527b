"""Spec loading: what a user gets wrong must be an exit-2 error naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.cli import main
from bundler.errors import SpecError
from bundler.pack.spec import load_spec
from tests.harness.packing import bundler_cli

GOOD = """
[app]
name = "ocr-server"
path = "app"
entry = "main.py"

[runtime]
recipe = "cudnn-8.0.3.33-cuda10.1-win-x64"
components = ["cnn_infer"]

[sources]
cudnn = "downloads/cudnn.zip"
"""


def write(tmp_path: Path, text: str) -> Path:
    spec = tmp_path / "app.spec"
    spec.write_text(text)
    return spec


def test_good_spec_loads_with_defaults(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD))
    assert spec.name == "ocr-server"
    assert spec.builder == "folder"
    assert spec.app_path == tmp_path / "app"
    assert spec.runtime_dir == "cudnn"
    assert spec.components == ["cnn_infer"]
    assert spec.sources == {"cudnn": "downloads/cudnn.zip"}
    assert spec.default_out() == tmp_path / "dist" / "ocr-server"
    assert spec.lock_path == tmp_path / "app.spec.lock"


def test_entry_with_backslashes_is_normalised(tmp_path: Path) -> None:
    spec = load_spec(write(tmp_path, GOOD.replace('entry = "main.py"',
                                                  'entry = "src\\\\main.py"')))
    assert spec.entry == "src/main.py"


@pytest.mark.parametrize("change, expected", [
    (("name = \"ocr-server\"", "name = \"ocr-server\"\ncolour = \"red\""), "unknown key"),
    (("components = [\"cnn_infer\"]", "components = \"cnn_infer\""), "must be a list"),
    (("recipe = \"cudnn-8.0.3.33-cuda10.1-win-x64\"", ""), "missing required key 'runtime.recipe'"),
    (("[runtime]", "[runtime]\ndir = \"../up\""), "escapes its folder"),
    (("name = \"ocr-server\"", "name = \"a/b\""), "cannot be a folder name"),
    (("name = \"ocr-server\"", "name = \"CON\""), "cannot be a folder name"),
    (("name = \"ocr-server\"", "name = \"nul.app\""), "cannot be a folder name"),
    (("name = \"ocr-server\"", "name = \"server.\""), "cannot be a folder name"),
    (("entry = \"main.py\"", "entry = \"..\\\\main.py\""), "escapes its folder"),
    (("[runtime]", "[runtime]\ndir = \"aux\""), "Windows cannot name"),
    (("entry = \"main.py\"", "entry = \"con/main.py\""), "Windows cannot name"),
    (("entry = \"main.py\"", "entry = \"main\u202eyp.py\""), "bidirectional control"),
    (("[runtime]", "[runtime]\ndir = \"cu?dnn\""), "does not allow in a name"),
    (("path = \"app\"", "path = \"app\"\nbuilder = \"docker\""), "unknown"),
    (("cudnn = \"downloads/cudnn.zip\"", "cudnn = 3"), "must be a string"),
    (("[app]", "[app\n"), "not valid TOML"),
])
def test_bad_specs_are_named_errors(tmp_path: Path, change: tuple[str, str],
                                    expected: str) -> None:
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert expected in caught.value.message
    assert str(path) in caught.value.message
    assert caught.value.hint


def test_malformed_spec_exits_2_with_one_line(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, GOOD.replace("[app]", "[app]\nnmae = 1"))
    assert main(["pack", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("bundler: error: ") and "nmae" in err[0]
    assert err[1].startswith("hint: ")
    assert "Traceback" not in "\n".join(err)


def test_pyinstaller_builder_needs_script_or_spec(tmp_path: Path) -> None:
    text = GOOD.replace('path = "app"\nentry = "main.py"', 'builder = "pyinstaller"')
    with pytest.raises(SpecError, match="exactly one of"):
        load_spec(write(tmp_path, text))


def test_a_misspelt_key_is_named_with_the_closest_known_one(tmp_path: Path) -> None:
    """`recipie` is reported as unknown, not as a missing `recipe`."""
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "a"\npath = "app"\n[runtime]\nrecipie = "x"\n'
                    'dirr = "rt"\n')
    with pytest.raises(SpecError) as raised:
        load_spec(spec)
    assert "unknown key 'runtime.recipie' (did you mean 'recipe'?)" in raised.value.message


def test_every_unknown_key_is_named_with_its_closest_known_one(tmp_path: Path) -> None:
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "a"\npath = "app"\nentri = "main.py"\n'
                    'colour = "red"\n[runtime]\nrecipe = "x"\n')
    with pytest.raises(SpecError) as raised:
        load_spec(spec)
    message, hint = raised.value.message, raised.value.hint
    assert "unknown keys 'app.colour', 'app.entri' (did you mean 'entry'?)" in message
    assert "the keys in [app] are: " in hint and "docs/spec-format.md" in hint


def test_inputs_may_live_outside_the_spec_folder(tmp_path: Path) -> None:
    """Where the app comes from is the user's business: '..' and absolute paths."""
    folder = tmp_path / "packaging"
    folder.mkdir()
    spec = load_spec(write(folder, GOOD.replace('path = "app"', 'path = "../src/app"')))
    assert spec.app_path == tmp_path / "src" / "app"
    absolute = (tmp_path / "elsewhere" / "main.py").as_posix()
    frozen = load_spec(write(folder, GOOD.replace(
        'path = "app"\nentry = "main.py"', f'builder = "pyinstaller"\nscript = "{absolute}"')))
    assert frozen.script == tmp_path / "elsewhere" / "main.py"
    own = load_spec(write(folder, GOOD.replace('path = "app"\nentry = "main.py"',
                                               'builder = "pyinstaller"\n'
                                               'pyinstaller_spec = "..\\\\ocr.spec"')))
    assert own.pyinstaller_spec == tmp_path / "ocr.spec"


def test_a_spec_in_a_subfolder_packs_an_app_beside_it(tmp_path: Path, standin_zip: Path,
                                                      standin_toolkit: Path) -> None:
    (tmp_path / "src" / "app").mkdir(parents=True)
    (tmp_path / "src" / "app" / "main.py").write_text("print('hello')\n")
    (tmp_path / "packaging").mkdir()
    spec = write(tmp_path / "packaging", f"""
[app]
name = "app"
path = "../src/app"
entry = "main.py"

[runtime]
recipe = "cudnn-8.0.3.33-cuda10.1-win-x64"
allow_unsigned = ["cudnn*.dll"]   # stand-ins

[sources]
cudnn = "{standin_zip.as_posix()}"
cuda = "{standin_toolkit.as_posix()}"
""")
    result = bundler_cli("pack", spec, capture=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "packaging" / "dist" / "app" / "main.py").read_text().endswith(
        "print('hello')\n")


def test_a_typo_is_named_by_the_cli_with_the_key_it_meant(tmp_path: Path) -> None:
    spec = write(tmp_path, GOOD.replace("recipe = ", "recipie = "))
    result = bundler_cli("pack", spec, capture=True)
    assert result.returncode == 2
    assert "unknown key 'runtime.recipie' (did you mean 'recipe'?)" in result.stderr
    assert result.stderr.startswith("bundler: error: ") and "Traceback" not in result.stderr


@pytest.mark.parametrize("old, new, says", [
    ('path = "app"\nentry = "main.py"', 'builder = "pyinstaller"\nscript = "m.py"\n'
     'entry = "main.py"', "app.entry is for builder"),
    ('entry = "main.py"', 'entry = "main.py"\nonefile = true', "onefile need builder"),
])
def test_a_key_the_builder_would_ignore_is_refused(tmp_path: Path, old: str, new: str,
                                                   says: str) -> None:
    spec = tmp_path / "app.spec"
    spec.write_text(GOOD.replace(old, new))
    with pytest.raises(SpecError, match=says):
        load_spec(spec)
