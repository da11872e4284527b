"""Shared fixtures: the Windows harness (tests/winenv) and packing helpers."""

from tests.winenv.fixtures import *  # noqa: F403 - pytest collects fixtures by name
