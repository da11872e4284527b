"""README is a short user guide that links docs/ for the details: every relative link in
README.md and docs/*.md must reach a file of the repository and, with a #fragment, a
heading of that file (GitHub's anchor rule), so text moved between them stays reachable;
README links every page of docs/ and stays about 300 lines."""

from __future__ import annotations

import re
from pathlib import Path

from tests.harness.winenv import PROJECT_ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def broken_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target} (no such heading)")
    return broken


def test_every_relative_link_in_the_docs_resolves() -> None:
    pages = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
    found = {str(p.relative_to(PROJECT_ROOT)): broken_links(p) for p in pages}
    assert {page: links for page, links in found.items() if links} == {}


def test_readme_links_every_page_of_docs() -> None:
    """Nothing moved out of README is orphaned: README links each docs/ page."""
    readme = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")
    linked = {Path(t.partition("#")[0]).name for t in LINK.findall(readme)
              if t.startswith("docs/")}
    pages = {p.name for p in (PROJECT_ROOT / "docs").glob("*.md")}
    assert pages - linked == set()


def test_the_anchor_rule_is_githubs() -> None:
    assert anchor(" The zip: `bundler pack --zip PATH`") == "the-zip-bundler-pack---zip-path"
    assert anchor("Checks at pack time") == "checks-at-pack-time"


def test_readme_stays_a_short_guide() -> None:
    """Issue 17: README is a user guide of about 300 lines; details go to docs/."""
    lines = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 320, f"README.md has {lines} lines: move details into docs/"
