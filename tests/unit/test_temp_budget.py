"""The temp-folder budget a test run is held to (tests/harness/temp_budget.py): what
the run created is counted by the blocks it takes, what was there before is not, and a
run over the budget is named with its largest leftovers."""

from __future__ import annotations

from pathlib import Path

from tests.harness import temp_budget


def test_a_run_is_charged_for_what_it_left_only(tmp_path: Path) -> None:
    (tmp_path / "before").mkdir()
    (tmp_path / "before" / "big").write_bytes(b"x" * 300_000)
    before = temp_budget.entries(tmp_path)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "object").write_bytes(b"y" * 200_000)
    (tmp_path / "loose.bin").write_bytes(b"z" * 50_000)
    found = temp_budget.leftovers(tmp_path, before, None)
    assert [f.path.name for f in found] == ["store", "loose.bin"]
    assert found[0].size >= 200_000
    assert temp_budget.over_budget(found, 1024 * 1024) == ""
    over = temp_budget.over_budget(found, 100_000)
    assert "over the budget" in over and str(tmp_path / "store") in over


def test_a_sparse_file_counts_what_it_takes_on_disk(tmp_path: Path) -> None:
    sparse = tmp_path / "huge.dll"
    with open(sparse, "wb") as file:
        file.truncate(20 * 2**30)
    assert temp_budget.size_of(sparse) < 2**20


def test_the_budget_comes_from_the_environment() -> None:
    assert temp_budget.budget_bytes({}) == 1024 * 2**20
    assert temp_budget.budget_bytes({"BUNDLER_TEMP_BUDGET_MB": "10"}) == 10 * 2**20


def test_pytest_keeps_only_the_failed_tests_folders_of_one_run() -> None:
    """pytest's default keeps every test's folder for three runs (7-14 GB here)."""
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert 'tmp_path_retention_policy = "failed"' in text
    assert "tmp_path_retention_count = 1" in text
