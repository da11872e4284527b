"""Pure logic of `bundler inspect`: how a dependency is classified, which run-time
loads the recipes know, and which recipe source an input matches. (Real DLLs and
zips are inspected in test_doctor_wine.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bundler.diagnose.inspection import classify, inspect_path, match_recipes, runtime_loads
from bundler.errors import BundlerError
from bundler.recipe.load import find_recipe
from bundler.targets.registry import windows
from tests.harness.winenv.paths import PROJECT_ROOT

SEED = "cudnn-8.0.3.33-cuda10.1-win-x64"


@pytest.fixture(scope="module")
def recipes():
    return (find_recipe(SEED, PROJECT_ROOT),)


@pytest.mark.parametrize("name, status, note", [
    ("cudart64_101.dll", "bundled", ""),
    ("KERNEL32.dll", "system", ""),
    ("api-ms-win-crt-runtime-l1-1-0.dll", "system", ""),
    ("VCRUNTIME140.dll", "system", ""),
    ("nvcuda.dll", "driver", ""),
    ("cublas64_11.dll", "missing", "a CUDA 11 library"),
    ("cudnn_ops_infer64_8.dll", "missing", f"recipe {SEED} takes it from source 'cudnn'"),
    ("cublas64_10.dll", "missing", f"recipe {SEED} takes it from source 'cuda'"),
    ("zlibwapi.dll", "missing", ""),
])
def test_dependency_status(recipes, name: str, status: str, note: str) -> None:
    assert classify(name, {"cudart64_101.dll"}, recipes, windows()) == (status, note)


def test_run_time_loads_come_from_the_recipe(recipes) -> None:
    loads = runtime_loads("CUDNN64_8.dll", "8.0.3.33", recipes)
    assert [name for name, _ in loads][:2] == ["cudnn_ops_infer64_8.dll",
                                               "cudnn_ops_train64_8.dll"]
    assert len(loads) == 6 and {recipe for _, recipe in loads} == {SEED}
    assert runtime_loads("cudart64_101.dll", "", recipes) == []


def test_recipe_match_by_name_contents_and_sha(recipes) -> None:
    source = recipes[0].sources["cudnn"]
    complete = {f"cuda/{m}" for m in source.contents}
    [match] = match_recipes("archive", "renamed.zip", "", complete.__contains__, recipes)
    assert (match.recipe, match.source, match.by, match.missing) == (
        SEED, "cudnn", ("contents",), ())
    partial = complete - {"cuda/bin/cudnn64_8.dll"}
    [match] = match_recipes("archive", source.file_name, "", partial.__contains__, recipes)
    assert match.by == ("file name",) and match.missing == ("bin/cudnn64_8.dll",)
    assert match_recipes("archive", "other.zip", "", partial.__contains__, recipes) == []


def test_a_folder_matches_the_toolkit_source(recipes, tmp_path: Path) -> None:
    for member in recipes[0].sources["cuda"].contents:
        (tmp_path / member).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / member).write_bytes(b"")
    [match] = match_recipes("folder", tmp_path.name, "",
                            lambda m: (tmp_path / m).is_file(), recipes)
    assert (match.source, match.by) == ("cuda", ("contents",))


def test_what_is_not_a_dll_zip_or_folder_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(BundlerError, match="not a DLL"):
        inspect_path(tmp_path / "notes.txt")
    with pytest.raises(BundlerError, match="no such file"):
        inspect_path(tmp_path / "absent.dll")


def test_a_wheel_matches_its_package_and_contents(tmp_path: Path) -> None:
    from bundler.recipe.load import load_recipe_file

    recipe_path = tmp_path / "wheel-recipe.toml"
    recipe_path.write_text('''name = "wheel-recipe"
platform = "win-amd64"
[versions]
cudnn = "8.9.4.25"
cuda = "11.8"
[sources.cudnn]
kind = "wheel"
package = "nvidia-cudnn-cu11"
version = "8.9.4.25"
root = "nvidia/cudnn"
contents = ["bin/cudnn64_8.dll"]
[components.core]
files = ["cudnn:bin/cudnn64_8.dll"]
''')
    recipes = (load_recipe_file(recipe_path),)
    members = {"nvidia/cudnn/bin/cudnn64_8.dll"}
    name = "nvidia_cudnn_cu11-8.9.4.25-py3-none-win_amd64.whl"
    [match] = match_recipes("wheel", name, "", members.__contains__, recipes)
    assert match.by == ("package", "contents")
    other = "nvidia_cudnn_cu11-8.9.5.29-py3-none-win_amd64.whl"
    assert match_recipes("wheel", other, "", set().__contains__, recipes) == []
    # Names compare as the wheel spec says (wheel.normalize); a name that is not a
    # wheel's (NAME-VERSION-PYTHON-ABI-PLATFORM.whl) is not matched by package.
    dotted = "Nvidia.Cudnn_cu11-8.9.4.25-py3-none-win_amd64.whl"
    [match] = match_recipes("wheel", dotted, "", set().__contains__, recipes)
    assert match.by == ("package",)
    assert match_recipes("wheel", "nvidia_cudnn_cu11-8.9.4.25.whl", "", set().__contains__,
                         recipes) == []


def test_write_hashed_copies_hashes_and_reports_progress(tmp_path: Path) -> None:
    import hashlib

    from bundler.support.hashing import write_hashed

    seen: list[int] = []
    with open(tmp_path / "out", "wb") as out:
        size, sha256 = write_hashed(iter([b"ab", b"", b"cde"]), out, seen.append)
    assert (size, sha256) == (5, hashlib.sha256(b"abcde").hexdigest())
    assert (tmp_path / "out").read_bytes() == b"abcde" and sum(seen) == 5


def test_an_archive_is_hashed_from_its_member_reads(tmp_path: Path) -> None:
    """Members written out of name order; the DLLs are read in file order, the rest
    of the file is hashed once, and the report lists DLLs by name."""
    import hashlib
    import zipfile

    path = tmp_path / "runtime.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("z/b.dll", "notes.txt", "a.dll", "lib/c.lib"):
            archive.writestr(name, name.encode() * 5000)
    report = inspect_path(path, recipes=())
    assert report.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [d.member for d in report.dlls] == ["a.dll", "z/b.dll"]
    assert all(d.error for d in report.dlls)   # not PE files: named as such, not fatal
