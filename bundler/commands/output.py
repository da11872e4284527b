"""Printing shared by the commands: a report as text or JSON, and sizes."""

from __future__ import annotations

import json
from dataclasses import asdict

from bundler.support.text_tables import human_size

__all__ = ["human_size", "print_report", "report_data"]


def print_report(report: object, lines: list[str], as_json: bool) -> None:
    if as_json:
        print(json.dumps(report_data(report), indent=2))
    else:
        print("\n".join(lines))


def report_data(report: object) -> dict:
    data: dict = asdict(report)  # type: ignore[call-overload]
    if hasattr(report, "ok"):
        data["ok"] = report.ok
    return data
