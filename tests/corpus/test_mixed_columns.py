"""A view's column whose values are of no one type Arrow holds (chat messages whose
``content`` is a text in one conversation and a list of parts in another; a concatenation
whose parts give a key an int and a text) is a column of their JSON texts in ``to_arrow``,
``to_polars``, ``to_pandas`` and ``to_hf``, as such a place of ``meta`` is; the examples
themselves keep their values. Before: pyarrow's ``ArrowInvalid: cannot mix list and
non-list, non-null values`` out of all four (4 of 4 tables of an imported chat corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank
from convbank.examples import concatenate

PARTS = [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "http://x"}}]


@pytest.fixture
def corpus(tmp_path: Path) -> convbank.Corpus:
    path = tmp_path / "chats.jsonl"
    rows = [
        {"id": "c0", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]},
        {
            "id": "c1",
            "messages": [{"role": "user", "content": PARTS}, {"role": "assistant", "content": "ok"}],
        },
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    return convbank.load("chats")


def test_a_column_of_no_one_type_is_its_json_texts(corpus: convbank.Corpus) -> None:
    view = corpus.examples("chat")
    table = view.to_arrow()
    assert str(table.schema.field("messages").type) == "string"
    assert [json.loads(m)[0]["content"] for m in table.column("messages").to_pylist()] == ["hi", PARTS]
    assert table.column("conversation_id").to_pylist() == ["c0", "c1"]
    assert view.to_polars().shape == view.to_pandas().shape == (2, len(view.column_names))
    assert view.to_hf().num_rows == 2
    assert view[1]["messages"][0]["content"] == PARTS  # the example keeps its value


def test_a_concatenation_of_an_int_and_a_text_column(corpus: convbank.Corpus) -> None:
    turns = corpus.examples("turns")
    ints = turns.map(lambda t: {"v": 1}, cache=False)
    texts = turns.map(lambda t: {"v": "one"}, cache=False)
    assert concatenate([ints, texts]).to_arrow().column("v").to_pylist() == ["1"] * 4 + ['"one"'] * 4
