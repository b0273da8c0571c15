"""Statistics and the HTML report, on the real data and the fixtures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from convbank.charts import bar_chart, histogram, integer_bins
from convbank.cli import cli
from convbank.errors import NotBuiltError, UnknownDatasetError
from convbank.report import dataset_charts, render_report
from convbank.stats import stats
from convbank.store import Bank


@pytest.fixture(scope="module")
def numbers(built_home: Path) -> dict[str, Any]:
    return stats(bank=Bank(built_home / "bank"))


def _split(numbers: dict[str, Any], dataset: str, config: str, split: str) -> dict[str, Any]:
    return next(s for s in numbers[dataset]["splits"] if (s["config"], s["split"]) == (config, split))


def test_casino_sizes_labels_and_outcomes(numbers: dict[str, Any]) -> None:
    assert [(s["split"], s["conversations"]) for s in numbers["casino"]["splits"]] == [
        ("train", 900),
        ("valid", 30),
        ("test", 100),
    ]
    train = _split(numbers, "casino", "default", "train")
    assert {k: train[k] for k in ("participants", "turns", "actions", "words")} == {
        "participants": 1800,
        "turns": 12501,
        "actions": 2089,
        "words": 202311,
    }
    assert train["turns_per_conversation"] == {"mean": 13.89, "median": 13.0, "max": 39}
    assert train["metadata"]["points_scored"]["mean"] == 18.59
    assert train["metadata"]["points_scored"]["median"] == 19.0
    assert train["metadata"]["satisfaction"]["counts"] == {
        "Extremely dissatisfied": 47,
        "Slightly dissatisfied": 160,
        "Undecided": 83,
        "Slightly satisfied": 692,
        "Extremely satisfied": 818,
    }
    strategy = [s["labels"]["strategy"] for s in numbers["casino"]["splits"]]
    assert sum(sum(x.values()) for x in strategy) == 5858
    assert sum(x.get("uv-part", 0) for x in strategy) == 131
    assert list(strategy[0])[:3] == ["non-strategic", "small-talk", "self-need"]
    moves = [s["metadata"]["deal_moves"]["counts"] for s in numbers["casino"]["splits"]]
    assert sum(m.get("Walk-Away", 0) for m in moves) == 25
    assert sum(m["Submit-Deal"] for m in moves) == 1181


def test_casino_crosstab_answers_strategy_against_outcomes(numbers: dict[str, Any]) -> None:
    (table,) = numbers["casino"]["crosstabs"]
    rows = {r[0]: dict(zip(table["columns"], r, strict=True)) for r in table["rows"]}
    assert len(rows) == 10
    for row in rows.values():
        assert row["users"] + row["non-users"] == 792  # 396 annotated dialogues, 2 negotiators each
    assert rows["self-need"]["users"] == 587
    assert rows["small-talk"]["satisfaction (users)"] == pytest.approx(4.247, abs=1e-3)
    assert rows["small-talk"]["satisfaction (others)"] == pytest.approx(3.951, abs=1e-3)
    assert rows["uv-part"]["liked (users)"] == pytest.approx(3.651, abs=1e-3)


def test_convai2_ratings(numbers: dict[str, Any]) -> None:
    volunteers = _split(numbers, "convai2", "volunteers", "train")["metadata"]
    assert volunteers["eval_score"]["counts"] == {"1": 208, "2": 116, "3": 120, "4": 70, "5": 79, "null": 518}
    assert volunteers["profile_match"]["counts"] == {"0": 183, "1": 300, "": 628}
    assert volunteers["message_thumbs"]["counts"] == {"0": 440, "1": 935, "null": 5584}
    by_match, by_bot = numbers["convai2"]["crosstabs"]
    assert ["volunteers", "1", 300, 2.63, 16.48] in by_match["rows"]
    assert sum(r[1] for r in by_bot["rows"]) == 791  # rated dialogues, both rounds


def test_fixture_metadata(numbers: dict[str, Any]) -> None:
    happy = _split(numbers, "pec", "happy", "train")
    assert happy["metadata"]["persona_sentences"] == {
        "counts": {"0": 1, "1": 3, "2": 1, "3": 1},
        "mean": 1.3333,
        "median": 1.0,
    }
    cur = _split(numbers, "curiosity", "default", "train")
    assert cur["metadata"]["liked"]["counts"] == {"false": 3, "true": 1}
    social = {k: n for k, n in cur["labels"]["dialog_act"].items() if k.startswith("social")}
    assert social == {"social_greeting": 2, "social_thanking": 1, "social_goodbye": 1}
    ccpe = _split(numbers, "ccpe", "default", "train")
    assert ccpe["labels"]["preference"] == {
        "ENTITY_NAME": 5,
        "ENTITY_PREFERENCE": 5,
        "ENTITY_DESCRIPTION": 2,
        "ENTITY_OTHER": 1,
    }
    assert numbers["ccpe"]["turn_words"] == {"0-4": 4, "5-9": 9}


def test_stats_errors(built: Bank) -> None:
    with pytest.raises(UnknownDatasetError):
        stats(["nope"], bank=built)


def test_stats_of_an_empty_bank(tmp_path: Path) -> None:
    with pytest.raises(NotBuiltError, match="run `convbank build casino` first"):
        stats(["casino"], bank=Bank(tmp_path))


def test_stats_cli(built: Bank) -> None:
    result = CliRunner().invoke(cli, ["stats", "convai2", "--json"])
    assert result.exit_code == 0
    assert list(json.loads(result.output)) == ["convai2"]
    text = CliRunner().invoke(cli, ["stats", "casino"])
    assert text.exit_code == 0
    assert "casino/default/valid points_scored (mean 19.1333, median 19)" in text.output
    assert "Strategy use against outcomes" in text.output


def test_charts_escape_labels() -> None:
    svg = str(bar_chart({"<script>alert(1)</script>": 3, "b&b": 1}, "t<i>"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "b&amp;b" in svg
    assert "<title>t&lt;i&gt;</title>" in svg
    assert "(75.0%)" in svg
    assert str(histogram({"1": 2, "2": 0}, "h")).count("<rect") == 2


def test_bar_labels_fit_and_empty_reads_empty() -> None:
    svg = str(bar_chart({"0": 60, "1": 105, "": 126}, "profile_match"))
    (x,) = {int(v) for v in re.findall(r'<text x="(\d+)" y="\d+" text-anchor="end"', svg)}
    assert ">(empty)</text>" in svg and x >= len("(empty)") * 7  # the label is not clipped


def test_histogram_has_readable_axes() -> None:
    counts = {f"{i * 5}-{i * 5 + 4}": c for i, c in enumerate([927, 2057, 2132, 1984, 1578, 1100, 785, 468])}
    svg = str(histogram(counts, "words", x_label="words per message"))
    assert [t for t in re.findall(r'class="tick">([^<]+)</text>', svg) if "-" not in t] == [
        "0",
        "1,000",
        "2,000",
        "3,000",
    ]
    assert ">words per message</text>" in svg and ">2,132</text>" in svg  # axis title, counts
    many = {str(i): i for i in range(100)}
    ticks = [t for t in re.findall(r'class="tick">([^<]+)</text>', str(histogram(many, "m")))]
    assert "0" in ticks and len(ticks) < 40  # bin labels thinned so they do not overlap


def test_numeric_distributions_keep_their_gaps(built: Bank) -> None:
    charts = dataset_charts(stats(["casino"])["casino"])
    points = next(chart for name, chart, _ in charts["meta"] if name == "points_scored")
    bins = re.findall(r"<title>(\d+): ([\d,]+)</title>", str(points))
    assert bins[0][0] == "5"
    values = [int(b) for b, _ in bins]
    assert values == list(range(values[0], values[-1] + 1))  # one bar per integer
    assert ("8", "0") in bins and ("30", "0") in bins  # nobody scored 8 or 30: gaps show
    assert integer_bins({"1": 2, "x": 1}) is None


def test_report_is_self_contained(built: Bank, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", "casino", "convai2", "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<script" not in html and "<link" not in html and " src=" not in html
    assert html.count('<svg class="chart"') >= 10
    assert 'id="casino"' in html and 'id="convai2"' in html
    assert "Strategy use against outcomes (CaSiNo, annotated dialogues)" in html
    assert "<code>casino.points</code>" in html
    assert "rated 1 although the bot never spoke" in html
    assert "@inproceedings{chawla2021casino" in html


def test_report_without_validation(built: Bank) -> None:
    html = render_report(["ccpe"], validate=False)
    assert "Validation" not in html and "ENTITY_PREFERENCE" in html
