"""Scores are printed in a bounded form: four decimals where they show the figure, else six
significant digits with an exponent. Before (pass 17, left open; pass 18 fixed): ``bench
--results`` showed a saved score of ``1e308`` as the first 120 of its 314 digits, then
``… (314 characters)``, and ``1e-300`` as ``0.0000``, 2 of 2 runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from convbank.bench import results as results_module
from convbank.cli.main import cli


def test_a_saved_score_of_any_size_is_printed_in_a_few_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    monkeypatch.setattr(results_module, "results_folder", lambda: folder)
    for model, score in {"huge": 1e308, "tiny": 1e-300, "below": -1.5e300, "plain": 0.1068}.items():
        run = {"task": "casino-strategy", "model": model, "seed": 0, "metrics": {"mean_f1": score}}
        (folder / f"{model}.json").write_text(json.dumps(run))
    listed = CliRunner(env={"COLUMNS": "200"}).invoke(cli, ["bench", "--results"])
    assert listed.exit_code == 0, listed.output
    rows = [line.split("│")[2:7:4] for line in listed.stdout.splitlines() if line.startswith("│")]
    assert [[cell.strip() for cell in row] for row in rows] == [
        ["huge", "1e+308"],
        ["plain", "0.1068"],
        ["tiny", "1e-300"],
        ["below", "-1.5e+300"],
    ]
