"""Every JSON-lines file convbank writes holds U+2028, U+2029 and U+0085 as ``\\u`` escapes,
never raw: JSON allows them raw in a string, but Python's ``str.splitlines()`` (and some
JavaScript tools) end a line there, so a record read that way split into pieces that are not
JSON. The text reads back exactly. Before: the ``jsonl``, ``chat``, ``sharegpt`` and
``convokit`` exports, an imported dataset's ``source`` export, ``write_predictions`` and an import's rejects file wrote them raw (a
record of 3 such characters read as 4 lines, none of them JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank
from convbank.bench.files import read_predictions, write_predictions
from convbank.export import export

ODD = "a\u2028b\u2029c\x85d"
"""A text holding the three characters that end a line for ``str.splitlines()``."""
RAW = ("\u2028".encode(), "\u2029".encode(), "\x85".encode())


def _lines_are_records(path: Path, records: int) -> None:
    data = path.read_bytes()
    assert [c for c in RAW if c in data] == []
    lines = data.decode("utf-8").splitlines()
    assert len(lines) == records
    assert all(json.loads(line) for line in lines)


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        ("jsonl", "odd_default_train.jsonl"),
        ("chat", "odd_default_train.chat.jsonl"),
        ("sharegpt", "odd_default_train.sharegpt.jsonl"),
        ("convokit", "utterances.jsonl"),
        ("source", "default_train.jsonl"),
    ],
)
def test_an_export_escapes_what_ends_a_line(tmp_path: Path, fmt: str, name: str) -> None:
    source = tmp_path / "odd.jsonl"
    record = {
        "id": ODD,
        "messages": [{"role": "user", "content": ODD}, {"role": "assistant", "content": "ok"}],
    }
    source.write_text(json.dumps(record) + "\n", encoding="ascii")
    convbank.import_conversations(source, name="odd")
    paths = export(convbank.load("odd"), fmt, tmp_path / "out")
    (path,) = [p for p in paths if p.name == name] or [q for p in paths if p.is_dir() for q in p.rglob(name)]
    _lines_are_records(path, 2 if fmt == "convokit" else 1)
    again = {"convokit": "convokit", "source": "jsonl"}.get(fmt, fmt)
    convbank.import_conversations(path.parent if fmt == "convokit" else path, name="back", format=again)
    (conv,) = convbank.load("back")
    assert [t.text for t in conv.turns] == [ODD, "ok"]


def test_predictions_and_rejects_escape_what_ends_a_line(tmp_path: Path) -> None:
    path = write_predictions(tmp_path / "p.jsonl", {ODD: ODD, "x": [ODD]})
    _lines_are_records(path, 2)
    assert read_predictions(path) == {ODD: ODD, "x": [ODD]}
    source = tmp_path / "bad.jsonl"
    source.write_text(
        json.dumps({"nope": ODD}) + "\n" + json.dumps({"messages": []}) + "\n", encoding="ascii"
    )
    convbank.import_conversations(source, name="half", format="chat", skip_bad=tmp_path / "rejects.jsonl")
    _lines_are_records(tmp_path / "rejects.jsonl", 1)
    rejected = json.loads((tmp_path / "rejects.jsonl").read_text(encoding="utf-8"))
    assert json.loads(rejected["record"]) == {"nope": ODD}
