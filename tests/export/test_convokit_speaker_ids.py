"""A ConvoKit export's speakers scoped to their conversation never share an id: the
conversation's id has its ``%`` and ``/`` written ``%25`` and ``%2F`` before the ``/`` that
ends it. Before: ``{conversation_id}/{participant_id}`` made conversation ``a/b``'s ``c`` and
conversation ``a``'s ``b/c`` one speaker ``a/b/c``, the second's meta over the first's, so
``a/b`` read back with its user ``c`` turned into the assistant ``b/c`` (1 of 1 pairs)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

import convbank
from convbank.export import export
from convbank.model import Conversation, Participant, Turn


def _conversation(cid: str, speaker: str, role: str, silent: str) -> Conversation:
    return Conversation(
        dataset="x",
        config="default",
        split="train",
        conversation_id=cid,
        source_index=0,
        participants=[
            Participant(participant_id=speaker, role=role),
            Participant(participant_id=silent, role="x"),
        ],
        turns=[Turn(turn_index=0, participant_id=speaker, text=f"said in {cid}")],
    )


def test_scoped_speakers_of_ids_holding_a_slash_stay_apart(tmp_path: Path) -> None:
    convs = [
        _conversation("a/b", "c", "user", "quiet"),
        _conversation("a", "b/c", "assistant", "b/quiet"),
        _conversation("a%2Fb", "c", "system", "hush"),
    ]
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(c) + b"\n" for c in convs))
    convbank.import_conversations(path, name="scoped", format="jsonl")
    (out,) = export(convbank.load("scoped"), "convokit", tmp_path / "out")
    speakers = json.loads((out / "speakers.json").read_text(encoding="utf-8"))
    assert sorted(speakers) == ["a%252Fb/c", "a%252Fb/hush", "a%2Fb/c", "a%2Fb/quiet", "a/b/c", "a/b/quiet"]
    convbank.import_conversations(out, name="scoped_back")
    back = {c.conversation_id: c for c in convbank.load("scoped_back")}
    for conv in convs:
        got = back[conv.conversation_id]
        assert [(p.participant_id, p.role) for p in got.participants] == [
            (p.participant_id, p.role) for p in conv.participants
        ]
        assert [(t.participant_id, t.text) for t in got.turns] == [
            (t.participant_id, t.text) for t in conv.turns
        ]


def test_a_kept_utterance_id_that_is_another_conversations_chain_id_is_not_kept(tmp_path: Path) -> None:
    """Before: conversation ``p`` kept its utterance id ``q/0``, conversation ``q``'s chain wrote
    ``q/0`` too: two utterances of one id, which ConvoKit keeps one of (1 of 1 pairs, either
    order)."""
    kept = _conversation("p", "u", "user", "quiet")
    kept.turns[0].meta = {"utterance_id": "q/0"}
    convs = [kept, _conversation("q", "u", "user", "quiet")]
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(msgspec.json.encode(c) + b"\n" for c in convs))
    convbank.import_conversations(path, name="chains", format="jsonl")
    (out,) = export(convbank.load("chains"), "convokit", tmp_path / "out")
    lines = (out / "utterances.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["p/0", "q/0"]
    convbank.import_conversations(out, name="chains_back")
    back = [(c.conversation_id, [(t.text, t.meta) for t in c.turns]) for c in convbank.load("chains_back")]
    assert back == [("p", [("said in p", {"utterance_id": "q/0"})]), ("q", [("said in q", {})])]
