"""A Hugging Face dataset's row is read as a chat record is: its messages a list, its id a
non-empty text or an integer."""

from __future__ import annotations

from typing import Any

import pytest

import convbank
from convbank.errors import CorpusImportError
from convbank.imports import import_conversations

datasets = pytest.importorskip("datasets")


@pytest.mark.parametrize(
    ("messages", "kind"), [("hello", "str"), ({"role": "user", "content": "hi"}, "dict"), (None, "NoneType")]
)
def test_a_rows_messages_that_are_no_list_are_a_bad_row(messages: Any, kind: str) -> None:
    """Nineteenth pass. Before: a ``messages`` column of texts was imported a letter a turn
    (``hello``: five turns ``h``, ``e``, ``l``...), one of objects its keys as turns (``role``,
    ``content``), and None an empty conversation, exit 0, where a chat record of such
    ``messages`` is refused (3 of 3 rows)."""
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(datasets.Dataset.from_list([{"messages": messages}]), name="mine")
    assert str(caught.value) == (
        f"Dataset, train row 1: expected 'messages' as a list of messages, not {kind} "
        "(nothing was imported; --skip-bad imports the rest)"
    )


def test_a_rows_id_of_true_or_a_float_is_no_id_and_kept_in_meta() -> None:
    """Nineteenth pass. Before: a row's ``id`` of ``True`` named its conversation ``True``
    and one of ``1.0`` ``1.0``, where a chat record's is no id (2 of 2 rows)."""
    rows = [{"id": True, "messages": ["a", "b"]}, {"id": False, "messages": ["c"]}]
    import_conversations(datasets.Dataset.from_list(rows), name="mine")
    assert [(c.conversation_id, c.meta) for c in convbank.load("mine")] == [
        ("0", {"id": True}),
        ("1", {"id": False}),
    ]
    for given in (1.5, ""):
        rows = [{"conversation_id": given, "messages": ["a"]}]
        import_conversations(datasets.Dataset.from_list(rows), name="mine", replace=True)
        assert [(c.conversation_id, c.meta) for c in convbank.load("mine")] == [
            ("0", {"conversation_id": given})
        ]
