"""A sixth dataset, defined entirely in one package under tests/plugins (``convbank_tsvdial``:
records, a tab-separated reader, the mapper both ways, a writer, one check, one task, its
sample files) and installed the way any plugin is: a ``*.dist-info`` with a
``convbank.datasets`` entry point on ``sys.path``. Nothing in convbank names it.

The first test runs the command line in fresh processes that know of the plugin only through
their PYTHONPATH; the others use the session's bank (conftest builds it with every dataset)
and check what each layer makes of a dataset that overrides none of the presentation hooks.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from markupsafe import escape

from convbank import catalog, registry
from convbank.cli import cli
from convbank.export import FORMATS, chat_record, export, to_hf
from convbank.query import load
from convbank.stats import stats
from convbank.store import Bank
from convbank.validate import validate
from testsupport import PLUGINS, ROOT
from testsupport import convbank_with_plugins as convbank

SAMPLES = PLUGINS / "convbank_tsvdial" / "samples"
TRAIN = (SAMPLES / "tsvdial_train.tsv").read_text(encoding="utf-8")
TEST = (SAMPLES / "tsvdial_test.tsv").read_text(encoding="utf-8")


def test_the_command_line_in_a_fresh_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    listed = convbank(home, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (entry,) = [d for d in json.loads(listed.stdout) if d["name"] == "tsvdial"]
    assert entry["configs"] == {"default": {"train": 3, "test": 2}} and entry["built"] == []
    assert entry["origin"] == (
        "entry point tsvdial = convbank_tsvdial:TsvDial of group convbank.datasets (package convbank-tsvdial 0.1.0)"
    )

    built = convbank(home, "build", "tsvdial", "--source", str(SAMPLES))
    assert built.returncode == 0, built.stderr
    assert "2 splits built" in built.stderr

    query = convbank(
        home,
        "query",
        "SELECT split, count(*) AS conversations, sum(num_turns) AS turns FROM conversations "
        "WHERE dataset = 'tsvdial' GROUP BY split ORDER BY split",
        "--format",
        "json",
    )
    assert json.loads(query.stdout) == [
        {"split": "test", "conversations": 2, "turns": 7},
        {"split": "train", "conversations": 3, "turns": 12},
    ]

    shown = convbank(home, "show", "tsvdial", "r003")
    assert shown.returncode == 0, shown.stderr
    assert 'Under "Müller" <b>Anna</b>.' in shown.stdout and "intent:inform_name" in shown.stdout
    assert json.loads(convbank(home, "show", "tsvdial", "r003", "--json").stdout)["num_turns"] == 4

    checked = convbank(home, "validate", "tsvdial", "--json")
    assert checked.returncode == 0, checked.stdout
    results = {c["name"]: (c["passed"], c["failed"]) for c in json.loads(checked.stdout)["checks"]}
    assert results["tsvdial.alternation"] == (5, 0) and results["published_counts"] == (2, 0)

    numbers = json.loads(convbank(home, "stats", "tsvdial", "--json").stdout)["tsvdial"]
    assert [(s["split"], s["conversations"], s["turns"]) for s in numbers["splits"]] == [
        ("train", 3, 12),
        ("test", 2, 7),
    ]

    report = convbank(home, "report", "tsvdial", "-o", str(tmp_path / "report.html"))
    assert report.returncode == 0, report.stderr
    assert "tsvdial: Restaurant Booking Dialogues" in (tmp_path / "report.html").read_text(encoding="utf-8")

    exported = convbank(home, "export", "tsvdial", "--format", "source", "-o", str(tmp_path / "source"))
    assert exported.returncode == 0, exported.stderr
    for name in ("tsvdial_train.tsv", "tsvdial_test.tsv"):
        assert (tmp_path / "source" / name).read_bytes() == (SAMPLES / name).read_bytes()

    bench = convbank(home, "bench", "tsvdial-intents", "-m", "by-speaker", "--json")
    assert bench.returncode == 0, bench.stderr
    result = json.loads(bench.stdout)
    assert result["task"] == "tsvdial-intents" and result["data"] == "real" and result["test_turns"] == 7
    # by speaker: customers' most frequent training intent is "greet" (2, first seen), the
    # agent's "ask_time" (all once, first seen); of 7 guesses on 9 gold intents, one is right
    assert result["metrics"] == {
        "micro_f1": 0.125,
        "precision": pytest.approx(1 / 7),
        "recall": pytest.approx(1 / 9),
    }


# ---------------------------------------------------------------------- each layer, in-process
@pytest.fixture
def corpus(built: Bank) -> Any:
    with load("tsvdial", bank=built) as opened:
        yield opened


def test_the_mapping_is_lossless_and_typed(corpus: Any) -> None:
    conv = corpus["r003"]
    assert [p.participant_id for p in conv.participants] == ["customer", "agent"]
    assert [(a.turn_index, a.label) for a in conv.annotations] == [
        (0, "greet"),
        (0, "cancel_booking"),
        (1, "ask_name"),
        (2, "inform_name"),
        (3, "confirm_cancel"),
        (3, "bye"),
    ]
    raw = corpus.to_arrow("raw")
    assert raw.column_names[:5] == ["dataset", "config", "split", "conversation_id", "source_index"]
    assert raw.schema.field("turns").type.value_type.names == ["turn", "speaker", "text", "intents"]
    assert corpus.dataset.from_conversation(conv).turns[0].intents == "greet,cancel_booking"


def test_every_export_format(corpus: Any, tmp_path: Path) -> None:
    for fmt in FORMATS:
        assert export(corpus, fmt, tmp_path / fmt), fmt
    # chat: the default side is the last participant listed, with the default system message
    (first, *_) = (tmp_path / "chat" / "tsvdial_default_train.chat.jsonl").read_text().splitlines()
    record = json.loads(first)
    assert record["metadata"] == {
        "dataset": "tsvdial",
        "config": "default",
        "split": "train",
        "conversation_id": "r001",
        "as": "agent",
        "role": "agent",
        "outcome": {},
    }
    assert record["messages"][:3] == [
        {"role": "system", "content": "You take part in an online conversation. Your persona is not known."},
        {"role": "user", "content": "Hi! Could I book a table for two tonight?"},
        {"role": "assistant", "content": "Of course. What time would suit you?"},
    ]
    assert chat_record(corpus["r001"], "customer")["messages"][1]["role"] == "assistant"
    parlai = (tmp_path / "parlai" / "tsvdial_default_test.parlai.txt").read_text().splitlines()
    # the agent speaks once in t001 (what follows its last turn is left out), twice in t002
    assert parlai == [
        "text:Hi, is there parking near the restaurant?\tlabels:Yes, a public car park is two minutes "
        "away.\tid:tsvdial/t001\tepisode_done:True",
        "text:Can I book a table for six on Sunday at noon?\tlabels:Sorry, Sunday noon is full. Would 2pm "
        "work?\tid:tsvdial/t002",
        "text:2pm is fine.\tlabels:Booked for six at 2pm on Sunday.\tid:tsvdial/t002\tepisode_done:True",
    ]
    # ConvoKit: speakers per conversation (the default), utterances with their annotations
    kit = tmp_path / "convokit" / "tsvdial_convokit"
    speakers = json.loads((kit / "speakers.json").read_text())
    assert sorted(speakers)[:2] == ["r001/agent", "r001/customer"]
    first_utterance = json.loads((kit / "utterances.jsonl").read_text().splitlines()[0])
    assert first_utterance["meta"]["annotations"] == [
        {"layer": "intent", "label": "greet"},
        {"layer": "intent", "label": "request_booking"},
    ]
    # tables
    assert (
        pq.read_metadata(tmp_path / "parquet" / "tsvdial_annotations.parquet").num_rows == 17 + 9
    )  # intents
    with (tmp_path / "csv" / "tsvdial_default_test.turns.csv").open(encoding="utf-8", newline="") as f:
        assert len(list(csv.reader(f))) == 1 + 7
    assert (
        json.loads((tmp_path / "croissant" / "tsvdial_croissant" / "croissant.json").read_text())["license"]
        == "CC0-1.0"
    )
    # source: byte for byte
    assert (tmp_path / "source" / "tsvdial_train.tsv").read_text(encoding="utf-8") == TRAIN
    assert (tmp_path / "source" / "tsvdial_test.tsv").read_text(encoding="utf-8") == TEST


def test_hugging_face_features_come_from_the_raw_records(corpus: Any, tmp_path: Path) -> None:
    import datasets

    dd = to_hf(corpus)
    assert list(dd) == ["train", "test"]
    assert list(dd["test"].features) == ["dialogue", "turns"]
    assert dd["test"][1]["turns"][1] == {
        "turn": 1,
        "speaker": "agent",
        "text": "Sorry, Sunday noon is full. Would 2pm work?",
        "intents": "deny_booking,offer_time",
    }
    export(corpus, "hf", tmp_path)
    assert datasets.load_from_disk(str(tmp_path / "tsvdial" / "default"))["train"].num_rows == 3


def test_validate_runs_the_generic_checks_and_the_plugins(built: Bank) -> None:
    report = validate(["tsvdial"], bank=built)
    assert report.ok and not report.findings
    names = [c.name for c in report.checks]
    assert names[:2] == ["published_counts", "unique_ids"] and names[-1] == "tsvdial.alternation"
    assert report.result("tsvdial", "speakers").passed == 5


def test_stats_and_report(built: Bank) -> None:
    numbers = stats(["tsvdial"], bank=built)["tsvdial"]
    train = numbers["splits"][0]
    assert train["labels"]["intent"]["thank"] == 2 and train["participants"] == 6
    assert train["metadata"] == {} and numbers["crosstabs"] == []
    assert sum(numbers["turn_words"].values()) == 19


def test_the_viewer(built: Bank) -> None:
    from starlette.testclient import TestClient

    from convbank.web import create_app

    client = TestClient(create_app(built), base_url="http://127.0.0.1")
    assert 'href="/datasets/tsvdial"' in client.get("/").text
    page = client.get("/datasets/tsvdial", params={"label": "intent:thank"}).text
    assert "3 conversations" in page and "intent: thank (3)" in page
    conv = client.get("/datasets/tsvdial/conversations/r003")
    assert conv.status_code == 200
    text = conv.text
    assert str(escape('Under "Müller" <b>Anna</b>.')) in text and "<b>Anna</b>" not in text
    assert '<span class="tag " data-layer="intent">inform_name</span>' in text
    assert 'href="/datasets/tsvdial/conversations/r002"' in text  # previous
    assert client.get("/datasets/tsvdial/conversations/r003?format=json").json()["num_turns"] == 4
    sql = client.get(
        "/sql", params={"q": "SELECT split, count(*) AS n FROM tsvdial_raw GROUP BY split ORDER BY split"}
    ).text
    assert "<tr><td>test</td><td>2</td></tr><tr><td>train</td><td>3</td></tr>" in sql


def test_nothing_else_names_it() -> None:
    """Its knowledge is in its package: the catalog, checks and tasks found it by its entry
    point, and no file of convbank mentions it (tests/project/test_code_shape.py checks every module)."""
    src = ROOT / "src" / "convbank"
    assert not [p for p in src.rglob("*") if p.is_file() and b"tsvdial" in p.read_bytes()]
    assert registry.datasets.origin("tsvdial").startswith("entry point tsvdial = convbank_tsvdial:TsvDial")
    assert catalog.get("tsvdial").samples == SAMPLES
    assert CliRunner().invoke(cli, ["info", "tsvdial"]).exit_code == 0


def test_the_default_hugging_face_features_refuse_maps_in_one_line() -> None:
    """CaSiNo's raw records hold maps (its key orders vary): the default cannot type them,
    and says which hooks to define (CaSiNo defines them)."""
    from convbank.datasets import Presentation
    from convbank.errors import ExportError

    with pytest.raises(
        ExportError, match=r"^casino has no Hugging Face features: .* must define hf_features\(\)"
    ):
        Presentation(catalog.get("casino")).hf_features()
