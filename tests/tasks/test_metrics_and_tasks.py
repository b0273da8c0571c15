"""Benchmarks: metrics against hand-computed values and scikit-learn/scipy, every task end
to end on the fixtures (labelled as fixture data), CaSiNo and ConvAI2 on the real data."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.stats import spearmanr
from sklearn.metrics import f1_score
from sklearn.preprocessing import MultiLabelBinarizer

from convbank.bench import TASKS, BenchError, run
from convbank.cli import cli
from convbank.datasets.casino.tasks import LABELS, negation_marked, utterances
from convbank.errors import UnknownDatasetError
from convbank.query import load
from convbank.store import Bank
from convbank.tasks.finetune import TopLayerTuner, TuneConfig
from convbank.tasks.metrics import (
    PRF,
    accuracy,
    binary_f1,
    mean_absolute_error,
    micro_prf,
    mrr,
    rank_of,
    recall_at,
    span_prf,
    spearman,
)


def test_f1_by_hand() -> None:
    assert PRF(3, 1, 2).precision == 0.75 and PRF(3, 1, 2).recall == 0.6
    assert PRF(3, 1, 2).f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert PRF(0, 0, 0).f1 == 0.0 and PRF(0, 4, 0).f1 == 0.0
    # P = 0.3, R = 0.2: F1 = 0.24; dividing by max(P + R, 1) would give 0.12
    assert PRF(3, 7, 12).f1 == pytest.approx(0.24)
    assert binary_f1([True, True, False, False], [True, False, True, False]) == 0.5
    assert span_prf({(0, 1, 4), (0, 6, 9)}, {(0, 1, 4), (0, 5, 9)}) == PRF(1, 1, 1)


def test_f1_against_scikit_learn() -> None:
    rng = random.Random(7)
    for _ in range(50):
        gold = [rng.random() < 0.3 for _ in range(40)]
        pred = [rng.random() < 0.4 for _ in range(40)]
        assert binary_f1(gold, pred) == pytest.approx(f1_score(gold, pred, zero_division=0))
    labels = ["a", "b", "c", "d"]
    gold_sets = [{lab for lab in labels if rng.random() < 0.3} for _ in range(60)]
    pred_sets = [{lab for lab in labels if rng.random() < 0.3} for _ in range(60)]
    mlb = MultiLabelBinarizer(classes=labels).fit([labels])
    expected = f1_score(mlb.transform(gold_sets), mlb.transform(pred_sets), average="micro", zero_division=0)
    assert micro_prf(gold_sets, pred_sets).f1 == pytest.approx(expected)


def test_spearman_against_scipy() -> None:
    rng = random.Random(3)
    for _ in range(30):
        x = [rng.randint(1, 5) for _ in range(25)]  # ties, as in eval_score
        y = [rng.random() for _ in range(25)]
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert spearman([1, 2, 3], [3, 3, 3]) is None  # constant prediction: undefined, not 0
    assert spearman([1], [2]) is None
    assert spearman([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)


def test_ranking_metrics_by_hand() -> None:
    assert rank_of([0.2, 0.9, 0.5], 0) == 3
    assert rank_of([0.5, 0.5, 0.1], 0) == 2  # a tie counts against the true candidate
    assert rank_of([1.0, 1.0, 1.0, 1.0], 0) == 4  # a constant scorer is ranked last
    assert mrr([1, 2, 4]) == pytest.approx((1 + 0.5 + 0.25) / 3)
    assert recall_at([1, 2, 11, 60], 10) == 0.5
    assert accuracy([1, 0, 1], [1, 1, 1]) == pytest.approx(2 / 3)
    assert mean_absolute_error([1, 5], [2, 3]) == 1.5
    with pytest.raises(ValueError, match="2 gold items but 1 prediction"):
        binary_f1([True, False], [True])


FIXTURE_TASKS = [task.name for task in TASKS if task.dataset in ("ccpe", "curiosity", "pec")]


BUILT_IN_TASKS = {
    "casino-strategy",
    "curiosity-fact-ranking",
    "curiosity-utterance-acts",
    "curiosity-policy-acts",
    "curiosity-like",
    "pec-response-selection",
    "convai2-quality",
    "ccpe-preference-spans",
}


def test_every_task_is_listed() -> None:
    assert set(TASKS.names()) == {*BUILT_IN_TASKS, "tsvdial-intents"}  # and the plugin's
    for task in TASKS:
        assert (
            len(task.models) >= (3 if task.name in BUILT_IN_TASKS else 2) and task.reference and task.protocol
        )
    assert TASKS["casino-strategy"].models[-1] == "finetune"  # the strongest is the default


@pytest.mark.parametrize("name", FIXTURE_TASKS)
@pytest.mark.parametrize("model_index", [0, 1])
def test_fixture_tasks_run_end_to_end(built: Bank, name: str, model_index: int) -> None:
    model = TASKS[name].models[model_index]
    result = run(name, model=model)
    assert result.data == "fixture"
    assert result.to_dict()["metrics"] == result.metrics and result.metrics
    assert all(v is None or 0 <= v <= 1 for v in _numbers(result.metrics))
    assert run(name, model=model).metrics == result.metrics  # same seed, same numbers


def _numbers(data: dict[str, object]) -> list[float]:
    out: list[float] = []
    for value in data.values():
        if isinstance(value, dict):
            out += [v for k, v in _flat(value) if k != "gold"]
        elif isinstance(value, float):
            out.append(value)
    return out


def _flat(d: dict[str, object]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for k, v in d.items():
        out += _flat(v) if isinstance(v, dict) else [(k, v)]  # type: ignore[list-item]
    return out


def test_fixture_values(built: Bank) -> None:
    ranking = run("curiosity-fact-ranking", model="tfidf")
    assert ranking.metrics == {"mrr": 1.0}
    assert ranking.details == {"assistant_messages": 2, "mean_candidates": 2.0}
    assert run("curiosity-fact-ranking", model="random", seed=1).metrics["mrr"] < 1.0
    spans = run("ccpe-preference-spans", model="majority")
    assert spans.metrics["micro_f1"] == 0.0
    assert spans.metrics["per_type"]["ENTITY_NAME"]["gold"] == 5
    like = run("curiosity-like", model="embed")  # the packaged sentence model, offline
    assert like.details == {"train_messages": 4, "test_messages": 2, "liked_rate": 0.5}


def test_casino_strategy_on_the_real_data(built: Bank) -> None:
    result = run("casino-strategy", model="tfidf")
    assert result.data == "real"
    assert result.details["dialogues"] == 396 and result.details["utterances"] == 4615
    assert result.metrics["mean_f1"] == pytest.approx(0.5695, abs=0.005)
    assert set(result.metrics["per_label"]) == {
        "small-talk",
        "self-need",
        "other-need",
        "no-need",
        "elicit-pref",
        "uv-part",
        "vouch-fair",
    }
    assert result.metrics["per_label"]["small-talk"] == pytest.approx(0.72, abs=0.01)
    chance = run("casino-strategy", model="random")
    assert chance.metrics["mean_f1"] < 0.15


def test_negation_marking() -> None:
    assert negation_marked("I don't need water, but we need 2 firewood!") == (
        "i don't NEG_need NEG_item , but we need num item !"
    )
    assert negation_marked("We have plenty of food and extra wood") == (
        "we have plenty NEG_of NEG_item NEG_and NEG_extra NEG_item"
    )


@pytest.mark.slow
def test_casino_finetune_on_a_few_real_dialogues(built: Bank) -> None:
    """The fine-tuned model end to end on 12 annotated dialogues (the full run takes
    minutes): five folds, its probabilities averaged with the linear model's."""
    casino = load("casino")
    positions = [i for i, c in enumerate(casino) if any("strategy_slots" in t.meta for t in c.turns)][:12]
    annotated = casino.select(positions)
    result = run("casino-strategy", model="finetune", load=lambda *_: annotated)
    assert (
        result.details["dialogues"] == 12
        and result.details["utterances"] == len(utterances(annotated)) == 132
    )
    metrics = result.metrics
    assert set(metrics["per_label"]) == set(LABELS)
    # measured here: 0.2291 (random 0.10), with 9 or 10 dialogues to learn from in each fold
    assert metrics["mean_f1"] == pytest.approx(0.23, abs=0.03)
    assert run("casino-strategy", model="embed", load=lambda *_: annotated).metrics != metrics


def test_top_layer_tuner_learns_a_separable_task() -> None:
    texts = [f"I really love {w}" for w in ("apples", "pears", "plums", "grapes", "melons", "cherries")]
    texts += [
        f"the train was late on {d}" for d in ("monday", "tuesday", "friday", "sunday", "saturday", "june")
    ]
    y = np.array([[i < 6, i >= 6] for i in range(12)])
    tuner = TopLayerTuner(texts, TuneConfig(epochs=8, lr=3e-4, head_lr=3e-3, batch_size=4))
    test = np.array([0, 1, 6, 7])
    train = np.setdiff1d(np.arange(12), test)
    prob = tuner.fit_predict(y, np.zeros((12, 1)), train, test, seed=0)
    assert prob.shape == (4, 2)
    assert (prob[:2, 0] > 0.5).all() and (prob[2:, 1] > 0.5).all() and (prob[2:, 0] < 0.5).all()
    assert np.array_equal(prob, tuner.fit_predict(y, np.zeros((12, 1)), train, test, seed=0))


def test_convai2_quality_on_the_real_data(built: Bank) -> None:
    result = run("convai2-quality", model="tfidf", config="volunteers")
    assert result.data == "real" and result.details["dialogues"] == 593
    assert result.metrics["spearman"] == pytest.approx(0.2783, abs=0.01)
    chance = run("convai2-quality", model="random", config="volunteers")
    assert abs(chance.metrics["spearman"]) < 0.1


def test_bench_cli(built: Bank) -> None:
    result = CliRunner().invoke(cli, ["bench", "pec-response-selection", "--model", "tfidf", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"task", "model", "metrics", "reference", "seconds"} <= set(data)
    assert data["data"] == "fixture" and "mrr" in data["metrics"]
    text = CliRunner().invoke(cli, ["bench", "curiosity-like", "-m", "majority"])
    assert "FIXTURE DATA" in text.output and "majority" in text.output
    listed = json.loads(CliRunner().invoke(cli, ["bench", "--list", "--json"]).stdout)
    assert [t["task"] for t in listed] == TASKS.names() and len(listed) == 9
    bad = CliRunner().invoke(cli, ["bench", "casino-strategy", "--model", "bert"])
    assert bad.exit_code == 2
    assert (
        bad.output.strip()
        == "error: casino-strategy has no model 'bert'; one of random, tfidf, embed, finetune, or module:Class"
    )


@pytest.mark.parametrize("missing", ["sklearn", "scipy"])
@pytest.mark.parametrize(("task", "model"), [("casino-strategy", "random"), ("convai2-quality", "random")])
def test_bench_without_its_extra_is_one_line(
    built: Bank, monkeypatch: pytest.MonkeyPatch, missing: str, task: str, model: str
) -> None:
    """Without the bench extra, every task (a random baseline too: its metrics are
    scikit-learn's and SciPy's) fails with one line naming the extra, exit 2."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == missing else real(n, *a))
    result = CliRunner().invoke(cli, ["bench", task, "--model", model])
    assert result.exit_code == 2
    assert result.output == (
        f"error: Running a benchmark task needs the {missing!r} library, which is not installed; "
        "install it with: pip install 'convbank[bench]'\n"
    )


def test_unknown_task() -> None:
    with pytest.raises(UnknownDatasetError, match="unknown task 'nope'"):
        run("nope")
    with pytest.raises(BenchError):
        run("casino-strategy", model="bert")


def test_published_figures_are_the_authors_and_measured_ones_apart() -> None:
    for task in TASKS:
        assert task.published, task.name
        for f in task.published:  # the authors' figure with its source, or "not found"
            assert f.source and (f.value is not None) != f.source.startswith("not found"), (task.name, f)
        for f in task.measured:
            assert f.source.startswith("measured here"), (task.name, f)
    casino = TASKS["casino-strategy"].reference
    assert [f["value"] for f in casino["published"]] == [None]
    assert casino["published"][0]["source"].startswith("not found: Chawla et al. 2021 (NAACL)")
    assert {f["system"]: f["value"] for f in casino["measured_here"]} == {
        "random": 0.1068,
        "tfidf": 0.5695,
        "embed": 0.639,
        "finetune": 0.67,
    }
    table4 = "Rodriguez et al. 2020 (EMNLP), Table 4"
    assert TASKS["curiosity-utterance-acts"].reference["published"][:2] == [
        {
            "system": "majority class",
            "metric": "micro_f1",
            "value": 0.602,
            "source": f"{table4}, validation",
            "split": "validation",
        },
        {
            "system": "majority class",
            "metric": "micro_f1",
            "value": 0.604,
            "source": f"{table4}, test",
            "split": "test",
        },
    ]

    def table(task: str) -> dict[tuple[str, str | None], float | None]:
        return {(f.system, f.split): f.value for f in TASKS[task].published}

    systems = ("majority class", "E2E BERT", "CHARM", "CHARM without context")
    expected = {  # Table 4 of Rodriguez et al. 2020, (validation, test), from the authors' LaTeX
        "curiosity-utterance-acts": ((0.602, 0.604), (0.794, 0.795), (0.845, 0.847), (0.838, 0.842)),
        "curiosity-policy-acts": ((0.491, 0.494), (0.635, 0.631), (0.682, 0.682), (0.664, 0.664)),
        "curiosity-like": ((0.690, 0.681), (0.829, 0.822), (0.826, 0.815), (0.824, 0.820)),
        "curiosity-fact-ranking": (None, (0.420, 0.418), (0.546, 0.546), (0.516, 0.506)),
    }
    for task, rows in expected.items():
        want = {
            (system, split): value
            for system, pair in zip(systems, rows, strict=True)
            if pair is not None
            for split, value in zip(("validation", "test"), pair, strict=True)
        }
        if task == "curiosity-fact-ranking":
            want[("TF-IDF", "test")] = 0.408
        assert table(task) == want, task
    convai2 = {
        f.system.split(" (")[0]: f.value for f in TASKS["convai2-quality"].published if f.value is not None
    }
    assert convai2 == {
        "Lost in Conversation": 3.11,
        "Hugging Face": 2.68,
        "KV Profile Memory": 2.44,
        "human": 3.48,
    }
    assert all(
        "does not say it is the wild evaluation alone" in f.source
        for f in TASKS["convai2-quality"].published[1:]
    )


def test_bench_shows_published_and_measured_in_their_own_columns(
    built: Bank, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convbank.cli import _console

    monkeypatch.setattr(_console.out, "width", 250)
    result = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "random"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "published (the authors)" in line)
    assert "measured here (convbank)" in header and "source" in header
    published = next(line for line in result.output.splitlines() if "BERT, multi-task" in line)
    assert "not found" in published and "0.5695" not in published
    tfidf = next(line for line in result.output.splitlines() if line.strip("│ ").startswith("tfidf"))
    cells = [c.strip() for c in tfidf.strip("│").split("│")]
    assert cells[:5] == ["tfidf", "mean_f1", "", "", "0.5695"]
    data = json.loads(CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "random", "--json"]).stdout)
    assert set(data["reference"]) == {"published", "measured_here"}
    assert data["metrics"]["mean_f1"] == 0.1068  # what the measured figure of the random model says


def test_progress_reports_folds_to_a_watcher(built: Bank) -> None:
    from convbank.tasks.progress import progress, watched

    events: list[tuple[str, int, object]] = []

    class Recorder:
        def begin(self, stage: int, description: str, total: int) -> None:
            events.append(("begin", stage, (description, total)))

        def advance(self, stage: int) -> None:
            events.append(("advance", stage, None))

        def end(self, stage: int) -> None:
            events.append(("end", stage, None))

    with watched(Recorder()):
        result = run("casino-strategy", model="tfidf")
    assert events[0] == ("begin", 1, ("tfidf: folds", 5))
    assert [e[0] for e in events] == ["begin", *["advance"] * 5, "end"]
    assert result.metrics["mean_f1"] > 0.5
    assert list(progress(iter([1, 2]), "unwatched")) == [1, 2]  # no watcher: items pass through


def test_bench_writes_a_line_per_fold_when_stderr_is_a_log(built: Bank) -> None:
    """Issue 24.8: with stderr not a terminal (nohup, SLURM), a line per stage and fold with
    the seconds; stdout keeps the results alone."""
    import re

    result = CliRunner().invoke(cli, ["bench", "casino-strategy", "-m", "random", "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["model"] == "random"
    lines = result.stderr.splitlines()
    assert [re.sub(r"\d+\.\d s", "S s", re.sub(r"^\[ +\d+\.\d s\] ", "[T] ", line)) for line in lines] == [
        "[T] random: folds: 5 steps",
        *(f"[T] random: folds: {k}/5 (S s)" for k in range(1, 6)),
        "[T] random: folds: done in S s",
    ]


def test_line_watcher_reports_a_long_stage_by_tenths() -> None:
    import io

    from convbank.tasks.progress import LineWatcher, progress, watched

    log = io.StringIO()
    with watched(LineWatcher(log)):
        assert sum(progress(range(1000), "embedding 1,000 texts")) == 499500
        for _ in progress(range(5), "stopped early"):
            break
    lines = [line.split("] ", 1)[1] for line in log.getvalue().splitlines()]
    assert lines[0] == "embedding 1,000 texts: 1,000 steps"
    assert [line.split(" (")[0] for line in lines[1:11]] == [
        f"embedding 1,000 texts: {n:,}/1,000" for n in range(100, 1001, 100)
    ]
    assert lines[11].startswith("embedding 1,000 texts: done in ")
    assert lines[-1].startswith("stopped early: done after 0 of 5 steps in ")


def test_convai2_quality_reports_each_config_never_pooled(built: Bank) -> None:
    """Issue 24.11: without --config the figures are per config, to be set beside the
    per-config references (volunteers tfidf 0.2783, intermediate 0.4925); no pooled figure."""
    result = run("convai2-quality", model="tfidf")
    assert set(result.metrics) == {"volunteers", "intermediate"}
    assert result.metrics["volunteers"]["spearman"] == pytest.approx(0.2783, abs=0.01)
    assert result.metrics["intermediate"]["spearman"] == pytest.approx(0.4925, abs=0.01)
    assert result.details["dialogues"] == {"volunteers": 593, "intermediate": 198}
    text = CliRunner().invoke(cli, ["bench", "convai2-quality", "-m", "tfidf"]).stdout
    assert "volunteers / spearman" in text and "intermediate / spearman" in text


def test_a_span_offset_that_is_a_boolean_is_a_malformed_prediction(built: Bank, tmp_path: Path) -> None:
    """Before: ``{"start": false, ...}`` (and ``true``) passed the check as an int and was
    scored as offset 0 (1): the gold spans with their 0 offsets as ``false`` scored micro F1
    1.0, exit 0, 2 of 2 runs; an offset of ``0.0`` was refused."""
    runner = CliRunner()
    assert (
        runner.invoke(cli, ["bench", "ccpe-preference-spans", "--export", str(tmp_path / "t")]).exit_code == 0
    )
    golds = [
        json.loads(line)
        for path in sorted((tmp_path / "t" / "ccpe-preference-spans").glob("fold*/test.gold.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    rows = [{"example_id": g["example_id"], "prediction": g["gold"]} for g in golds]
    right, wrong = tmp_path / "right.jsonl", tmp_path / "wrong.jsonl"
    right.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    as_booleans = [
        {
            **r,
            "prediction": [
                {**s, "start": bool(s["start"]) if s["start"] < 2 else s["start"]} for s in r["prediction"]
            ],
        }
        for r in rows
    ]
    wrong.write_text("".join(json.dumps(r) + "\n" for r in as_booleans), encoding="utf-8")
    done = runner.invoke(cli, ["bench", "ccpe-preference-spans", "--predictions", str(right), "--json"])
    assert done.exit_code == 0 and json.loads(done.stdout)["metrics"]["micro_f1"] == 1.0
    done = runner.invoke(cli, ["bench", "ccpe-preference-spans", "--predictions", str(wrong)])
    assert (done.exit_code, done.stdout) == (2, "")
    assert done.stderr == (
        "error: ccpe-preference-spans: the predictions cannot be scored: 3 malformed prediction(s) "
        "('CCPE-f0f0c/1', 'CCPE-4b2a1/4', 'CCPE-8e113/3': expected a list of spans {start, end, type}: "
        "whole-number offsets, a type among ENTITY_NAME, ENTITY_PREFERENCE, ENTITY_DESCRIPTION, "
        "ENTITY_OTHER)\n"
    )


def test_spearman_ranks_ints_a_float_cannot_tell_apart() -> None:
    """Ints a float cannot tell apart keep their order, mixed with floats too (NumPy would
    make ``[2**60 + 1, 0.5, 2**60]`` floats, two of them equal), as SciPy ranks ints alone."""
    big = [2**60 + k for k in (3, 1, 2, 5, 4)]
    assert spearman([1, 2, 3, 4, 5], big) == pytest.approx(spearmanr([1, 2, 3, 4, 5], big).statistic)
    assert spearman([1, 2, 3, 4, 5], big) == spearman([1, 2, 3, 4, 5], [3, 1, 2, 5, 4]) == pytest.approx(0.6)
    rng = random.Random(5)
    for _ in range(50):
        x = [rng.choice([1, 2, 2.5, 3, rng.random()]) for _ in range(20)]
        y = [rng.randint(1, 5) for _ in range(20)]
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert spearman([2**60 + 1, 0.5, 2**60], [3, 1, 2]) == pytest.approx(1.0)
    assert spearman([2**60, 2**60], [1, 2]) is None  # constant whatever its size


class _Cycling:
    """A convai2-quality model predicting ``base + 0, 1, 2, 3, 4, 0, ...`` in turn."""

    def __init__(self, base: int) -> None:
        self.base = base

    def predict(self, examples: list[object]) -> list[int]:
        return [self.base + i % 5 for i, _ in enumerate(examples)]


def test_convai2_quality_ranks_huge_predictions_exactly(built: Bank) -> None:
    """Before: predictions ``2**60 + k`` scored ``spearman: None`` (constant as floats)."""
    huge = run("convai2-quality", model=_Cycling(2**60), config="intermediate").metrics
    small = run("convai2-quality", model=_Cycling(0), config="intermediate").metrics
    assert huge["spearman"] is not None and huge["spearman"] == small["spearman"]


def test_a_tie_among_the_used_facts_does_not_count_against_the_first() -> None:
    """Before: ``curiosity-fact-ranking`` took the best rank of each used fact counting the
    other used facts tied with it, so a ranker scoring both used facts top (``[0.9, 0.9,
    0.1]``, used 0 and 1) had MRR 0.5, a rank no order of the facts gives, and a constant one
    of 2 used facts of 3 was ranked 3, not 2; 2 of 2 cases."""
    from convbank.bench import task_named
    from convbank.tasks import Example, Fold, TaskData

    examples = [Example(f"c/{n}", "c", {"query": "q", "candidates": ["a", "b", "c"]}) for n in range(2)]
    data = TaskData(examples, [[0, 1], [0, 2]], [Fold("test", (), (0, 1))])
    scores = {"c/0": [0.9, 0.9, 0.1], "c/1": [0.5, 0.5, 0.5]}
    assert task_named("curiosity-fact-ranking").score(data, scores) == {"mrr": 0.75}  # was 0.4167
    from convbank.tasks.metrics import rank_of_first

    assert rank_of_first([0.9, 0.9, 0.1], {0, 1}) == 1
    assert rank_of_first([0.5, 0.5, 0.5], {0, 2}) == 2  # the unused fact tied counts against
    assert rank_of_first([0.2, 0.9, 0.5], {0}) == rank_of([0.2, 0.9, 0.5], 0) == 3
