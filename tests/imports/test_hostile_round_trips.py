"""Round trips of a researcher's own data through the formats it was read from: hostile but
valid content (Unicode forms, bidi and zero-width characters, ids alike but for case or
normal form, integers past 64 bits, ``-0.0``, subnormals, keys holding dots, slashes and
quotes) comes back as it went in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import convbank
from convbank.export import export
from convbank.imports import import_conversations

HOSTILE = {"big": 2**63 + 5, "f": 0.1 + 0.2, "nz": -0.0, "tiny": 1e-320, "a.b": 1, "a/b": 2, 'q"k': 3}
CHATS: list[dict[str, Any]] = [
    {
        "id": ident,
        "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {}}}],
        "parallel_tool_calls": False,
        "messages": [
            {"role": "user", "content": text, "x": HOSTILE},
            {"role": "assistant", "content": "ok \u200b" + text},
        ],
    }
    for ident, text in [
        ("Abc", "caf\u00e9"),
        ("abc", "cafe\u0301"),
        ("caf\u00e9", "\u05e9\u05dc\u05d5\u05dd \u202eabc\u202c"),
        ("cafe\u0301", "\U0001f468\u200d\U0001f469\u200d\U0001f467"),
    ]
]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_chat_corpus_is_exported_to_chat_with_its_records_keys(tmp_path: Path) -> None:
    """Before: ``export --format chat`` of a corpus imported from chat wrote each record's
    messages and convbank's ``metadata`` only: the record's own keys (``id``, ``tools``,
    ``parallel_tool_calls``) were dropped without a word, though the format's ``loses`` says
    a chat corpus loses nothing, and importing the export back gave each conversation
    another meta. Now each record comes back as it was read, and so does the bank's corpus."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CHATS), encoding="utf-8")
    import_conversations(src, name="mine")
    out = export(convbank.load("mine"), "chat", tmp_path / "out")
    assert _lines(out[0]) == CHATS
    import_conversations(out[0], name="back")
    before = {c.conversation_id: (c.meta, c.turns) for c in convbank.load("mine")}
    after = {c.conversation_id: (c.meta, c.turns) for c in convbank.load("back")}
    assert after == before
    assert len(after) == 4  # ids alike but for case or normal form are four conversations


EMPTY = {
    "chat": [
        {"id": "e", "messages": []},
        {"id": "f", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
    ],
    "sharegpt": [
        {"id": "e", "conversations": []},
        {"id": "f", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]},
    ],
}


@pytest.mark.parametrize("fmt", sorted(EMPTY))
def test_a_record_of_no_messages_is_exported_back_as_read(tmp_path: Path, fmt: str) -> None:
    """A record of no messages is a conversation of no participants, seen from nobody: its
    own format gives it back as read, ``sharegpt`` a chat record's own fields, ``chat`` a
    ShareGPT record with no messages and ``as`` null,
    ParlAI with no episode (before: a ``ValueError: ... has no participants`` traceback, exit
    1, from `chat`, `sharegpt` and `parlai`; 3 of 8 formats for each of 2 formats read)."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in EMPTY[fmt]), encoding="utf-8")
    import_conversations(src, name="mine", format=fmt)
    corpus = convbank.load("mine")
    assert _lines(export(corpus, fmt, tmp_path / fmt)[0]) == EMPTY[fmt]
    other = "sharegpt" if fmt == "chat" else "chat"
    first = _lines(export(corpus, other, tmp_path / other)[0])[0]
    if other == "sharegpt":  # a chat record's own fields, as the chat export gives them back
        assert first == {"conversations": [], "id": "e"}
    else:
        assert first == {
            "messages": [],
            "metadata": {
                "dataset": "mine",
                "config": "default",
                "split": "train",
                "conversation_id": "e",
                "as": None,
                "role": None,
                "outcome": {},
            },
        }
    assert (
        export(corpus, "parlai", tmp_path / "parlai")[0].read_text(encoding="utf-8").count("episode_done")
        == 1
    )


TRAVEL: list[dict[str, Any]] = [  # the tutorial's corpus (docs/guide/your-conversations.md)
    {"id": "c1", "messages": [
        {"role": "system", "content": "You are a travel agent."},
        {"role": "user", "content": "A quiet beach in May?"},
        {"role": "assistant", "content": "Try Sesimbra."},
        {"role": "user", "content": "And a place to stay?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Casa Azul has sea views."}]},
    ]},
    {"id": "c2", "messages": [
        {"role": "user", "content": "Weather in Porto?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "18 °C, sunny"},
        {"role": "assistant", "content": "18 °C and sunny."},
    ]},
]  # fmt: skip


def test_a_chat_corpus_is_exported_to_parlai_from_its_first_message(tmp_path: Path) -> None:
    """Before: ``export --format parlai`` of the tutorial's chat corpus was an
    ``AttributeError: 'list' object has no attribute 'replace'`` traceback, exit 1 (a content
    of typed parts; ``None`` beside tool calls too), and a conversation opening with no system
    message lost its first message (``text:`` empty; 2 of 2 corpora). Now a content is its
    text, and only an opening system message is left out."""
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in TRAVEL), encoding="utf-8")
    import_conversations(src, name="travel")
    (out,) = export(convbank.load("travel"), "parlai", tmp_path / "out")
    assert out.read_text(encoding="utf-8").splitlines() == [
        "text:A quiet beach in May?\tlabels:Try Sesimbra.\tid:travel/c1",
        "text:And a place to stay?\tlabels:Casa Azul has sea views.\tid:travel/c1\tepisode_done:True",
        "text:Weather in Porto?\tlabels:\tid:travel/c2",
        "text:18 °C, sunny\tlabels:18 °C and sunny.\tid:travel/c2\tepisode_done:True",
    ]


def test_a_sharegpt_value_of_null_is_written_back_null(tmp_path: Path) -> None:
    """Before: ``"value": null`` was exported back as ``"value": ""`` (1 of 1 messages), where
    ShareGPT's own corpus loses nothing; written as chat, it is a null content, as chat's is."""
    records = [{"conversations": [{"from": "human", "value": None}, {"from": "gpt", "value": ""}]}]
    (path := tmp_path / "in.json").write_text(json.dumps(records))
    import_conversations(path, name="mine", format="sharegpt")
    corpus = convbank.load("mine")
    assert _lines(export(corpus, "sharegpt", tmp_path / "out")[0]) == records
    (line,) = _lines(export(corpus, "chat", tmp_path / "chat")[0])
    assert line["messages"] == [{"role": "user", "content": None}, {"role": "assistant", "content": ""}]


def test_a_message_of_no_value_or_content_is_written_back_with_none(tmp_path: Path) -> None:
    """Before: a ShareGPT message with no ``value`` key came back as ``"value": ""`` and a chat
    message with no ``content`` as ``"content": null`` (2 of 2): no key, a null and an empty
    one are three things, each written back as read, in its own format and the other's."""
    shared = [{"from": "human"}, {"from": "gpt", "value": None}, {"from": "human", "value": ""}]
    chat = [{"role": "user"}, {"role": "assistant", "content": None}, {"role": "user", "content": ""}]
    (sg := tmp_path / "sg.json").write_text(json.dumps([{"conversations": shared}]))
    (ch := tmp_path / "ch.json").write_text(json.dumps([{"messages": chat}]))
    import_conversations(sg, name="sg", format="sharegpt")
    import_conversations(ch, name="ch", format="chat")
    sg_corpus, ch_corpus = convbank.load("sg"), convbank.load("ch")
    assert _lines(export(sg_corpus, "sharegpt", tmp_path / "a")[0]) == [{"conversations": shared}]
    assert _lines(export(ch_corpus, "chat", tmp_path / "b")[0]) == [{"messages": chat}]
    (line,) = _lines(export(ch_corpus, "sharegpt", tmp_path / "c")[0])
    assert line["conversations"] == shared


def test_a_records_id_of_true_is_no_id_as_a_floats_is_not(tmp_path: Path) -> None:
    """Before: ``"id": true`` named its conversation ``True`` (Python's spelling), so a record
    beside it with ``"id": "True"`` was refused as a repeated id (1 of 1). Now JSON's
    ``true`` is no id, as ``1.5`` is not: the id is made from the content, the key kept."""
    records = [
        {"id": True, "messages": [{"role": "user", "content": "x"}]},
        {"id": "True", "messages": [{"role": "user", "content": "y"}]},
    ]
    (path := tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    import_conversations(path, name="mine", format="chat")
    corpus = convbank.load("mine")
    assert corpus["True"].turns[0].text == "y"
    assert [c.meta["id"] for c in corpus] == [True, "True"]
    assert _lines(export(corpus, "chat", tmp_path / "out")[0]) == records


def test_a_corpus_sorted_by_a_meta_key_of_mixed_kinds_is_named_as_a_views_is(tmp_path: Path) -> None:
    """Before: ``corpus.sort("k")`` over a meta key holding 1 in one record and "one" in
    another was Python's bare ``TypeError: '<' not supported between instances of 'str' and
    'int'`` (1 of 1), where a view's sort names the column; now the one rule of both, None
    still last both ways and ties in their order."""
    records = [
        {"id": "a", "k": 1, "messages": []},
        {"id": "b", "k": "one", "messages": []},
        {"id": "c", "messages": []},
    ]
    (path := tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    import_conversations(path, name="mine", format="chat")
    corpus = convbank.load("mine")
    with pytest.raises(TypeError) as caught:
        corpus.sort("k")
    assert str(caught.value) == (
        "sort() cannot order 'k' of mine conversations: '<' not supported between instances of 'str' and 'int'"
    )
    both = corpus.select([0, 2])
    assert [c.conversation_id for c in both.sort("k", reverse=True)] == ["a", "c"]
