"""Any model on any task: the task's data out (per fold, JSONL and Parquet), predictions in
(scored by the task's own metric, checked entry by entry), a model class from this file run
through --model, and saved runs on a leaderboard."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import convbank
from convbank.bench import TASKS, BenchError, leaderboard, run, score, write_predictions
from convbank.cli.main import cli
from convbank.store import Bank
from convbank.tasks import Example, Task

FASTEST = {task.name: task.models[0] for task in TASKS}


def _perfect(task: Task, gold: Any) -> Any:
    """The prediction that equals a gold answer."""
    if task.kind == "ranking":
        n = len(gold["candidates"])
        right = set(gold["answer"]) if isinstance(gold["answer"], list) else {gold["answer"]}
        return [1.0 if i in right else 0.0 for i in range(n)]
    return gold["answer"]


def _gold_rows(folder: Path) -> dict[str, Any]:
    """{example_id: {"answer", "candidates"}} from an exported task's test files."""
    rows: dict[str, Any] = {}
    for fold in sorted(p for p in folder.iterdir() if p.is_dir()):
        inputs = {r["example_id"]: r for r in map(json.loads, (fold / "test.jsonl").read_text().splitlines())}
        for r in map(json.loads, (fold / "test.gold.jsonl").read_text().splitlines()):
            rows[r["example_id"]] = {
                "answer": r["gold"],
                "candidates": inputs[r["example_id"]].get("candidates", ()),
            }
    return rows


PERFECT = {
    "casino-strategy": {"mean_f1": 1.0},
    "convai2-quality": {"spearman": 1.0, "mae": 0.0},
    "curiosity-utterance-acts": {"micro_f1": 1.0},
    "curiosity-policy-acts": {"micro_f1": 1.0},
    "curiosity-like": {"accuracy": 1.0},
    "curiosity-fact-ranking": {"mrr": 1.0},
    "pec-response-selection": {"mrr": 1.0, "recall@1": 1.0},
    "ccpe-preference-spans": {"micro_f1": 1.0},
    "tsvdial-intents": {"micro_f1": 1.0},
}


@pytest.mark.parametrize("task", TASKS.names())
def test_export_then_score_gold_is_perfect_and_a_builtin_scores_as_it_ran(
    built: Bank, tmp_path: Path, task: str
) -> None:
    chosen = TASKS[task]
    config = ["--config", "volunteers"] if task == "convai2-quality" else []
    runner = CliRunner()
    exported = runner.invoke(cli, ["bench", task, *config, "--export", str(tmp_path / "out")])
    assert exported.exit_code == 0, exported.output
    folder = tmp_path / "out" / task
    described = json.loads((folder / "task.json").read_text())
    assert described["task"] == task and described["kind"] == chosen.kind and described["folds"]
    for fold in described["folds"]:
        for stem in ("train", "train.gold", "test", "test.gold"):
            lines = (folder / fold["name"] / f"{stem}.jsonl").read_text().splitlines()
            table = pq.read_table(folder / fold["name"] / f"{stem}.parquet")
            assert len(lines) == table.num_rows == fold[stem.split(".")[0]]
            assert table.column("example_id").to_pylist() == [json.loads(x)["example_id"] for x in lines]
    gold = _gold_rows(folder)
    assert len(gold) == sum(f["test"] for f in described["folds"])  # each test example once
    perfect = tmp_path / "perfect.jsonl"
    write_predictions(perfect, {k: _perfect(chosen, v) for k, v in gold.items()})
    scored = runner.invoke(cli, ["bench", task, *config, "--predictions", str(perfect), "--json"])
    assert scored.exit_code == 0, scored.output
    metrics = json.loads(scored.stdout)["metrics"]
    assert {k: metrics[k] for k in PERFECT[task]} == PERFECT[task]
    ran = runner.invoke(
        cli,
        [
            "bench",
            task,
            *config,
            "-m",
            FASTEST[task],
            "--write-predictions",
            str(tmp_path / "p.parquet"),
            "--json",
        ],
    )
    assert ran.exit_code == 0, ran.output
    again = runner.invoke(
        cli, ["bench", task, *config, "--predictions", str(tmp_path / "p.parquet"), "--json"]
    )
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["metrics"] == json.loads(ran.stdout)["metrics"]


def test_bad_predictions_files_are_one_line_naming_the_first_few(built: Bank, tmp_path: Path) -> None:
    task = TASKS["casino-strategy"]
    data = task.data(convbank.load("casino"), 0)
    ids = data.test_ids()
    assert len(ids) == 4615 == len(set(ids))
    good = {i: [] for i in ids}

    def fails(predictions: dict[str, Any] | Path) -> str:
        with pytest.raises(BenchError) as caught:
            score("casino-strategy", predictions)
        assert "\n" not in str(caught.value)
        return str(caught.value)

    missing = dict(list(good.items())[5:])
    assert fails(missing) == (
        "casino-strategy: the predictions cannot be scored: 5 example(s) missing "
        f"({ids[0]!r}, {ids[1]!r}, {ids[2]!r}, ...)"
    )
    assert "2 unknown example id(s) ('nope/1', 'nope/2')" in fails({**good, "nope/1": [], "nope/2": []})
    bad = {**good, ids[7]: "uv-part", ids[9]: ["uv_part"]}
    assert fails(bad).endswith(
        f"2 malformed prediction(s) ({ids[7]!r}, {ids[9]!r}: expected a list of labels)"
    )
    lines = tmp_path / "dup.jsonl"
    rows = [{"example_id": i, "prediction": []} for i in ids] + [{"example_id": ids[3], "prediction": []}]
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows) + "not json\n{}\n")
    message = fails(lines)
    assert message.startswith(f"{lines}: 1 line(s) are not JSON (line {len(rows) + 1})")
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{}\n")
    assert fails(lines) == (
        f"{lines}: 1 row(s) without example_id and prediction (row {len(rows) + 1}); "
        f"1 duplicate example id(s) ({ids[3]!r})"
    )
    cli_result = CliRunner().invoke(cli, ["bench", "casino-strategy", "--predictions", str(lines)])
    assert cli_result.exit_code == 2 and cli_result.output.count("\n") == 1


class KeywordStrategies:
    """A model a researcher brings: keyword rules, with a threshold learned in fit."""

    def __init__(self) -> None:
        self.fitted = 0

    def fit(self, examples: Sequence[Example], gold: Sequence[list[str]]) -> None:
        assert all("text" in e.inputs for e in examples) and len(examples) == len(gold)
        self.fitted += 1

    def predict(self, examples: Sequence[Example]) -> list[list[str]]:
        out = []
        for e in examples:
            text = e["text"].lower()
            labels = []
            if any(w in text for w in ("hello", "hi ", "how are you")):
                labels.append("small-talk")
            if "need" in text and "don't" not in text:
                labels.append("self-need")
            if "?" in text and "you" in text:
                labels.append("elicit-pref")
            out.append(labels)
        return out


def test_a_model_class_from_a_test_file_runs_on_every_fold(
    built: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = KeywordStrategies()
    result = run("casino-strategy", model=model)
    assert model.fitted == 5 and result.model == "KeywordStrategies"
    per_label = result.metrics["per_label"]
    assert per_label["small-talk"] > 0.3 and per_label["no-need"] == 0.0
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    cli_run = CliRunner().invoke(
        cli, ["bench", "casino-strategy", "--model", "test_any_model_protocol:KeywordStrategies", "--json"]
    )
    assert cli_run.exit_code == 0, cli_run.output
    assert json.loads(cli_run.stdout)["metrics"] == result.metrics
    wrong = CliRunner().invoke(
        cli, ["bench", "pec-response-selection", "--model", "test_any_model_protocol:KeywordStrategies"]
    )
    assert wrong.exit_code == 2
    assert (
        wrong.output.strip()
        == "error: pec-response-selection is a ranking task: the model needs a rank(examples) method"
    )
    missing = CliRunner().invoke(cli, ["bench", "casino-strategy", "--model", "no_such_module:X"])
    assert missing.exit_code == 2 and "cannot import 'no_such_module'" in missing.output


def test_saved_runs_make_a_leaderboard(built: Bank) -> None:
    runner = CliRunner()
    for model in ("random", "tfidf"):
        saved = runner.invoke(cli, ["bench", "casino-strategy", "-m", model, "--save", "--json"])
        assert saved.exit_code == 0, saved.output
    rows = leaderboard("casino-strategy")
    assert [r["model"] for r in rows] == ["tfidf", "random"]  # best first
    assert rows[0]["score"] == pytest.approx(0.5695, abs=0.005) and rows[1]["score"] == 0.1068
    assert rows[0]["convbank"] == convbank.__version__ and rows[0]["seed"] == 0
    assert set(rows[0]["sources"]) == {"casino_train.json", "casino_valid.json", "casino_test.json"}
    assert all(len(v) == 64 for v in rows[0]["sources"].values())
    listed = json.loads(runner.invoke(cli, ["bench", "--results", "--json"]).stdout)
    assert [r["model"] for r in listed] == ["tfidf", "random"]
    text = runner.invoke(cli, ["bench", "--results"]).output
    assert "saved runs" in text and "tfidf" in text


def test_a_run_of_several_configs_is_a_row_per_config(built: Bank) -> None:
    saved = CliRunner().invoke(cli, ["bench", "convai2-quality", "-m", "tfidf", "--save", "--json"])
    assert saved.exit_code == 0, saved.output
    rows = leaderboard("convai2-quality")
    assert {r["config"]: r["score"] for r in rows} == {
        "intermediate": pytest.approx(0.4925, abs=0.01),
        "volunteers": pytest.approx(0.2783, abs=0.01),
    }


@pytest.mark.parametrize("repeated", ["prediction", "example_id"])
def test_a_parquet_predictions_file_repeating_a_column_is_refused(
    built: Bank, tmp_path: Path, repeated: str
) -> None:
    """Before: of two columns named ``prediction`` the last was read without a word (a
    constant 3.0 beside the real ones: ``spearman: null``, exit 0), 2 of 2 files."""
    import pyarrow as pa

    path = tmp_path / "twice.parquet"
    ids, scores = ["intermediate-00003", "intermediate-00004"], [1.0, 5.0]
    other = ids if repeated == "example_id" else [3.0, 3.0]
    names = ["example_id", "prediction", repeated]
    pq.write_table(
        pa.Table.from_arrays([pa.array(ids), pa.array(scores), pa.array(other)], names=names), path
    )
    done = CliRunner().invoke(cli, ["bench", "convai2-quality", "--predictions", str(path)])
    assert (done.exit_code, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: {path}: 2 columns named {repeated!r}; a predictions file has one example_id and one "
        "prediction column\n"
    )


@pytest.mark.parametrize(
    "kind", ["Decimal", "Fraction", "numpy float32", "torch tensor"], ids=lambda k: k.replace(" ", "-")
)
def test_numbers_of_every_kind_a_model_returns_score_as_floats(built: Bank, kind: str) -> None:
    """A score a model gives as a ``Decimal``, a ``Fraction``, a numpy ``float32`` or a 0-d
    PyTorch tensor is scored as the float it rounds to (before: ``Decimal``, ``Fraction`` and a
    tensor were "malformed prediction(s) ... expected a finite number", 3 of 4 kinds); one that
    has no float (a signalling NaN) is malformed, in one line."""
    import decimal
    import fractions

    import numpy as np
    import torch

    task = TASKS["convai2-quality"]
    data = task.data(convbank.load("convai2", config="volunteers"), 0)
    gold = dict(zip((e.id for e in data.examples), data.gold, strict=True))
    as_kind = {
        "Decimal": lambda x: decimal.Decimal(str(x)),
        "Fraction": fractions.Fraction,
        "numpy float32": np.float32,
        "torch tensor": lambda x: torch.tensor(float(x)),
    }[kind]
    predictions = {i: as_kind(gold[i]) for i in data.test_ids()}
    metrics = score(task, predictions, config="volunteers").metrics
    assert (metrics["spearman"], metrics["mae"]) == (1.0, 0.0)
    first = data.test_ids()[0]
    with pytest.raises(BenchError) as caught:
        score(task, {**predictions, first: decimal.Decimal("sNaN")}, config="volunteers")
    assert str(caught.value).endswith(f"1 malformed prediction(s) ({first!r}: expected a finite number)")


def test_an_endless_iterator_of_predictions_is_refused_in_bounded_memory() -> None:
    """Before: ``list()`` of what ``predict`` returned read ``itertools.repeat([])`` until the
    memory ran out (a ``MemoryError`` after 4 GB under ``ulimit -v``, 1 of 1 tries)."""
    from convbank.bench._guarded import answers_of

    read = 0

    def endless() -> Any:
        nonlocal read
        while True:
            read += 1
            yield []

    with pytest.raises(BenchError) as caught:
        answers_of("casino-strategy", "Endless", "fold1", "predict", endless(), ids=["a", "b"])
    assert str(caught.value) == (
        "casino-strategy, fold1: the model Endless returned more than 2 predictions for 2 examples"
    )
    assert read == 3  # one too many, no further


class _Turns:
    """Scores each dialogue by its count of turns."""

    def predict(self, examples: Sequence[Example]) -> list[float]:
        return [float(len(e["turns"])) for e in examples]


class _Meddler(_Turns):
    """Scores as :class:`_Turns` does, doing to what it is given all that a model may."""

    def setup(self, examples: Sequence[Example]) -> None:
        for e in examples:
            e.inputs["config"] = "volunteers"  # type: ignore[index]

    def fit(self, examples: Sequence[Example], gold: list[Any]) -> None:
        for e in examples:
            e.inputs.clear()  # type: ignore[attr-defined]
        gold.clear()

    def predict(self, examples: Sequence[Example]) -> list[float]:
        out = super().predict(examples)
        for e in examples:
            object.__setattr__(e, "id", "mine")
        return out


def test_what_a_model_does_to_its_examples_never_reaches_the_scoring(built: Bank) -> None:
    """Pass 19. Before: a model whose ``setup`` set each example's ``config`` made
    ``convai2-quality`` a ``ValueError: MAE of no items`` traceback, one whose ``fit`` cleared
    its examples' inputs a ``KeyError: 'config'`` traceback, exit 1 (2 of 2 runs each), and
    an ``id`` set by ``predict`` took the prediction to that id. Each call now gets copies."""
    task = TASKS["convai2-quality"]
    expected = run(task, model=_Turns()).metrics
    assert run(task, model=_Meddler()).metrics == expected
    assert len(expected) == 2  # both configs, each scored on its own


def test_a_predictions_line_naming_a_key_twice_is_refused(tmp_path: Path) -> None:
    """Pass 19. Before: ``{"example_id": "a", "prediction": 1, "prediction": 5}`` was scored
    with the last value, unsaid, exit 0 (1 of 1 files; a Parquet file's repeated column is
    refused), as was a key spelled with an escape (``"predictio\\u006e"``)."""
    from convbank.bench import read_predictions

    path = tmp_path / "p.jsonl"
    lines = (
        '{"example_id": "b", "prediction": 1, "prediction": 5}',
        '{"example_id": "b", "prediction": 1, "predictio\\u006e": 5}',
        '{"example_id": "b", "prediction": [{"start": 1, "start": 2}]}',
        '{"example_id": "b", "example_id": "c", "prediction": 1}',
    )
    for line, key in zip(lines, ("prediction", "prediction", "start", "example_id"), strict=True):
        path.write_text('{"example_id": "a", "prediction": 2}\n' + line + "\n", encoding="utf-8")
        with pytest.raises(BenchError) as caught:
            read_predictions(path)
        assert str(caught.value) == (
            f"{path}: line 2 names the key {key!r} twice; "
            'each line is {"example_id": ..., "prediction": ...}, each key once'
        )
    huge = "9" * 300  # a number, a ":" in a text and an object: read again, no key twice
    path.write_text(f'{{"example_id": "a:b", "prediction": [{huge}, {{"x": 1}}]}}\n', encoding="utf-8")
    assert list(read_predictions(path)) == ["a:b"]


class Wanderer:
    """Changes the working folder in every call, as a model reading its files might."""

    def __init__(self, where: Path) -> None:
        self.where = where

    def fit(self, examples: list[Example], gold: list[Any]) -> None:
        os.chdir(self.where)

    def predict(self, examples: list[Example]) -> list[list[str]]:
        os.chdir(self.where)
        return [[] for _ in examples]


def test_a_model_that_changes_the_working_folder_never_moves_where_the_run_writes(
    built: Bank, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 20. Before: a ``--model`` class calling ``os.chdir("/")`` made ``--write-predictions
    out.jsonl`` write ``/out.jsonl``, outside the folder it was run in (2 of 2); each call of
    the model's code now goes back to the working folder it found."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir(), elsewhere.mkdir()
    monkeypatch.chdir(here)
    run("casino-strategy", model=Wanderer(elsewhere))
    assert Path.cwd() == here
    (here / "wander.py").write_text(
        "import os\nclass W:\n    def predict(self, examples):\n"
        f"        os.chdir({str(elsewhere)!r})\n        return [[] for _ in examples]\n"
    )
    done = CliRunner().invoke(
        cli, ["bench", "casino-strategy", "-m", "wander:W", "--write-predictions", "o.jsonl"]
    )
    assert done.exit_code == 0, done.output
    assert (here / "o.jsonl").is_file() and list(elsewhere.iterdir()) == []
