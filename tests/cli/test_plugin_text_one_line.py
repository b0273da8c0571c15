"""Text a dataset's code hands back (its ``count_problem``, its card's title, version,
license, homepage) is printed as one line: a newline in it forges no line of convbank's
output and an escape drives no terminal (before: ``count_problem`` returning ``'short\\nerror:
forged'`` printed `error: forged` as a line of its own in ``validate``, and a title's
newline a line of its own in ``info``; found by pass 19, 2 of 2 runs each)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from convbank import catalog
from convbank.cli.main import cli
from convbank.store import Bank

FORGED = "short\nerror: forged\x1b[2J\u2028line"
SHOWN = "short\\nerror: forged\\x1b[2J\\u2028line"


def test_a_count_problems_newline_forges_no_line_of_validate(
    built: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(type(catalog.get("casino")), "count_problem", lambda self, part, n: FORGED)
    result = CliRunner().invoke(cli, ["validate", "casino"])
    assert result.exit_code == 1
    findings = [line for line in result.stdout.splitlines() if line.startswith("error ")]
    assert findings == [f"error casino published_counts: {SHOWN}"] * 3


def test_a_titles_newline_forges_no_line_of_info(built: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    kind = type(catalog.get("casino"))
    monkeypatch.setattr(kind, "title", FORGED)
    monkeypatch.setattr(kind, "license", "MIT\nerror: forged")
    result = CliRunner().invoke(cli, ["info", "casino"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"{SHOWN} (casino, version ")
    assert lines[2].startswith("license: MIT\\nerror: forged   homepage: ")
    assert not any(line.startswith("error: forged") for line in lines)
