"""A ConvoKit corpus imported and exported back keeps its own utterance ids, reply tree,
timestamps and speaker ids (each turn keeps them in its meta: ``utterance_id``, ``reply_to``,
``timestamp``), and importing that export and exporting it again writes the same bytes.
Before, the export gave every utterance convbank's ``{conversation}/{position}`` id, a chain
of replies with positions as timestamps, and each speaker a ``{conversation}/{speaker}`` id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import convbank
from convbank.export import export

UTTERANCES: list[dict[str, Any]] = [
    {"id": "u1", "conversation_id": "c1", "speaker": "ana", "text": "hi", "reply_to": None, "timestamp": 100, "meta": {"x": 1}},
    {"id": "u2", "conversation_id": "c1", "speaker": "ben", "text": "yo", "reply_to": "u1", "timestamp": 101, "meta": {}},
    {"id": "u3", "conversation_id": "c1", "speaker": "ana", "text": "a branch", "reply_to": "u1", "timestamp": None, "meta": {}},
    {"id": "u4", "conversation_id": "c1", "speaker": "ben", "text": "a new root", "reply_to": None, "timestamp": 90, "meta": {}},
    {"id": "v1", "conversation_id": "c2", "speaker": "ben", "text": "alone", "reply_to": None, "timestamp": 5, "meta": {}},
]  # fmt: skip


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    lines = "".join(json.dumps({**u, "vectors": []}) + "\n" for u in UTTERANCES)
    (folder / "utterances.jsonl").write_text(lines, encoding="utf-8")
    speakers = {"ana": {"meta": {"age": 30}, "vectors": []}, "ben": {"meta": {}, "vectors": []}}
    (folder / "speakers.json").write_text(json.dumps(speakers), encoding="utf-8")
    (folder / "conversations.json").write_text('{"c1": {"meta": {}}, "c2": {"meta": {}}}', encoding="utf-8")
    return folder


def _exported(name: str, out: Path) -> Path:
    (folder,) = export(convbank.load(name), "convokit", out)
    return folder


def _utterances(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in (folder / "utterances.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def test_a_convokit_corpus_exported_back_keeps_its_ids_tree_and_timestamps(tmp_path: Path) -> None:
    convbank.import_conversations(_corpus(tmp_path / "corpus"), name="mine")
    folder = _exported("mine", tmp_path / "out")
    own = ("id", "conversation_id", "speaker", "text", "reply_to", "timestamp")
    got = _utterances(folder)
    assert [{k: u[k] for k in own} for u in got] == [{k: u[k] for k in own} for u in UTTERANCES]
    assert [{k: u["meta"][k] for k in w["meta"]} for u, w in zip(got, UTTERANCES, strict=True)] == [
        w["meta"] for w in UTTERANCES
    ]
    speakers = json.loads((folder / "speakers.json").read_text(encoding="utf-8"))
    assert sorted(speakers) == ["ana", "ben"] and speakers["ana"]["meta"]["age"] == 30

    convbank.import_conversations(folder, name="again")
    again = _exported("again", tmp_path / "again")
    for name in ("utterances.jsonl", "speakers.json"):
        assert (again / name).read_bytes() == (folder / name).read_bytes()
    assert [t.meta for t in convbank.load("again")["c1"].turns] == [
        t.meta for t in convbank.load("mine")["c1"].turns
    ]


def test_convokit_loads_the_export_with_the_corpus_own_ids(tmp_path: Path) -> None:
    convokit = pytest.importorskip("convokit")
    convbank.import_conversations(_corpus(tmp_path / "corpus"), name="mine")
    corpus = convokit.Corpus(filename=str(_exported("mine", tmp_path / "out")))
    assert sorted(corpus.get_utterance_ids()) == ["u1", "u2", "u3", "u4", "v1"]
    assert [corpus.get_utterance(u).reply_to for u in ("u2", "u3", "u4")] == ["u1", "u1", None]
    assert sorted(corpus.get_speaker_ids()) == ["ana", "ben"]


def test_ids_that_repeat_across_conversations_fall_back_to_convbanks(tmp_path: Path) -> None:
    """A corpus whose conversations reuse an utterance id (ConvoKit needs each once) is
    written with convbank's ids for the later conversation, never two utterances of one id."""
    folder = _corpus(tmp_path / "corpus")
    lines = _utterances(folder)
    lines[-1]["id"] = "u1"
    (folder / "utterances.jsonl").write_text("".join(json.dumps(u) + "\n" for u in lines), encoding="utf-8")
    convbank.import_conversations(folder, name="mine")
    ids = [u["id"] for u in _utterances(_exported("mine", tmp_path / "out"))]
    assert ids == ["u1", "u2", "u3", "u4", "c2/0"]
