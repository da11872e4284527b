"""The pinned test world: every download is the file pins.toml names, and
BUNDLER_REQUIRE_WINE=1 lets nothing be skipped silently."""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import pytest

from bundler.recipe.load import find_recipe
from tests.harness.winenv.paths import PROJECT_ROOT
from tests.harness.winenv.pins import Pin, PinMismatch, check_download, nvidia_pin, wheel_pins
from tests.harness.winenv.wheels import CUDA11_RECIPE


def test_the_nvidia_wheels_the_recipe_pins_are_the_ones_pins_toml_pins() -> None:
    recipe = find_recipe(CUDA11_RECIPE, PROJECT_ROOT)
    for spec in recipe.sources.values():
        assert (spec.version, spec.sha256) == (nvidia_pin(spec.package).version,
                                               nvidia_pin(spec.package).sha256)


def test_a_download_that_is_not_the_pinned_file_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "tqdm-4.70.1-py3-none-any.whl"
    wheel.write_bytes(b"not the wheel")
    with pytest.raises(PinMismatch, match="tqdm==4.70.1.*has sha256 [0-9a-f]{64}, but"):
        check_download(wheel, Pin("tqdm", "4.70.1", "0" * 64))


def test_the_windows_python_gets_exactly_the_pinned_wheels(win_python) -> None:
    installed = {dist.metadata["Name"].lower().replace("_", "-"): dist.version
                 for dist in importlib.metadata.distributions(path=[str(win_python.site_packages)])}
    assert installed == {pin.package: pin.version for pin in wheel_pins()}


SKIPPING = '''
import pytest

def test_skipped():
    pytest.skip("ruff is not installed")

def test_opt_in():
    pytest.skip("opt-in: set BUNDLER_REAL_CUDNN=1")
'''


@pytest.mark.parametrize("required, outcomes", [
    ("1", {"failed": 1, "skipped": 1}), ("", {"skipped": 2})])
def test_require_wine_turns_every_skip_but_an_opt_in_into_a_failure(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, required: str,
        outcomes: dict[str, int]) -> None:
    monkeypatch.setenv("BUNDLER_REQUIRE_WINE", required)
    pytester.makeconftest("from tests.conftest import pytest_runtest_makereport  # noqa: F401")
    pytester.makepyfile(SKIPPING)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PROJECT_ROOT),
                                                      os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(**outcomes)
    if required:
        result.stdout.fnmatch_lines(["*BUNDLER_REQUIRE_WINE=1*ruff is not installed*"])


def test_the_random_orders_seed_is_printed_under_q(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest("from tests.conftest import pytest_terminal_summary  # noqa: F401")
    pytester.makepyfile("def test_one():\n    pass\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PROJECT_ROOT),
                                                      os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess("-q", "-p", "randomly", "--randomly-seed=4242")
    result.stdout.fnmatch_lines(["random order: --randomly-seed=4242 repeats it"])


STORES = '''
import os, pathlib, stat

def _fill(name):
    store = pathlib.Path(os.environ["BUNDLER_STORE"])
    (store / "objects").mkdir()
    kept = store / "objects" / name
    kept.write_bytes(b"x" * 1000)
    os.chmod(kept, stat.S_IRUSR)   # as the store keeps its objects
    os.chmod(store / "objects", stat.S_IRUSR | stat.S_IXUSR)
    print("STORE", store)

def test_passes():
    _fill("passes")

def test_fails():
    _fill("fails")
    assert False
'''


def test_a_passed_tests_store_is_removed_a_failed_ones_kept(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with a failure keeps its temp folder: the passed tests' runtime stores must
    not stay in it (5.4 GB in one such run)."""
    pytester.makeconftest("from tests.conftest import pytest_runtest_makereport, "
                          "_own_runtime_store  # noqa: F401")
    pytester.makepyfile(STORES)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PROJECT_ROOT),
                                                      os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-s",
                                           f"--basetemp={pytester.path / 'base'}")
    result.assert_outcomes(passed=1, failed=1)
    assert len([line for line in result.outlines if "STORE " in line]) == 2
    left = sorted(path.name for path in (pytester.path / "base").glob("store[0-9]*/objects/*"))
    for folder in (pytester.path / "base").glob("store*/objects"):
        folder.chmod(0o700)   # for pytester's own clean-up
    assert left == ["fails"]
