"""Every mutant in tests/mutants.py still applies: its text is in its file exactly once.
Code moves on; a mutant whose text is gone stops `python3 -m tests.mutants` half-way and
guards nothing, so the ordinary suite says so first."""

from __future__ import annotations

import pytest

from tests.mutants import MUTANTS, ROOT, Mutant


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_the_mutant_applies_to_the_code_as_it_is(mutant: Mutant) -> None:
    text = (ROOT / mutant.file).read_text(encoding="utf-8")
    assert text.count(mutant.old) == 1, (
        f"{mutant.name}: {mutant.old!r} is not in {mutant.file} exactly once")
    assert all((ROOT / test.split("::")[0]).is_file() for test in mutant.tests)


def test_mutant_names_are_unique() -> None:
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))
