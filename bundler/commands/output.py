"""Printing shared by the commands: a report as text, or as its public JSON view (a
versioned dict built on purpose, never a dump of internal dataclasses), and sizes."""

from __future__ import annotations

import json
from dataclasses import asdict

from bundler.support.text_tables import human_size

__all__ = ["human_size", "inspect_view", "print_view"]

# The version of `bundler inspect --json` (docs/formats.md): a key may be added within
# it; one renamed or removed raises it. 1 was the unversioned output before it.
INSPECT_SCHEMA = 2


def print_view(view: dict, lines: list[str], as_json: bool) -> None:
    """A report as text, or as its public JSON view (diagnose/doctor/view.py for doctor,
    `inspect_view` for inspect)."""
    print(json.dumps(view, indent=2) if as_json else "\n".join(lines))


def inspect_view(report: object) -> dict:
    """`bundler inspect --json`: the keys docs/formats.md documents, each library read an
    entry of `libraries` (`dlls` the same value, a deprecated alias until 1.0)."""
    data: dict = asdict(report)  # type: ignore[call-overload]
    libraries = data["dlls"]
    return {"schema": INSPECT_SCHEMA, "path": data["path"], "kind": data["kind"],
            "size": data["size"], "sha256": data["sha256"], "members": data["members"],
            "libraries": libraries, "dlls": libraries, "matches": data["matches"]}
