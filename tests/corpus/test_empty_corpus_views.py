"""An empty corpus (a filter that keeps nothing) is still its dataset's corpus: each example
view has the columns and types the view has, and ``to_hf()`` the splits the corpus was
loaded with, each with no rows and the dataset's features. Before, every view of it had no
columns (``to_pandas()`` a ``ValueError`` traceback) and ``to_hf()`` was ``{}``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convbank


def _chats(path: Path, first: int) -> Path:
    rows = (
        {
            "id": f"c{i}",
            "messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}],
        }
        for i in range(first, first + 3)
    )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def chats(tmp_path: Path) -> convbank.Corpus:
    parts = {"train": _chats(tmp_path / "train.jsonl", 0), "test": _chats(tmp_path / "test.jsonl", 3)}
    convbank.import_conversations(parts, name="chats")
    return convbank.load("chats")


@pytest.mark.parametrize("kind", ["turns", "chat", "responses", "conversations"])
def test_a_view_of_an_empty_corpus_has_the_views_columns(chats: convbank.Corpus, kind: str) -> None:
    whole, empty = chats.examples(kind), chats.filter(lambda c: False).examples(kind)
    assert len(empty) == 0 and empty.column_names == whole.column_names
    assert empty.to_arrow().schema == whole.to_arrow().schema
    assert empty.to_pandas().shape == (0, len(whole.column_names))
    assert empty.to_polars().columns == whole.column_names


def test_to_hf_of_an_empty_corpus_has_its_splits_with_no_rows(chats: convbank.Corpus) -> None:
    pytest.importorskip("datasets")
    whole = chats.to_hf()
    for empty in (chats.filter(lambda c: False), chats.select([])):
        got = empty.to_hf()
        assert {k: v.num_rows for k, v in got.items()} == {"train": 0, "test": 0}
        assert got["test"].features == whole["test"].features
        assert {k: list(v) for k, v in empty.to_hf(streaming=True).items()} == {"train": [], "test": []}
    train = convbank.load("chats", split="train").filter(lambda c: False).to_hf()
    assert list(train) == ["train"] and train["train"].num_rows == 0
