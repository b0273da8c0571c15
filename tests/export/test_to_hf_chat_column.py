"""``to_hf(chat=...)`` of a corpus whose chat messages carry more than a role and a text
(an imported chat corpus: a ``weight`` key, ``tool_calls`` with a null content, a content of
typed parts) holds each message's ``role`` and ``content`` text, a content of parts as its
JSON text, streaming or not. Before: ``DatasetGenerationError`` (a message's ``weight``
could not be cast to the column's features) and, streaming, the parts as Python's repr
(``"[{'type': 'text', ...}]"``), 2 of 2 conversations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank

PARTS = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "http://x"}}]
ROWS = [
    {"id": "w", "messages": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a", "weight": 1.0}]},
    {"id": "p", "messages": [{"role": "user", "content": PARTS}, {"role": "assistant", "content": None, "tool_calls": []}]},
]  # fmt: skip


def test_the_chat_column_holds_role_and_content_texts(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    corpus = convbank.load("chats")
    expected = [
        [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}],
        [
            {"role": "user", "content": json.dumps(PARTS, separators=(",", ":"))},
            {"role": "assistant", "content": None},
        ],
    ]
    assert corpus.to_hf(chat="chat")["train"]["chat"] == expected
    assert [row["chat"] for row in corpus.to_hf(chat="chat", streaming=True)["train"]] == expected


def test_content_parts_are_the_same_text_in_to_hf_and_tokenize(tmp_path: Path) -> None:
    """A content of typed parts is one JSON text in the ``chat`` column of ``to_hf`` and in the
    ``role: content`` lines a tokenizer reads, escapes and all (before: ``to_hf`` wrote U+2028
    and the C1 control U+0085 raw, ``tokenize`` as ``\\u`` escapes, 2 of 2 characters)."""
    pytest.importorskip("datasets")
    from convbank._textio import content_json

    parts = [{"type": "text", "text": "a\u2028b\x85c"}]
    path = tmp_path / "parts.jsonl"
    rows = [
        {"id": "c", "messages": [{"role": "user", "content": parts}, {"role": "assistant", "content": "y"}]}
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    convbank.import_conversations(path, name="parts")
    corpus = convbank.load("parts")
    seen: list[str] = []
    corpus.examples("chat").tokenize(lambda t: seen.append(t) or [1], template=False)[0]
    text = '[{"type":"text","text":"a\\u2028b\\u0085c"}]'
    assert content_json(parts) == text
    assert seen[0] == f"user: {text}\nassistant: "
    assert corpus.to_hf(chat="chat")["train"]["chat"][0][0] == {"role": "user", "content": text}


def test_a_null_or_missing_content_is_the_empty_text_a_tokenizer_reads(tmp_path: Path) -> None:
    """Before: a chat message of null content (or none: read as null) was the word ``null`` in
    the ``role: content`` lines a tokenizer reads (``user: null``), where its turn's text is
    empty and ``to_hf``'s chat column has it null (2 of 2 messages)."""
    from convbank._textio import content_json

    path = tmp_path / "nulls.jsonl"  # never the working folder: a checkout's root when run from it
    row = {
        "id": "c",
        "messages": [
            {"role": "user"},
            {"role": "assistant", "content": None},
            {"role": "user", "content": "hi"},
        ],
    }
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    convbank.import_conversations(path, name="nulls")
    seen: list[str] = []
    convbank.load("nulls").examples("chat").tokenize(lambda t: seen.append(t) or [1], template=False)[0]
    assert seen[0] == "user: \nassistant: "
    assert "null" not in "".join(seen) and "user: hi\n" in seen
    assert [t.text for t in convbank.load("nulls")["c"].turns] == ["", "", "hi"]
    assert content_json(None) == ""
