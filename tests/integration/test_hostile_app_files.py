"""Files of the user's app that no bundler wrote (issue 42, "Exit 3 and hangs"): every
one bundler reads goes through one bounded reader (support/regular_files.py) that
refuses what is not a regular file of a bounded size, judged by its size before a byte
is read. So a binary that is a pipe or a link to /dev/zero, a sparse 20 GB `.dll`, a
dist-info's METADATA that is a pipe, and a framework's build-info file that is a pipe,
a folder or not plain literals are refused by name (exit 2) or reported as unreadable,
never waited on, read for minutes, taken as absent or an internal error (exit 3).
Name lookups read each shipped recipe once, not once a name (40,000 names in a binary).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bundler.errors import CheckError
from bundler.frameworks import facts as facts_module
from bundler.frameworks.facts import fits, frameworks_in, refuse_unfit
from bundler.recipe import load
from bundler.targets.registry import windows
from tests.harness.packing import run_cli
from tests.integration.test_embedded_python import bundler_cache
from tests.integration.test_framework_facts import (
    CU12,
    PADDLE_VERSION,
    install,
    loader_binary,
    paddle_app,
    write_spec,
)
from tests.integration.test_hostile_files import make_fifo, needs_fifo, run_bounded

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"
PADDLE_FILE = "site-packages/paddle/version/__init__.py"


def folder_app(root: Path) -> Path:
    app = root / "app"
    app.mkdir(parents=True)
    (app / "main.py").write_text("print('hello')\n")
    return app


def refused(path: Path, *args: object) -> str:
    """`bundler ARGS` in a child killed if it blocks: exit 2 naming `path`."""
    done = run_bounded(*args)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"bundler: error: {path}: "), done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    return done.stderr


# ------------------------------------------------------------- the app's binaries (#15, #18)

@needs_fifo
@pytest.mark.parametrize("hostile", ["fifo", "dev-zero"])
def test_a_binary_that_is_a_pipe_or_dev_zero_is_refused_by_pack_and_init(
        tmp_path: Path, hostile: str) -> None:
    app = folder_app(tmp_path)
    if hostile == "fifo":
        binary = make_fifo(app / "fifo.dll")
    else:
        binary = app / "evil.dll"
        binary.symlink_to("/dev/zero")
    spec = write_spec(tmp_path, SEED)
    for args in (("pack", spec), ("init", app, "--out", tmp_path / "init.spec")):
        err = refused(binary, *args)
        assert "not a regular file" in err and "app scan" in err, err


def test_a_sparse_20_gb_binary_is_judged_by_its_size_never_read(tmp_path: Path) -> None:
    app = folder_app(tmp_path)
    huge = app / "huge.dll"
    try:
        with open(huge, "wb") as handle:
            handle.truncate(20 << 30)   # sparse: no block written
        spec = write_spec(tmp_path, SEED)
        for args in (("pack", spec), ("init", app, "--out", tmp_path / "init.spec")):
            err = refused(huge, *args)
            assert "larger than any library an OS loads (4 GiB)" in err, err
    finally:
        huge.unlink(missing_ok=True)


# ------------------------------------------------------------ dist-info METADATA (#16)

@needs_fifo
@pytest.mark.parametrize("hostile", ["fifo", "dev-zero"])
def test_a_dist_info_metadata_that_is_a_pipe_or_dev_zero_is_refused(
        tmp_path: Path, hostile: str) -> None:
    app = folder_app(tmp_path)
    info = app / "site-packages" / "evil-1.0.dist-info"
    info.mkdir(parents=True)
    metadata = info / "METADATA"
    if hostile == "fifo":
        make_fifo(metadata)
    else:
        metadata.symlink_to("/dev/zero")
    spec = write_spec(tmp_path, SEED)
    for args in (("pack", spec), ("init", app, "--out", tmp_path / "init.spec")):
        err = refused(metadata, *args)
        assert "not a regular file" in err and "not a file pip installed" in err, err


# ------------------------------------------------- build-info files (#14, #22)

def paddle_facts(app: Path) -> facts_module.FrameworkFacts:
    (facts,) = frameworks_in(app, windows().driver_table())
    return facts


@pytest.mark.parametrize("text, line", [
    ("x = f(5)\n", 1),                                   # the attack: TypeError, exit 3
    ("cuda_version = compute()\n", 1),                   # a figure computed at import
    ("x = OrderedDict(5)\n", 1),                         # TensorFlow's shape, not a table
    ("if True:\n    cuda_version = '12.0'\n", 1),        # what runs cannot be known
    ("cuda_version += '.1'\n", 1),
], ids=["call", "computed-figure", "bad-ordered-dict", "if", "augmented"])
def test_build_info_that_is_not_plain_literals_is_unreadable_and_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int) -> None:
    app = paddle_app(tmp_path)
    build_info = app / "Lib" / "site-packages" / "paddle" / "version" / "__init__.py"
    build_info.write_text(text + PADDLE_VERSION)
    facts = paddle_facts(app)
    assert f"line {line}: not " in facts.unreadable, facts
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12))
    assert code == 2, err
    assert "paddlepaddle-gpu 2.6.2's build-info file cannot be read" in err
    code, out, err = run_cli(capsys, "init", app)
    assert code in (0, 1, 2) and "internal error" not in err, err


@pytest.mark.parametrize("figure", ["'v8.6'", "'abc'", "[]", "{'x': 1}"])
def test_a_cudnn_figure_that_is_no_version_is_unreadable_not_an_internal_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], figure: str) -> None:
    """fits() compared it as an empty version and stopped with an IndexError (exit 3)."""
    app = paddle_app(tmp_path)
    build_info = app / "Lib" / "site-packages" / "paddle" / "version" / "__init__.py"
    build_info.write_text(PADDLE_VERSION.replace("'8.6.0'", figure))
    assert "its cudnn version " in paddle_facts(app).unreadable
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12))
    assert code == 2 and "build-info file cannot be read" in err, err


def test_generated_build_info_files_are_still_read(tmp_path: Path) -> None:
    """What the real files hold (literals, imports, defs, TensorFlow's OrderedDict and
    torch's annotations) is read as before."""
    facts = paddle_facts(paddle_app(tmp_path))
    assert (facts.cuda, facts.cudnn, facts.unreadable) == ("11.8", "8.6.0", "")


@needs_fifo
@pytest.mark.parametrize("hostile", ["fifo", "dev-zero", "folder", "dangling-link"])
def test_a_build_info_file_that_is_no_regular_file_is_unreadable_not_absent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], hostile: str) -> None:
    app = paddle_app(tmp_path)
    build_info = app / "Lib" / "site-packages" / "paddle" / "version" / "__init__.py"
    build_info.unlink()
    if hostile == "fifo":
        make_fifo(build_info)
    elif hostile == "folder":
        build_info.mkdir()
    else:
        build_info.symlink_to("/dev/zero" if hostile == "dev-zero" else tmp_path / "gone")
    facts = paddle_facts(app)
    assert facts.unreadable.startswith("Lib/" + PADDLE_FILE), facts
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, CU12))
    assert code == 2 and "build-info file cannot be read" in err, err


def test_a_missing_build_info_file_is_absent(tmp_path: Path) -> None:
    app = paddle_app(tmp_path)
    (app / "Lib" / "site-packages" / "paddle" / "version" / "__init__.py").unlink()
    assert paddle_facts(app).unreadable == ""


# ----------------------------------------------------------- name lookups (#17)

def test_each_shipped_recipe_is_read_once_for_thousands_of_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary naming 2,000 libraries no recipe ships: the refusal asks, per name,
    which shipped recipe has it; each recipe file is read once for all of them."""
    app = folder_app(tmp_path)
    names = tuple(f"cudnn_fake{i}64_8.dll" for i in range(2000))
    (app / "x.pyd").write_bytes(loader_binary(names))
    reads: list[Path] = []
    real = load.load_recipe_file

    def counting(path: Path) -> load.Recipe:
        reads.append(path)
        return real(path)
    monkeypatch.setattr(load, "load_recipe_file", counting)
    load._read_recipes.cache_clear()
    code, _, err = run_cli(capsys, "pack", write_spec(tmp_path, SEED))
    assert code == 2 and "cudnn_fake064_8.dll" in err and "and 1992 more" in err, err
    shipped = len(list(load.shipped_recipe_dir().glob("*.toml")))
    assert len(reads) <= shipped + 1, f"{len(reads)} recipe reads for {shipped} recipes"


def test_an_edited_shipped_recipe_is_read_again(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "recipes"
    folder.mkdir()
    seed = load.shipped_recipe_dir() / f"{SEED}.toml"
    copy = folder / seed.name
    copy.write_bytes(seed.read_bytes())
    monkeypatch.setattr(load, "shipped_recipe_dir", lambda: folder)
    assert [r.description for r in load.shipped_recipes()] == [
        load.load_recipe_file(seed).description]
    copy.write_text(copy.read_text().replace('description = "', 'description = "edited '))
    os.utime(copy, ns=(1, 1))   # whatever the clock: the stamp changed
    assert load.shipped_recipes()[0].description.startswith("edited ")


# ------------------------------------------------------------------ requirement files

@needs_fifo
@pytest.mark.parametrize("hostile", ["fifo", "dev-zero"])
def test_a_requirements_file_that_is_a_pipe_or_dev_zero_is_not_waited_on_by_init(
        tmp_path: Path, hostile: str) -> None:
    """init takes a requirements.txt that is a regular file only: a pipe is passed over."""
    app = folder_app(tmp_path)
    requirements = app / "requirements.txt"
    if hostile == "fifo":
        make_fifo(requirements)
    else:
        requirements.symlink_to("/dev/zero")
    done = run_bounded("init", app, "--out", tmp_path / "init.spec")
    assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, done.stderr


@needs_fifo
@pytest.mark.parametrize("where", ["top", "nested"])
@pytest.mark.parametrize("hostile", ["fifo", "dev-zero"])
def test_a_requirements_file_that_is_a_pipe_or_dev_zero_is_refused_by_pack(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hostile: str, where: str) -> None:
    """The requirements file app.requirements names, and one it names with -r (pip reads
    both): a pipe or a device is refused by name, not waited on or read without end."""
    folder_app(tmp_path)
    nested = tmp_path / ("requirements.txt" if where == "top" else "nested.txt")
    if where == "nested":
        (tmp_path / "requirements.txt").write_text("-r nested.txt\n")
    if hostile == "fifo":
        make_fifo(nested)
    else:
        nested.symlink_to("/dev/zero")
    spec = tmp_path / "app.spec"
    spec.write_text('[app]\nname = "demo"\nbuilder = "embedded-python"\npath = "app"\n'
                    'entry = "main.py"\npython = "3.11"\nrequirements = "requirements.txt"\n'
                    f'[runtime]\nrecipe = "{SEED}"\n')
    monkeypatch.setenv("BUNDLER_CACHE", bundler_cache(tmp_path / "cache")["BUNDLER_CACHE"])
    done = run_bounded("pack", spec, "--offline")
    assert done.returncode == 2, done.stderr
    named = "/dev/zero" if where == "top" and hostile == "dev-zero" else str(nested)
    assert named in done.stderr and "Traceback" not in done.stderr, done.stderr


# ------------------------------------------------- build-info values, fuzzed (#14's kin)

LITERAL = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**30) | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from(["8.6.0", "abc", "v8.6", "64_8", "64_", "12.x",
                                               "False", "", " ", "8..1", ".5", "9" * 50]),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
FILES = {"paddlepaddle-gpu": "paddle/version/__init__.py",
         "tensorflow": "tensorflow/python/platform/build_info.py",
         "onnxruntime-gpu": "onnxruntime/capi/version_info.py",
         "cupy-cuda12x": "cupy/.data/_wheel.json", "torch": "torch/version.py"}
KEYS = ("cuda_version", "cudnn_version", "use_cuda", "cuda", "build_info", "is_cuda_build",
        "cudnn_dll_name")


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_fuzzed_build_info_values_are_read_or_unreadable_never_an_error(
        tmp_path: Path, data: st.DataObject) -> None:
    """Whatever literal a build-info file binds a figure to (a list, a dict, 'abc',
    a 50-digit number), the facts are read or "unreadable", and the rule that judges them
    (fits, refuse_unfit) answers: 'v8.6' as cuDNN stopped fits() with an IndexError."""
    name = data.draw(st.sampled_from(sorted(FILES)))
    values = data.draw(st.dictionaries(st.sampled_from(KEYS), LITERAL, max_size=4))
    if name == "tensorflow" and data.draw(st.booleans()):
        values = {"build_info": data.draw(st.dictionaries(st.sampled_from(KEYS), LITERAL))}
    text = (json.dumps(values, default=str) if name.startswith("cupy")
            else "".join(f"{key} = {value!r}\n" for key, value in values.items()))
    with tempfile.TemporaryDirectory(dir=tmp_path) as scratch:
        app = Path(scratch) / "app"
        install(app / "site-packages", name, "1.0", {FILES[name]: text})
        found = frameworks_in(app, windows().driver_table())
        for facts in found:
            for cuda, cudnn in (("12", "9.1.0.70"), ("10.1", "7.6.5.32"), ("", "")):
                assert fits(facts, cuda, cudnn) in (None, fits(facts, cuda, cudnn) or "")
            facts.cudnn_minimum()
            facts.cuda_needed()
        with contextlib.suppress(CheckError):
            refuse_unfit(found, "r", "12", "9.1.0.70", "win-x64")
