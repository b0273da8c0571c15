"""An example id is text (or a whole number, its digits) in every reader and writer of ids: a
null one is refused in one line, never read as the text ``'None'`` (pass 20: a null
``example_id`` in a predictions file was scored as the unknown id ``'None'``, or taken for a
duplicate of a real ``'None'``; a task's example of id None was exported and scored as
``'None'``; 2 of 2 runs each)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import convbank
from convbank.bench import BenchError, read_predictions, score, task_named, write_predictions
from convbank.bench._repeats import id_text
from convbank.bench.files import export_task
from convbank.cli import cli
from convbank.store import Bank

NOT_TEXT = "an example id is null, not text; each example id is text (or a whole number)"


def test_a_null_example_id_in_a_predictions_file_is_refused_in_one_line(tmp_path: Path) -> None:
    jsonl = tmp_path / "p.jsonl"
    jsonl.write_text('{"example_id": "a", "prediction": 1}\n{"example_id": null, "prediction": 2}\n')
    parquet = tmp_path / "p.parquet"
    pq.write_table(
        pa.table({"example_id": pa.array(["a", None], pa.large_string()), "prediction": [1, 2]}), parquet
    )
    for path in (jsonl, parquet):
        with pytest.raises(BenchError) as caught:
            read_predictions(path)
        assert str(caught.value) == f"{path}: 1 row(s) whose example_id is not text (row 2 (null))"
        assert caught.value.line == 2
    jsonl.write_text('{"example_id": 5, "prediction": 1}\n{"example_id": [1], "prediction": 2}\n')
    with pytest.raises(BenchError, match=r"\(row 2 \(a list \(\[1\]\)\)\)$"):
        read_predictions(jsonl)


def test_the_cli_says_a_null_id_in_one_line_exit_2(built: Bank, tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"example_id": null, "prediction": []}\n')
    result = CliRunner().invoke(cli, ["bench", "casino-strategy", "--predictions", str(path)])
    assert (result.exit_code, result.output) == (
        2,
        f"error: {path}: 1 row(s) whose example_id is not text (row 1 (null))\n",
    )


def test_a_null_id_given_to_score_or_write_predictions_is_refused(built: Bank, tmp_path: Path) -> None:
    with pytest.raises(BenchError) as caught:
        score("casino-strategy", {None: []})
    assert str(caught.value) == f"the predictions: {NOT_TEXT}"
    with pytest.raises(BenchError) as caught:
        score("casino-strategy", {5: [], "5": []})
    assert str(caught.value) == "the predictions: two example ids are '5' as text; each example once"
    with pytest.raises(BenchError) as caught:
        write_predictions(tmp_path / "w.parquet", {"a": 1, None: 2})
    assert str(caught.value) == f"{tmp_path / 'w.parquet'}: {NOT_TEXT}"
    assert not (tmp_path / "w.parquet").exists()


def test_a_tasks_example_of_null_id_is_refused_by_export_and_score(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = task_named("casino-strategy")
    real = type(task).data
    data = real(task, convbank.load("casino"))
    odd = replace(data, examples=[replace(data.examples[0], id=None), *data.examples[1:]])  # type: ignore[arg-type]
    with pytest.raises(BenchError) as caught:
        export_task(task, odd, tmp_path / "out")
    assert str(caught.value) == f"casino-strategy's examples: {NOT_TEXT}"
    assert not (tmp_path / "out").exists()
    monkeypatch.setattr(type(task), "data", lambda self, corpus, seed=0: odd)
    with pytest.raises(BenchError) as caught:
        score("casino-strategy", {})
    assert str(caught.value) == f"casino-strategy's examples: {NOT_TEXT}"


def test_id_text_takes_text_and_whole_numbers_only() -> None:
    assert [id_text(v) for v in ("x", 0, -3, None, False, 2.0, {}, 10**5000)] == ["x", "0", "-3"] + [None] * 5


def test_two_ids_that_are_one_text_are_found_in_one_pass(tmp_path: Path) -> None:
    """The repeat is found as the ids are read, once each (before: each id was looked for among
    all before it, so 200,000 ids with the repeat last took 2 * 10**10 comparisons, minutes)."""
    ids: dict[object, int] = {f"e{i}": i for i in range(200_000)}
    ids[7] = 0
    ids["7"] = 0
    with pytest.raises(BenchError) as caught:
        write_predictions(tmp_path / "w.parquet", ids)
    assert (
        str(caught.value) == f"{tmp_path / 'w.parquet'}: two example ids are '7' as text; each example once"
    )
