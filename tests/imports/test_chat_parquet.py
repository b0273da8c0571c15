"""A Parquet file of chat rows (a ``messages`` or ``conversations`` column of lists of
objects: how the Hugging Face Hub keeps chat datasets) is read as chat or ShareGPT, a
conversation per row, never as a table of turns."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import convbank
from convbank.errors import CorpusImportError
from convbank.imports import detect, import_conversations


def _chats(path: Path, messages: list[list[dict]], **columns: list) -> Path:
    pq.write_table(pa.table({"messages": messages, **columns}), path)
    return path


def test_a_parquet_file_of_chat_rows_is_chat(tmp_path: Path) -> None:
    """Before: detected as ``table`` and refused for its lack of a ``conversation_id``
    column (2 of 2 files). Now a row is a conversation, as the same rows as JSON Lines are."""
    rows = [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        [{"role": "user", "content": "bye"}],
    ]
    path = _chats(tmp_path / "train-00000.parquet", rows, id=["a", "b"], source=["x", "y"])
    assert detect([path]).name == "chat"
    report = import_conversations(path, name="mine")
    assert (report.format, report.conversations) == ("chat", 2)
    corpus = convbank.load("mine")
    assert [(t.participant_id, t.text) for t in corpus["a"].turns] == [("user", "hi"), ("assistant", "hello")]
    assert corpus["b"].meta == {"id": "b", "source": "y"}


def test_a_parquet_file_of_sharegpt_rows_is_sharegpt(tmp_path: Path) -> None:
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"conversations": [[{"from": "human", "value": "hi"}]]}), path)
    assert detect([path]).name == "sharegpt"
    import_conversations(path, name="mine")
    assert [t.text for t in convbank.load("mine")[0].turns] == ["hi"]


def test_a_bad_row_of_a_chat_parquet_file_is_named_by_its_row(tmp_path: Path) -> None:
    rows = [[{"role": "user", "content": "hi"}], [{"role": None, "content": "yo"}]]
    path = _chats(tmp_path / "c.parquet", rows)
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(path, name="mine")
    assert str(caught.value) == (
        f'{path}, row 2: expected message 0 to be an object with a "role" string (nothing was '
        "imported; --skip-bad imports the rest)"
    )


def test_a_parquet_file_of_turns_is_still_a_table(tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"conversation_id": ["c"], "participant_id": ["a"], "text": ["hi"]}), path)
    assert detect([path]).name == "table"
