"""Shared fixtures: the Windows harness (tests/winenv) and packing helpers.

With BUNDLER_REQUIRE_WINE=1 (CI) a skipped test is a failure, whatever skipped it
(Wine, mingw, ruff, mypy ...), except an opt-in test (its reason starts "opt-in:").
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.packing import zip_reads  # noqa: F401 - a fixture, collected by name
from tests.winenv.fixtures import *  # noqa: F403 - pytest collects fixtures by name

pytest_plugins = ["pytester"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
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
    """The random order's seed, also under -q (where pytest-randomly's header is hidden)."""
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None and config.pluginmanager.has_plugin("randomly"):
        terminalreporter.write_line(f"random order: --randomly-seed={seed} repeats it")


@pytest.fixture(autouse=True, scope="session")
def _session_runtime_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Fixtures wider than a test pack too: they get a store of the session's, never
    the user's ~/.cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BUNDLER_STORE", str(tmp_path_factory.mktemp("session-store")))
        yield


@pytest.fixture(autouse=True)
def _own_runtime_store(tmp_path_factory: pytest.TempPathFactory,
                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test packs with a runtime store of its own: no test sees another's files,
    and none writes to the user's ~/.cache."""
    monkeypatch.setenv("BUNDLER_STORE", str(tmp_path_factory.mktemp("store")))
