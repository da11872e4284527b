"""Shared fixtures: the Windows harness (tests/winenv) and packing helpers."""

from collections.abc import Iterator

import pytest

from tests.packing import zip_reads  # noqa: F401 - a fixture, collected by name
from tests.winenv.fixtures import *  # noqa: F403 - pytest collects fixtures by name


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
