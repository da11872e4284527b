"""Components that work (issue 27 item 6; docs/recipe-format.md, "Components that work").

cuDNN's API shim opens a sub-library when the app first uses it (cudnnCreate): a bundle
of `core` alone fails at the first cuDNN call. The selection is completed with what the
cuDNN family's `loads_on_first_call` names, for every recipe of that major, and the pack
summary says why. Here: the rule on shipped and rendered recipes of both platforms, the
refusal of a recipe that lacks the library, the family data against the real files'
strings, and under Wine a `components = ["core"]` app whose cudnnCreate succeeds.
(docs/linux.md's example, packed and run from NVIDIA's real wheels:
tests/linux/test_linux_installed_wheels.py.)
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path

import pytest

from bundler.errors import RecipeError
from bundler.recipe.load import families_dir, find_recipe, load_recipe_file
from bundler.recipe.selection import completions
from bundler.releases.families import families
from tests.harness.packing import SEED, make_workspace, run_cli
from tests.harness.winenv import WindowsPython
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.pins import linux_pins
from tests.harness.winenv.wheels import fetched_once, nvidia_wheel

# (recipe, the library core's shim loads at its first call, its component)
FIRST_CALLS = [
    (SEED, "cudnn_ops_infer64_8.dll", "ops_infer"),                      # shipped, zip
    ("cudnn-8.9.4.25-cuda11-win-x64", "cudnn_ops_infer64_8.dll", "ops_infer"),
    ("cudnn-9.1.0.70-cuda12-win-x64", "cudnn_graph64_9.dll", "graph"),   # rendered
    ("cudnn-9.28.0.42-cuda13-win-x64", "cudnn_graph64_9.dll", "graph"),
    ("cudnn-8.9.7.29-cuda12-linux-x64", "libcudnn_ops_infer.so.8", "ops_infer"),
    ("cudnn-9.19.0.56-cuda13-linux-x64", "libcudnn_graph.so.9", "graph"),
]


@pytest.mark.parametrize(("name", "library", "component"), FIRST_CALLS)
def test_core_brings_what_its_shim_loads_at_the_first_call(
        name: str, library: str, component: str) -> None:
    recipe = find_recipe(name, PROJECT_ROOT)
    shim = recipe.components["core"].files[0]
    picked = [c.name for c in recipe.select(["core"])]
    assert component in picked and {"core", "cudart", "cublas"} <= set(picked)
    assert recipe.supplier_of(library).component == component   # type: ignore[union-attr]
    why = completions(recipe, ["core"])
    assert why[component] == [f"{library}: loaded by {shim} at its first call"]
    assert why["cublas"] == [f"required by {component}"]
    # What is asked for, or required by what is asked for, needs no reason.
    assert completions(recipe, ["core", component]) == {}
    assert completions(recipe, []) == {}   # the default set has it


def test_a_recipe_without_what_the_shim_loads_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "shim-only.toml"
    path.write_text('name = "shim-only"\nplatform = "win-amd64"\n[versions]\n'
                    'cudnn = "8.9.4.25"\ncuda = "11.8"\n[sources.cudnn]\nkind = "folder"\n'
                    'contents = ["bin/cudnn64_8.dll"]\n[components.core]\n'
                    'files = ["cudnn:bin/cudnn64_8.dll"]\n')
    recipe = load_recipe_file(path)   # reading it is fine; shipping the shim is not
    with pytest.raises(RecipeError, match=r"recipe shim-only: cudnn64_8.dll loads "
                                          r"cudnn_ops_infer64_8.dll at its first call "
                                          r"\(cudnn8-win-x64.toml\), and no component"):
        recipe.select(["core"])


def test_the_family_refuses_a_first_call_load_its_loads_do_not_name(tmp_path: Path) -> None:
    source = (families_dir() / "cudnn8-win-x64.toml").read_text()
    folder = tmp_path / "families"
    folder.mkdir()
    (folder / "cudnn8-win-x64.toml").write_text(source.replace(
        'loads_on_first_call = ["cudnn_ops_infer64_8.dll"]',
        'loads_on_first_call = ["cudnn_opz_infer64_8.dll"]'))
    with pytest.raises(RecipeError, match="names cudnn_opz_infer64_8.dll, which its loads"):
        families(folder)


def _strings(data: bytes) -> set[str]:
    """The file's NUL-ended printable strings (what `strings` shows, short ones too)."""
    return {s.decode() for s in re.findall(rb"([\x20-\x7e]{4,})\x00", data)}


def test_the_linux_shim_names_the_library_the_family_says_it_loads_first() -> None:
    """NVIDIA's real libcudnn.so.9 (9.19.0.56, the pinned wheel the Linux tests read)
    names libcudnn_graph.so and formats the major on ("%s.%d"): the family's
    loads_on_first_call, as Linux names it, is in the file."""
    pin, platform = linux_pins()["nvidia-cudnn-cu13"]
    recipe = find_recipe("cudnn-9.19.0.56-cuda13-linux-x64", PROJECT_ROOT)
    wheel = fetched_once(recipe.sources["cudnn"])
    assert (recipe.sources["cudnn"].sha256, recipe.sources["cudnn"].platform_tag) == (
        pin.sha256, platform)
    with zipfile.ZipFile(wheel) as archive:
        found = _strings(archive.read("nvidia/cudnn/lib/libcudnn.so.9"))
    facts = families(families_dir(), "linux-x64")[9].files["libcudnn.so.9"]
    assert facts.loads_on_first_call == ("libcudnn_graph.so.9",)
    for library in facts.loads_on_first_call:
        stem, major = library.rsplit(".", 1)
        assert stem in found and "%s.%d" in found and major == "9"


@pytest.mark.skipif(os.environ.get("BUNDLER_REAL_CUDNN") != "1",
                    reason="opt-in: set BUNDLER_REAL_CUDNN=1 (NVIDIA's cuDNN 8.9.4.25 CUDA "
                           "11 and 9.28.0.42 CUDA 12 wheels, fetched once into the test cache)")
@pytest.mark.parametrize(("recipe", "shim", "major"), [
    ("cudnn-8.9.4.25-cuda11-win-x64", "cudnn64_8.dll", 8),
    ("cudnn-9.28.0.42-cuda12-win-x64", "cudnn64_9.dll", 9)])
def test_the_windows_shims_name_every_library_the_family_says_they_load(
        recipe: str, shim: str, major: int) -> None:
    """The real cudnn64_8.dll / cudnn64_9.dll hold each name of the family's `loads`
    (and so of `loads_on_first_call`) among their strings."""
    with zipfile.ZipFile(nvidia_wheel(recipe, "cudnn")) as archive:
        found = _strings(archive.read(f"nvidia/cudnn/bin/{shim}"))
    facts = families(families_dir())[major].files[shim]
    assert facts.loads_on_first_call and set(facts.loads_on_first_call) <= set(facts.loads)
    assert [n for n in facts.loads if n not in found] == []


CREATE_APP = '''import ctypes, json, os
here = os.path.dirname(os.path.abspath(__file__))
framework = ctypes.CDLL(os.path.join(here, "framework.dll"))
print(json.dumps({"create": framework.framework_cudnn_create(),
                  "version": framework.framework_cudnn_version()}))
'''


@pytest.mark.wine
def test_core_alone_packs_a_cudnn_that_creates_its_handle_under_wine(
        tmp_path: Path, standin_zip: Path, standin_toolkit: Path, standin_framework: Path,
        app_python: WindowsPython, capsys: pytest.CaptureFixture[str]) -> None:
    """components = ["core"] with the seed recipe: the stand-in cudnn64_8.dll loads
    cudnn_ops_infer64_8.dll by bare name in cudnnCreate, as the real one does; the bundle
    carries it (and the CUDA DLLs it imports) and the handle is created (status 0, not
    1 "Could not create cudnn handle"); the summary says why ops_infer came along."""
    workspace = make_workspace(tmp_path, standin_framework,
                               {"cudnn": standin_zip, "cuda": standin_toolkit},
                               extra_runtime='components = ["core"]\n')
    (workspace.root / "app" / "main.py").write_text(CREATE_APP)
    code, out, err = run_cli(capsys, "pack", workspace.spec)
    assert code == 0, err
    done = app_python.run([workspace.dist / "main.py"], timeout=120)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert ran == {"create": 0, "version": 8003}, ran
    assert ("  ops_infer: cudnn_ops_infer64_8.dll: loaded by cudnn64_8.dll at its first call"
            in out.splitlines()), out
    assert "  cublas: required by ops_infer" in out.splitlines()


CU12 = "cudnn-9.28.0.42-cuda12-win-x64"


def _cudnn9_pair(folder: Path) -> dict[str, bytes]:
    """cudnn64_9.dll whose cudnnCreate loads cudnn_graph64_9.dll by bare name (as the
    real shim forwards it), and a graph that answers its version check: stand-ins
    (tests/harness/standin/cudnn.c, cudnn_sublib.c) with cuDNN 9.28.0.42's numbers."""
    from tests.harness.winenv.build import StandinSpec, build_dll

    version = (9, 28, 0, 42)
    shim = StandinSpec("cudnn.c", "cudnn64_9.dll", version, defines=(
        ("STANDIN_CUDNN_VERSION", "92800"), ("STANDIN_CUDART_VERSION", "12090"),
        ("STANDIN_OPS_INFER_NAME", '"cudnn_graph64_9.dll"')))
    graph = StandinSpec("cudnn_sublib.c", "cudnn_graph64_9.dll", version, defines=(
        ("STANDIN_CHECK_FN", "cudnnOpsInferVersionCheck"),
        ("STANDIN_CUDNN_VERSION", "92800"), ("STANDIN_EXPORT_GET_VERSION", "1")))
    return {f"nvidia/cudnn/bin/{spec.name}": build_dll(spec, folder).read_bytes()
            for spec in (shim, graph)}


@pytest.mark.wine
def test_core_alone_of_cudnn_9_creates_its_handle_under_wine(
        tmp_path: Path, app_python: WindowsPython, capsys: pytest.CaptureFixture[str]) -> None:
    """components = ["core"] of cuDNN 9.28 (CUDA 12, rendered from the family, stand-in
    wheels): cudnn64_9.dll's cudnnCreate loads cudnn_graph64_9.dll by bare name; the
    bundle carries graph and what it requires, and the handle is created."""
    from tests.harness.wheelkit import make_wheel
    from tests.harness.winenv.build import build_dll, framework_spec
    from tests.integration.test_app_scan import standin_setup, write_spec

    ref, wheels = standin_setup(tmp_path, CU12, ["core"])
    with zipfile.ZipFile(wheels["cudnn"]) as archive:
        members = {n: archive.read(n) for n in archive.namelist()
                   if not n.endswith((".dist-info/WHEEL", ".dist-info/RECORD"))}
    members.update(_cudnn9_pair(tmp_path / "pair"))
    name, version = wheels["cudnn"].name.split("-")[:2]
    wheels["cudnn"].unlink()
    wheels["cudnn"] = make_wheel(wheels["cudnn"].parent, members, name=name, version=version)
    app = tmp_path / "app"
    build_dll(framework_spec(cudnn_name="cudnn64_9.dll"), app)
    (app / "main.py").write_text(CREATE_APP)
    spec = write_spec(tmp_path, ref, wheels, 'components = ["core"]', entry="main.py")
    code, out, err = run_cli(capsys, "pack", spec)
    assert code == 0, err
    done = app_python.run([tmp_path / "dist" / "app" / "main.py"], timeout=120)
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    assert ran == {"create": 0, "version": 92800}, ran
    assert "  graph: cudnn_graph64_9.dll: loaded by cudnn64_9.dll at its first call" in (
        out.splitlines()), out


def test_bundler_recipes_says_what_a_component_brings_to_work(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "recipes", SEED)
    assert code == 0, err
    lines = out.splitlines()
    core = lines.index("  component core: cudnn64_8.dll")
    assert lines[core + 2] == (
        "    brings cudart (required by ops_infer); cublas (required by ops_infer); "
        "ops_infer (cudnn_ops_infer64_8.dll: loaded by cudnn64_8.dll at its first call)")
    # Only core needs more than it requires.
    assert [i for i, line in enumerate(lines) if line.startswith("    brings")] == [core + 2]
