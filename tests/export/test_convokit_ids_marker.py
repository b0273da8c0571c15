"""convbank knows its own ConvoKit export by a marker it writes beside each conversation's
meta (``convbank_ids``: ``chain`` or ``kept``), never by how its ids look: a foreign corpus
whose utterance ids happen to be ``{conversation}/{position}`` and whose timestamps are the
positions, imported and exported, reads back with its ids and timestamps kept. Before: read
back as convbank's chain, the turns' meta ``utterance_id``, ``timestamp`` and ``reply_to``
lost (2 of 2 turns). An older export, unmarked, is still read as a chain."""

from __future__ import annotations

import json
from pathlib import Path

import convbank
from convbank.export import export
from convbank.export._format import ReadOptions
from convbank.export._registry import formats
from convbank.model import Conversation

KEPT = [{"utterance_id": "c/0", "timestamp": 0}, {"utterance_id": "c/1", "timestamp": 1, "reply_to": 0}]


def _read(folder: Path) -> Conversation:
    reader = formats.get("convokit").reader
    assert reader is not None
    (conv,) = reader([folder], ReadOptions(dataset="kit"))
    assert isinstance(conv, Conversation), conv
    return conv


def _foreign(folder: Path) -> Path:
    folder.mkdir()
    lines = [
        {
            "id": "c/0",
            "conversation_id": "c",
            "speaker": "ana",
            "text": "x",
            "reply_to": None,
            "timestamp": 0,
        },
        {
            "id": "c/1",
            "conversation_id": "c",
            "speaker": "ben",
            "text": "y",
            "reply_to": "c/0",
            "timestamp": 1,
        },
    ]
    (folder / "utterances.jsonl").write_text("".join(json.dumps(u) + "\n" for u in lines), encoding="utf-8")
    return folder


def test_a_foreign_corpus_with_chain_like_ids_keeps_them_through_an_export(tmp_path: Path) -> None:
    assert [t.meta for t in _read(_foreign(tmp_path / "f")).turns] == KEPT
    convbank.import_conversations(tmp_path / "f", name="kit", format="convokit")
    (out,) = export(convbank.load("kit"), "convokit", tmp_path / "out")
    entries = json.loads((out / "conversations.json").read_text(encoding="utf-8"))
    assert entries["c"]["convbank_ids"] == "kept"
    assert [t.meta for t in _read(out).turns] == KEPT


def test_an_older_unmarked_export_is_read_as_a_chain(tmp_path: Path) -> None:
    chat = tmp_path / "chat.jsonl"
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    chat.write_text(json.dumps({"id": "c", "messages": messages}) + "\n", encoding="utf-8")
    convbank.import_conversations(chat, name="kit")
    (out,) = export(convbank.load("kit"), "convokit", tmp_path / "out")
    marked = _read(out)
    entries = json.loads((out / "conversations.json").read_text(encoding="utf-8"))
    assert entries["c"].pop("convbank_ids") == "chain"
    (out / "conversations.json").write_text(json.dumps(entries), encoding="utf-8")
    older = _read(out)
    assert older == marked and [t.meta for t in older.turns] == [{}, {}]
