"""Shared fixtures: the Windows harness (tests/harness/winenv) and packing helpers.

With BUNDLER_REQUIRE_WINE=1 (CI) a skipped test is a failure, whatever skipped it
(Wine, mingw, ruff, mypy ...), except an opt-in test (its reason starts "opt-in:").
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from bundler.support.user_dirs import user_cache_dir, user_config_dir
from tests.harness import temp_budget
from tests.harness.packing import (  # noqa: F401 - fixtures, collected by name
    packed_workspace,
    standin_workspace,
    zip_reads,
)
from tests.harness.winenv.fixtures import *  # noqa: F403 - pytest collects fixtures by name

pytest_plugins = ["pytester"]


# Fixtures that start the Windows CPython under Wine: a test using one is marked `wine`.
WINE_FIXTURES = frozenset({"win_python", "app_python"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if WINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.wine)


_PASSED = pytest.StashKey[bool]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":   # read by _own_runtime_store's teardown, which runs after
        item.stash[_PASSED] = report.passed
    if not (report.skipped and os.environ.get("BUNDLER_REQUIRE_WINE") == "1"):
        return
    if hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if reason.removeprefix("Skipped: ").startswith("opt-in:"):
        return
    report.outcome = "failed"
    report.longrepr = f"BUNDLER_REQUIRE_WINE=1 turns this skip into a failure: {reason}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter,
                            config: pytest.Config) -> None:
    """The random order's seed, also under -q (where pytest-randomly's header is hidden);
    what the run left in the temp folder where it is over the budget."""
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None and config.pluginmanager.has_plugin("randomly"):
        terminalreporter.write_line(f"random order: --randomly-seed={seed} repeats it")
    over = config.stash.get(_OVER_BUDGET, "")
    if over:
        terminalreporter.write_line(f"FAILED temp folder budget: {over}", red=True)


_TEMP_BEFORE = pytest.StashKey[set]()
_OVER_BUDGET = pytest.StashKey[str]()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_TEMP_BEFORE] = temp_budget.entries(temp_budget.temp_folder())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """After pytest removed the passed tests' folders (pyproject.toml's retention
    policy), a run that passed fails if what it left in the temp folder is over the
    budget (tests/harness/temp_budget.py). A run with failures keeps its failed tests'
    folders on purpose (to look into), so it is not judged; nor is a worker of a
    parallel run (its parent is). Only this run's own folder is counted, not those of
    earlier or concurrent runs beside it."""
    config = session.config
    if exitstatus != 0 or config.option.collectonly or hasattr(config, "workerinput") \
            or _TEMP_BEFORE not in config.stash \
            or os.environ.get("BUNDLER_TEMP_BUDGET_MB") == "off":
        return
    factory = getattr(config, "_tmp_path_factory", None)
    root = factory._basetemp if factory is not None else None   # pytest-of-<user>/pytest-N
    found = temp_budget.leftovers(temp_budget.temp_folder(), config.stash[_TEMP_BEFORE], root)
    over = temp_budget.over_budget(found, temp_budget.budget_bytes(os.environ))
    if over:
        config.stash[_OVER_BUDGET] = over
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# Where bundler would keep this user's own files: a test that writes there fails.
_USER_DIRS = [user_cache_dir(os.environ) / "store", user_config_dir(os.environ)]


@pytest.fixture(autouse=True, scope="session")
def _session_runtime_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fixtures wider than a test pack too: they get a store, a store key and user
    folders of the session's, never the user's own."""
    before = _user_files()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BUNDLER_STORE", str(tmp_path_factory.mktemp("session-store")))
        patch.setenv("BUNDLER_STORE_KEY", "5e" * 32)
        for variable in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
            patch.setenv(variable, str(tmp_path_factory.mktemp(variable.lower())))
        yield
    written = sorted(set(_user_files()) - set(before))
    assert not written, f"tests wrote into this user's own bundler folders: {written[:5]}"


def _user_files() -> list[tuple[str, int]]:
    """Every file below the user's bundler folders, with its modification time."""
    return [(str(path), path.stat().st_mtime_ns) for folder in _USER_DIRS
            if folder.is_dir() for path in folder.rglob("*") if path.is_file()]


@pytest.fixture(autouse=True)
def _own_runtime_store(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest,
                       monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test packs with a runtime store of its own: no test sees another's files,
    and none writes to the user's ~/.cache. A passed test's store is removed at once: a
    run that fails keeps its whole temp folder (pyproject.toml's retention policy), and
    its passed tests' stores (up to 900 MB each) filled 5.4 GB of it."""
    store = tmp_path_factory.mktemp("store")
    monkeypatch.setenv("BUNDLER_STORE", str(store))
    yield
    if request.node.stash.get(_PASSED, False):
        temp_budget.remove_tree(store)
