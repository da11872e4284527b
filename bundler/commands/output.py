"""Printing shared by the commands: a report as text or JSON, and sizes."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict

from bundler.support.text_tables import human_size

__all__ = ["human_size", "print_report", "print_view", "report_data"]


def print_view(view: dict, lines: list[str], as_json: bool) -> None:
    """A report as text, or as its public JSON view (a versioned dict built on purpose:
    diagnose/doctor/view.py)."""
    print(json.dumps(view, indent=2) if as_json else "\n".join(lines))


def print_report(report: object, lines: list[str], as_json: bool,
                 shaped: Callable[[dict], dict] = lambda data: data) -> None:
    if as_json:
        print(json.dumps(shaped(report_data(report)), indent=2))
    else:
        print("\n".join(lines))


def report_data(report: object) -> dict:
    data: dict = asdict(report)  # type: ignore[call-overload]
    if hasattr(report, "ok"):
        data["ok"] = report.ok
    return data


def with_libraries(data: dict, libraries: object = None) -> dict:
    """`libraries` in a diagnosis's JSON (the libraries it read: `dlls` by default), and
    `dlls` kept beside it as a deprecated alias of the same value until 1.0."""
    shaped = {}
    for key, value in data.items():
        if key == "dlls":
            shaped["libraries"] = value if libraries is None else libraries
            shaped["dlls"] = shaped["libraries"]
        elif key != "libraries":
            shaped[key] = value
    return shaped
