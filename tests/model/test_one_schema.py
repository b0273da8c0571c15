"""One schema: the unified tables are derived from the model's Structs (a field added to a copy
of the model is built, read, queried, exported and served with no other edit), the stored
schema stays the one existing banks hold, and a bank of another schema is refused in one line."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from convbank import catalog
from convbank.build import build
from convbank.cli import cli
from convbank.errors import SchemaVersionError
from convbank.export import export
from convbank.fetch import Fetcher
from convbank.model import Conversation, Part, Turn, schema
from convbank.model.schema import JSON_FIELD, UnifiedSchema, table_schemas
from convbank.query import load, sql
from convbank.store import Bank
from convbank.store.integrity import read_footer
from convbank.web import create_app
from testsupport import PLUGINS

SAMPLES = PLUGINS / "convbank_tsvdial" / "samples"


def _tsvdial_bank(home: Path) -> Bank:
    bank = Bank(home / "bank")
    assert build(["tsvdial"], fetcher=Fetcher(sources=[SAMPLES], progress=False), bank=bank).ok
    return bank


def test_the_derived_schemas_are_those_existing_banks_hold() -> None:
    """Columns, order, types, nullability and field metadata of schema 1.0, as written by
    hand before they were derived: a bank built before reads as it did."""

    def json_text() -> pa.Field:
        return pa.field("meta", pa.string(), nullable=False, metadata=JSON_FIELD)

    def text(name: str) -> pa.Field:
        return pa.field(name, pa.string(), nullable=False)

    def int32(name: str, nullable: bool = False) -> pa.Field:
        return pa.field(name, pa.int32(), nullable=nullable)

    cid = text("conversation_id")
    expected = {
        "conversations": [cid, int32("num_turns"), pa.field("source_index", pa.int64(), False), json_text()],
        "participants": [
            cid,
            text("participant_id"),
            text("role"),
            pa.field("persona", pa.list_(pa.string()), nullable=False),
            json_text(),
        ],
        "turns": [cid, int32("turn_index"), text("participant_id"), text("text"), text("kind"), json_text()],
        "annotations": [
            cid,
            int32("turn_index"),
            text("layer"),
            text("label"),
            int32("start_char", True),
            int32("end_char", True),
            json_text(),
        ],
    }
    derived = table_schemas()
    assert list(derived) == list(expected) == list(schema.UNIFIED_TABLES)
    for name, fields in expected.items():
        assert derived[name].equals(pa.schema(fields), check_metadata=True), name


class StampedTurn(Turn):
    """A turn with a time: the field a newcomer adds."""

    timestamp: float | None = None


class StampedConversation(Conversation):
    """A conversation whose turns are stamped."""

    turns: list[StampedTurn] = msgspec.field(default_factory=list)


def _stamp(turn_index: int) -> float | None:
    return None if turn_index == 0 else 100.0 + turn_index / 2


@pytest.fixture
def stamped_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model with ``Turn.timestamp``, and tsvdial's mapper filling it: the only two edits."""
    monkeypatch.setattr(schema, "SCHEMA", UnifiedSchema(StampedConversation))
    ds = catalog.get("tsvdial")
    plain = type(ds).to_conversation

    def to_conversation(self: Any, record: Any, part: Part, index: int) -> Conversation:
        conv = msgspec.to_builtins(plain(self, record, part, index))
        for t in conv["turns"]:
            t["timestamp"] = _stamp(t["turn_index"])
        return msgspec.convert(conv, StampedConversation)

    monkeypatch.setattr(type(ds), "to_conversation", to_conversation)


@pytest.mark.usefixtures("stamped_model")
def test_a_field_added_to_the_model_is_built_read_exported_and_served(tmp_path: Path) -> None:
    bank = _tsvdial_bank(tmp_path / "home")
    turns = schema.table_schemas()["turns"]
    assert turns.names[-1] == "timestamp" and turns.field("timestamp").type == pa.float64()
    assert turns.field("timestamp").nullable

    with load("tsvdial", bank=bank) as corpus:
        conv = corpus["r001"]
        assert isinstance(conv.turns[1], StampedTurn)
        assert [t.timestamp for t in conv.turns] == [_stamp(t.turn_index) for t in conv.turns]
        assert conv.turns[1].timestamp == 100.5
        assert [t.timestamp for c in corpus for t in c.turns][:3] == [None, 100.5, 101.0]
        stamps = sql(
            "SELECT timestamp FROM turns WHERE conversation_id = 'r001' ORDER BY turn_index", bank=bank
        )
        assert stamps.column(0).to_pylist()[:3] == [None, 100.5, 101.0]

        out = tmp_path / "out"
        out.mkdir()
        (jsonl, *_) = export(corpus, "jsonl", out / "jsonl")
        first = json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0])
        assert [t["timestamp"] for t in first["turns"]][:2] == [None, 100.5]
        (table_csv, *_) = export(corpus, "csv", out / "csv")
        rows = list(csv.DictReader(table_csv.open(encoding="utf-8", newline="")))
        assert list(rows[0])[-3:] == ["timestamp", "text", "meta"]
        assert [r["timestamp"] for r in rows[:2]] == ["", "100.5"]
        parquet = {p.name: p for p in export(corpus, "parquet", out / "parquet")}
        stored = pq.read_table(parquet["tsvdial_turns.parquet"])
        assert stored.column("timestamp").to_pylist()[:2] == [None, 100.5]
        (convokit,) = export(corpus, "convokit", out / "convokit")
        utterance = json.loads((convokit / "utterances.jsonl").read_text(encoding="utf-8").splitlines()[1])
        assert utterance["meta"]["timestamp"] == 100.5

        from convbank.torch import turn_items

        assert turn_items(conv)[1]["timestamp"] == 100.5
        assert list(turn_items(conv)[1])[-3:] == ["kind", "timestamp", "labels"]

    client = TestClient(create_app(bank), base_url="http://127.0.0.1")
    served = client.get("/datasets/tsvdial/conversations/r001", params={"format": "json"})
    assert served.status_code == 200
    assert [t["timestamp"] for t in served.json()["turns"]][:2] == [None, 100.5]
    page = client.get("/datasets/tsvdial/conversations/r001")
    assert page.status_code == 200 and "&#34;timestamp&#34;: 100.5" in page.text


def _old_manifest(bank: Bank, where: str) -> str:
    data = json.loads(bank.manifest_path.read_text(encoding="utf-8"))
    entry = data["datasets"]["tsvdial"]
    if where == "dataset":  # a dataset built by another convbank
        entry["schema_version"], entry["built_by"] = "0.9", "0.0.9"
    else:  # a bank written before datasets recorded theirs: the manifest's stands for all
        entry["schema_version"] = entry["built_by"] = None
        data["schema_version"] = "0.9"
    bank.manifest_path.write_text(json.dumps(data), encoding="utf-8")
    by = "convbank 0.0.9" if where == "dataset" else "a convbank that did not record its version"
    return (
        f"{bank.manifest_path}: tsvdial was built by {by} with schema 0.9, this convbank reads "
        "schema 1.0; run `convbank build tsvdial` to rebuild"
    )


def _column_dropped(bank: Bank) -> str:
    """The train turns file rewritten without ``kind`` (its metadata kept), and the manifest
    told of its new bytes, as a convbank writing another schema would have left it."""
    data = json.loads(bank.manifest_path.read_text(encoding="utf-8"))
    entry = data["datasets"]["tsvdial"]["configs"]["default"]["files"]["turns"]["train"]
    path = bank.root / entry["path"]
    table = pq.read_table(path)
    path.unlink()
    pq.write_table(table.drop_columns(["kind"]), path)
    import hashlib

    entry.update(
        bytes=path.stat().st_size,
        sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        footer=read_footer(path)[1],
    )
    bank.manifest_path.write_text(json.dumps(data), encoding="utf-8")
    return (
        f"{path}: tsvdial was built by convbank 0.1.0 with schema 1.0 (its turns table has no column "
        "'kind'), this convbank reads schema 1.0; run `convbank build tsvdial` to rebuild"
    )


@pytest.mark.parametrize("change", ["dataset", "manifest", "column"])
def test_a_bank_of_another_schema_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    monkeypatch.setenv("CONVBANK_HOME", str(tmp_path / "home"))
    bank = _tsvdial_bank(tmp_path / "home")
    message = _column_dropped(bank) if change == "column" else _old_manifest(bank, change)

    with pytest.raises(SchemaVersionError) as raised, load("tsvdial", bank=bank) as corpus:
        list(corpus)
    assert str(raised.value) == message
    # one conversation is served from its record file: the tables it was made from are checked
    with pytest.raises(SchemaVersionError) as raised, load("tsvdial", bank=bank) as corpus:
        corpus["r001"]
    assert str(raised.value) == message
    assert raised.value.exit_code == 4 and raised.value.dataset == "tsvdial"
    for args in (
        ["show", "tsvdial", "r001"],
        ["query", "SELECT count(*) FROM turns"],
        ["stats", "tsvdial"],
        ["export", "tsvdial", "--format", "jsonl", "-o", str(tmp_path / "out")],
    ):
        result = CliRunner().invoke(cli, args)
        assert (result.exit_code, result.output) == (4, f"error: {message}\n"), args

    assert build(["tsvdial"], fetcher=Fetcher(sources=[SAMPLES], progress=False), bank=bank).ok
    with load("tsvdial", bank=bank) as corpus:
        assert len(list(corpus)) == 5
    assert bank.manifest().datasets["tsvdial"].schema_version == schema.SCHEMA_VERSION
