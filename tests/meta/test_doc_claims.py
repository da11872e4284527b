"""What docs/ says of the spec's tables and of the bootstrap's report() is what the code
does (issue 17: spec-format.md once said "exactly three tables" and documented four;
report() was said to list versions, and it returns them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bundler.errors import SpecError
from bundler.pack.spec import load_spec
from bundler.runtime import activation as bootstrap
from tests.harness.winenv import PROJECT_ROOT

NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def test_spec_format_counts_and_documents_every_table_the_reader_knows(
        tmp_path: Path) -> None:
    text = (PROJECT_ROOT / "docs" / "spec-format.md").read_text()
    said = re.search(r"The top level holds (\w+) tables: (.+?)\.\n", text, re.S)
    assert said, "spec-format.md no longer says how many tables the top level holds"
    named = re.findall(r"`\[(\w+)\]`", said.group(2))
    assert NUMBERS[said.group(1)] == len(named)
    assert sorted(named) == sorted(re.findall(r"^## `\[(\w+)\]`", text, re.M))
    spec = tmp_path / "app.spec"   # the reader names the tables it knows
    spec.write_text('[app]\nname = "a"\npath = "."\n[runtime]\nrecipe = "r"\n[extra]\n')
    with pytest.raises(SpecError) as refused:
        load_spec(spec)
    known = re.search(r"the keys are: (\w+(?:, \w+)*)", refused.value.hint)
    assert known and sorted(known.group(1).split(", ")) == sorted(named)


def test_report_returns_what_the_docs_list_and_prints_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = (PROJECT_ROOT / "docs" / "bootstrap.md").read_text()
    section = text.split("## `report()`", 1)[1].split("\n## ", 1)[0]
    assert "returns what was loaded" in section
    listed = re.findall(r"`(\w+)`", section.split("returns what was loaded", 1)[1])
    report = bootstrap.report()
    assert capsys.readouterr() == ("", "")
    assert set(report) == {"recipe", "versions", "runtime_dir", "driver", "libraries", "dlls"}
    assert set(report) <= set(listed)


def test_readme_quickstart_and_signatures_md_state_the_trust_ladder_the_pack_applies() -> None:
    """Issue 28: README, the quickstart's spec and signatures.md once disagreed about
    which rule holds for the seed's zip. Each states the ladder (hash, else signature,
    else refused unless allow_unsigned, then NOT SIGNED), with the seed's known sha256
    as the code knows it and who recorded it, and none the old "where present" rule."""
    from bundler.pack.signatures import known_hashes
    from bundler.recipe.load import find_recipe

    seed = known_hashes(find_recipe("cudnn-8.0.3.33-cuda10.1-win-x64", PROJECT_ROOT), "cudnn")
    assert len(seed) == 1 and "recorded by a third party" in seed[0].what
    texts = {name: " ".join((PROJECT_ROOT / name).read_text().split()) for name in
             ("README.md", "examples/quickstart/app.spec", "docs/signatures.md")}
    for name, text in texts.items():
        for claim in ("sha256", "signature", "refused", "allow_unsigned", "NOT SIGNED",
                      "third party", "any file name"):
            assert claim in text, f"{name} does not say {claim!r}"
        assert "where present" not in text and "none is accepted" not in text, name
    for name in ("examples/quickstart/app.spec", "docs/signatures.md"):
        assert seed[0].sha256[:8] in texts[name], name
    assert seed[0].sha256 in texts["docs/signatures.md"]
