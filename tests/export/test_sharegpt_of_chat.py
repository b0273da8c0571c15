"""``sharegpt`` of a corpus imported from chat keeps what chat keeps: each message's other
keys (``weight``, ``name``) beside its ``from`` and ``value``, and the record's own keys
(``id``, ``metadata``). Before: the keys dropped and the record's ``metadata`` replaced by
convbank's (2 of 2 records), though the guide says sharegpt loses what chat loses, which of a
chat corpus is nothing."""

from __future__ import annotations

import json
from pathlib import Path

import convbank
from convbank.export import export

RECORDS = [
    {
        "id": "r1",
        "messages": [
            {"role": "user", "content": "hi", "name": "ana"},
            {"role": "assistant", "content": "yo", "weight": 0},
        ],
        "metadata": {"source": "x"},
    },
    {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "q"}], "tools": []},
]


def test_a_chat_corpus_keeps_its_keys_in_sharegpt(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    (out,) = export(convbank.load("chats"), "sharegpt", tmp_path / "out")
    got = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert got == [
        {
            "conversations": [
                {"from": "human", "value": "hi", "name": "ana"},
                {"from": "gpt", "value": "yo", "weight": 0},
            ],
            "id": "r1",
            "metadata": {"source": "x"},
        },
        {
            "conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "q"}],
            "tools": [],
        },
    ]
    convbank.import_conversations(out, name="back")
    assert [[t.meta for t in c.turns] for c in convbank.load("back")] == [
        [{"message": {"name": "ana"}}, {"message": {"weight": 0}}],
        [{}, {}],
    ]
