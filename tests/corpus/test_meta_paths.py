"""A dotted meta key in ``filter(meta=...)`` and ``sort`` is the key itself where a
conversation's meta has one of that name (``{"a.b": 1}``), else the place its dots lead to;
one that no conversation's meta holds is an error naming the keys where it points, never a
silent empty corpus or an order of Nones. Before: ``filter(meta={"a.b": 1})`` missed the
conversation whose meta has the key ``a.b`` (1 of 2 matches), ``meta={"a.zz": 1}`` and
``{"a.b.c": 1}`` were empty corpora and ``sort("a.zz")`` the corpus as it was, no word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank
from convbank.errors import UnknownFieldError


@pytest.fixture
def corpus(tmp_path: Path) -> convbank.Corpus:
    metas = [{"a.b": 1}, {"a": {"b": 1}}, {"a": {"b": 2}}]
    path = tmp_path / "chats.jsonl"
    rows = ({"id": f"c{i}", "messages": [{"role": "user", "content": "x"}], **m} for i, m in enumerate(metas))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    convbank.import_conversations(path, name="chats")
    return convbank.load("chats")


def test_a_dotted_key_is_the_key_itself_or_the_place_it_points_to(corpus: convbank.Corpus) -> None:
    assert corpus.filter(meta={"a.b": 1}).conversation_ids() == ["c0", "c1"]
    assert corpus.filter(meta={"a.b": 2}).conversation_ids() == ["c2"]
    assert corpus.sort("a.b", reverse=True).conversation_ids() == ["c2", "c0", "c1"]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("a.zz", "chats conversations have no meta key 'a.zz'; keys in 'a': a.b"),
        ("a.b.c", "chats conversations have no meta key 'a.b.c'; keys in 'a.b': none"),
    ],
)
def test_a_dotted_key_none_holds_is_an_error(corpus: convbank.Corpus, key: str, message: str) -> None:
    with pytest.raises(UnknownFieldError) as caught:
        corpus.filter(meta={key: 1})
    assert str(caught.value) == message
    with pytest.raises(UnknownFieldError) as caught:
        corpus.sort(key)
    assert str(caught.value) == message
