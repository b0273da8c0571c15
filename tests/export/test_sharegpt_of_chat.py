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


CLASHING = [
    {
        "id": "c1",
        "messages": [
            {"role": "user", "content": "hi", "from": "ann", "value": 3},
            {"role": "assistant", "content": "yo", "convbank_keys": {"from": 1}},
        ],
        "conversations": "C",
    }
]


def test_keys_sharegpt_names_itself_are_kept_under_convbank_keys_and_read_back(tmp_path: Path) -> None:
    """Before: the message's ``from`` and ``value`` were dropped and the record's
    ``conversations`` took the messages' place (the file no longer read as ShareGPT), 3 of 3 keys."""
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in CLASHING), encoding="utf-8")
    convbank.import_conversations(path, name="clash")
    (out,) = export(convbank.load("clash"), "sharegpt", tmp_path / "out")
    assert json.loads(out.read_text(encoding="utf-8")) == {
        "conversations": [
            {"from": "human", "value": "hi", "convbank_keys": {"from": "ann", "value": 3}},
            {"from": "gpt", "value": "yo", "convbank_keys": {"convbank_keys": {"from": 1}}},
        ],
        "id": "c1",
        "convbank_keys": {"conversations": "C"},
    }
    convbank.import_conversations(out, name="clash_back")
    (back,) = convbank.load("clash_back")
    assert [(t.text, t.meta) for t in back.turns] == [
        ("hi", {"message": {"from": "ann", "value": 3}}),
        ("yo", {"message": {"convbank_keys": {"from": 1}}}),
    ]
    assert back.meta == {"id": "c1", "conversations": "C"}
    (again,) = export(convbank.load("clash_back"), "sharegpt", tmp_path / "again")
    assert again.read_bytes() == out.read_bytes()


def test_a_sharegpt_messages_role_or_content_is_kept_in_chat_never_in_their_place(tmp_path: Path) -> None:
    """Before: a ShareGPT message's own ``content`` and ``role`` keys replaced its text and
    role in the chat export (``"hi"`` written as ``"X"``, ``user`` as ``R``), 2 of 2 keys."""
    record = {"conversations": [{"from": "user", "value": "hi", "content": "X", "role": "R"}]}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    convbank.import_conversations(path, name="sg_clash", format="sharegpt")
    (out,) = export(convbank.load("sg_clash"), "chat", tmp_path / "out")
    (message,) = json.loads(out.read_text(encoding="utf-8"))["messages"]
    assert message == {"role": "user", "content": "hi", "convbank_keys": {"content": "X", "role": "R"}}
    convbank.import_conversations(out, name="sg_clash_back")
    (turn,) = next(iter(convbank.load("sg_clash_back"))).turns
    assert (turn.text, turn.meta) == ("hi", {"message": {"content": "X", "role": "R"}})


def test_a_sharegpt_messages_null_value_is_written_back_null(tmp_path: Path) -> None:
    """Before: ``"value": null`` was read as an empty turn and written back as ``""``, the
    record no longer as it was read (1 of 1 messages)."""
    record = {"id": "s", "conversations": [{"from": "human", "value": None}, {"from": "gpt", "value": ""}]}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    convbank.import_conversations(path, name="sg_null", format="sharegpt")
    (turn, _) = next(iter(convbank.load("sg_null"))).turns
    assert (turn.text, turn.meta) == ("", {"value": None})
    (out,) = export(convbank.load("sg_null"), "sharegpt", tmp_path / "out")
    assert json.loads(out.read_text(encoding="utf-8")) == record
