"""Linux releases by name: the catalogue's manylinux wheels, the families shared with
Windows, the Linux runtime sets; a family-rendered cuDNN 9.19 packs NVIDIA's real
wheels into the same files as the hand-written recipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from bundler.errors import RecipeError
from bundler.recipe.load import Recipe, families_dir, find_recipe, load_recipe_file
from bundler.releases import catalogue as catalogue_module
from bundler.releases.catalogue import CATALOGUE, find_release
from bundler.releases.families import families, runtime_sets
from bundler.targets.registry import platform_for
from tests.harness.packing import PROJECT_ROOT, run_cli
from tests.harness.winenv.wheels import fetched_once
from tools.generate_catalogue import FAMILIES, Wheel, wheel_table

SHIPPED = "cudnn-9.19.0.56-cuda13-linux-x64"
WINDOWS, LINUX = platform_for("win-amd64"), platform_for("linux-x86_64")


@pytest.mark.parametrize("name", ["cudnn-9.1.0.70-cuda12-linux-x64",
                                  "cudnn-8.9.7.29-cuda12-linux-x64",
                                  "cudnn-9.28.1.4-cuda13-linux-x64"])
def test_a_linux_release_resolves_to_nvidias_manylinux_wheels(name: str) -> None:
    release = find_release(name)
    assert release is not None and release.wheel is not None
    recipe = find_recipe(name, PROJECT_ROOT)
    assert (recipe.platform, recipe.cudnn) == ("linux-x86_64", release.cudnn)
    cudnn = recipe.sources["cudnn"]
    assert (cudnn.kind, cudnn.sha256, cudnn.signed_by) == ("wheel", release.wheel.sha256, "")
    assert LINUX.matches(cudnn.platform_tag, ["manylinux*_x86_64"])
    assert {f.name for f in recipe.files.values() if f.source == "cudnn"} == set(
        release.wheel.dlls)
    assert all(LINUX.is_library(f) and not f.endswith(".dll") for f in recipe.files)
    assert not [f for f in recipe.files.values() if f.version or f.cudnn_get_version]
    # Its Windows twin: the same components, each with the twin's files, the same requires.
    twin = find_recipe(name.replace("-linux-x64", "-win-x64"), PROJECT_ROOT)
    assert _shape(recipe) == _shape(twin)
    assert recipe.select(None)
    # The driver minimum comes from the Linux table (bundler/linux/compat.toml).
    table = LINUX.driver_table()
    assert recipe.min_driver == (table.min_driver_for(recipe.cuda) or "580")
    assert recipe.min_driver_compat == table.minor_compatible_from(recipe.cuda)
    if recipe.cuda == "12.9.1":
        assert (recipe.min_driver, twin.min_driver) == ("575.51.03", "576.57")


def _shape(recipe: Recipe) -> dict[str, tuple[list[str], list[str], bool]]:
    """Components by name: their files' stems (platform-free), requires, default."""
    return {c.name: (sorted(recipe.target.library_stem(f) for f in c.files),
                     sorted(c.requires), c.default) for c in recipe.components.values()}


def test_the_linux_family_is_the_windows_family_named_by_the_seam() -> None:
    """One family per cuDNN major for both platforms: same components and requires, each
    file (and each run-time load) the Linux twin; no Windows-only facts."""
    windows, linux = families(families_dir()), families(families_dir(), "linux-x64")
    assert windows.keys() == linux.keys()
    graph = linux[9].components["graph"]
    assert graph.files[0] == "libcudnn_graph.so.9" and graph.requires == (
        "core", "cublas", "cudart")
    assert linux[9].files["libcudnn_adv.so.9"].loads == ("libcublasLt.so.{cuda_major}",)
    for major, family in windows.items():
        twin = linux[major]
        assert twin.platform == "linux-x86_64" and twin.signers == {}
        assert not [e for e in twin.eras if e.signed_by or e.version_resource_checked]
        assert {k: (c.files, c.requires) for k, c in twin.components.items()} == {
            k: (tuple(LINUX.library_file(WINDOWS.library_stem(f), str(major))
                      for f in c.files), c.requires)
            for k, c in family.components.items()}


def test_each_linux_runtime_set_pairs_the_windows_sets_releases() -> None:
    """Generated from the Windows sets: the same packages at the same versions, the
    same components and requires, manylinux wheels."""
    windows = runtime_sets(families_dir())
    linux = runtime_sets(families_dir(), "linux-x64")
    assert sorted(linux) == ["11", "12", "13"]
    for cuda, found in linux.items():
        twin = windows[cuda].tables
        assert found.platform == "linux-x86_64" and found.cuda == windows[cuda].cuda
        sources = found.tables["sources"]
        assert {s: (t["package"], t["version"]) for s, t in sources.items()} == {
            s: (t["package"], t["version"]) for s, t in twin["sources"].items()}
        assert all(LINUX.matches(t["platform_tag"], ["manylinux*_x86_64"])
                   and t["file_name"].endswith(f"{t['platform_tag']}.whl")
                   for t in sources.values())
        assert {k: (c.get("requires", []), c.get("default", True))
                for k, c in found.tables["components"].items()} == {
            k: (c.get("requires", []), c.get("default", True))
            for k, c in twin["components"].items()}


def test_the_generator_writes_a_linux_row_with_the_wheels_own_tag() -> None:
    """A manylinux wheel of NVIDIA's cuDNN is matched by the Linux rows only, recorded
    with the tag its file carries, and its libraries are the .so files of its lib/."""
    name = "nvidia_cudnn_cu12-9.1.0.70-py3-none-manylinux2014_x86_64.whl"
    rows = [f for f in FAMILIES if f.package == "nvidia-cudnn-cu12"]
    matched = [f for f in rows if Wheel(f, name, "", "00", 1, False).tag]
    assert len(matched) == 1 and matched[0].lib_dir == "nvidia/cudnn/lib"
    members = ["nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9",
               "nvidia/cudnn/include/cudnn.h", "nvidia/cudnn/lib/libcudnn_static.a",
               "nvidia_cudnn_cu12-9.1.0.70.dist-info/License.txt"]
    table = wheel_table(Wheel(matched[0], name, "", "00", 1, False), members)
    assert (table["platform"], table["dlls"], table["licence"]) == (
        "manylinux2014_x86_64", ["libcudnn.so.9", "libcudnn_graph.so.9"],
        "nvidia_cudnn_cu12-9.1.0.70.dist-info/License.txt")


def test_a_wheel_tag_no_platform_has_is_refused(tmp_path: Path) -> None:
    text = CATALOGUE.read_text(encoding="utf-8")
    assert 'platform = "manylinux_2_27_x86_64"' in text
    bad = tmp_path / "catalogue.toml"
    bad.write_text(text.replace('platform = "manylinux_2_27_x86_64"',
                                'platform = "macosx_11_0_arm64"', 1), encoding="utf-8")
    with pytest.raises(RecipeError, match="macosx_11_0_arm64"):
        catalogue_module.catalogue_releases(bad)


APP = '''import ctypes, json
cudnn = ctypes.CDLL("libcudnn.so.9")
cudnn.cudnnGetVersion.restype = ctypes.c_size_t
with open("/proc/self/maps") as maps:
    mapped = sorted({l.split(None, 5)[5].strip() for l in maps
                     if len(l.split(None, 5)) == 6 and ("libcudnn" in l or "libcudart" in l)})
print(json.dumps({"version": cudnn.cudnnGetVersion(), "mapped": mapped}))
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="runs the Linux app")
def test_the_family_packs_the_same_files_as_the_hand_written_linux_recipe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cuDNN 9.19.0.56 for CUDA 13 with the CUDA runtime 13.0.96 given in [sources]: the
    name renders from the family (a companion wheel other than the set's), the pack reads
    NVIDIA's real pinned wheels, and its files are byte for byte those of the
    hand-written recipe's pack; the app loads them from the bundle, with the installed
    cuDNN's folder first on LD_LIBRARY_PATH. ["core", "cudart"] brings graph (libcudnn.so.9
    opens it at cudnnCreate) and cuBLAS, which graph requires: its pinned wheel is given."""
    shipped = load_recipe_file(PROJECT_ROOT / "recipes" / f"{SHIPPED}.toml")
    cudnn, cudart, cublas = (fetched_once(shipped.sources[s])
                             for s in ("cudnn", "cudart", "cublas"))
    with zipfile.ZipFile(cudnn) as wheel:
        wheel.extractall(tmp_path / "site-packages")
    installed = tmp_path / "site-packages" / "nvidia" / "cudnn" / "lib"
    given = {"cudnn": cudnn, "cudart": cudart, "cublas": cublas}
    rendered = find_recipe(SHIPPED, PROJECT_ROOT, given)
    assert rendered.sha256 != shipped.sha256 and "rendered" in str(rendered.path)
    files = {}
    for label, recipe in (("family", SHIPPED), ("shipped", str(shipped.path))):
        app = tmp_path / label
        (app / "app").mkdir(parents=True)
        (app / "app" / "main.py").write_text(APP)
        (app / "app.spec").write_text(
            '[app]\nname = "app"\npath = "app"\nentry = "main.py"\n[runtime]\n'
            f'recipe = "{recipe}"\ncomponents = ["core", "cudart"]\n[sources]\n'
            + "".join(f'{sid} = "{path.as_posix()}"\n' for sid, path in given.items()))
        code, out, err = run_cli(capsys, "pack", app / "app.spec", "--json")
        assert code == 0, err
        manifest = json.loads((app / "dist" / "app" / "cudnn" / "manifest.json").read_text())
        files[label] = sorted((f["path"], f["sha256"]) for f in manifest["files"])
        ran = subprocess.run([sys.executable, str(app / "dist" / "app" / "main.py")],
                             env={**os.environ, "LD_LIBRARY_PATH": str(installed)},
                             capture_output=True, text=True, check=False, timeout=120)
        assert ran.returncode == 0, ran.stderr
        evidence = json.loads(ran.stdout)
        assert evidence["version"] == 91900
        bundled = {Path(p).name: p for p in evidence["mapped"]
                   if p.startswith(str(app / "dist"))}
        assert {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudart.so.13"} <= set(
            bundled) and len(bundled) == len(evidence["mapped"]), evidence["mapped"]
    assert files["family"] == files["shipped"]
    assert {Path(p).name for p, _ in files["family"]} == {
        "libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
        "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9",
        "libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13",
        "NVIDIA_cuDNN_LICENSE.txt", "NVIDIA_CUDA_runtime_LICENSE.txt",
        "NVIDIA_cuBLAS_LICENSE.txt"}
    with zipfile.ZipFile(cudart) as wheel:
        assert "nvidia/cu13/lib/libcudart.so.13" in wheel.namelist()


def test_an_unknown_linux_release_names_the_closest_linux_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "recipes", "cudnn-9.1.0.71-cuda12-linux-x64")
    assert code == 2 and "closest known: cudnn-9.1.0.70-cuda12-linux-x64, " \
        "cudnn-9.1.1.17-cuda12-linux-x64" in err and "win-x64" not in err
