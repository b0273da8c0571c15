"""``tokenize(max_length=...)`` is a whole number of at least 1, NumPy's ints too, checked as
every other size is (``whole_number``) when ``tokenize`` is called. Before: ``True`` ran as a
``max_length`` of 1, silently, and ``2.5`` failed at the first example with Python's "slice
indices must be integers or None or have an __index__ method" (2 of 2 values)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import convbank


@pytest.mark.parametrize(
    ("given", "error"), [(True, TypeError), (2.5, TypeError), ("3", TypeError), (0, ValueError)]
)
def test_max_length_is_a_whole_number(tmp_path: Path, given: object, error: type[Exception]) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text(
        json.dumps({"id": "c", "messages": [{"role": "user", "content": "hi"}]}) + "\n", encoding="utf-8"
    )
    convbank.import_conversations(path, name="chats")
    turns = convbank.load("chats").examples("turns")
    with pytest.raises(error) as caught:
        turns.tokenize(lambda t: [ord(c) for c in t], max_length=given)  # type: ignore[arg-type]
    assert str(caught.value) == f"max_length must be a whole number of at least 1, not {given!r}"
    assert turns.tokenize(lambda t: [ord(c) for c in t], max_length=np.int64(1))[0]["input_ids"] == [104]
