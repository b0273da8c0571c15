"""What ``map`` makes of results that are not a table is a :class:`MapError` naming what is
wrong, never a library's exception: an integer beyond 64 bits, a key that is not a string, a
batched column that is one value. Before: ``OverflowError: Python int too large to convert
to C long``, ``TypeError: expected bytes, int found`` and ``TypeError: object of type 'int'
has no len()`` (or ``'int' object is not iterable`` for a corpus's conversations), and a
batched ``{"v": "abc"}`` over 3 examples was the column ``['a', 'b', 'c']``, silently."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import convbank
from convbank.examples._map import MapError
from testsupport import imported_chats


@pytest.fixture
def corpus(tmp_path: Path) -> convbank.Corpus:
    return imported_chats(tmp_path, 3)


@pytest.mark.parametrize(
    ("function", "batched", "message"),
    [
        (lambda t: {"v": 2**70}, False, "map()'s results do not make a table: Python int too large to convert to C long"),
        (lambda t: {1: 2}, False, "map()'s function returned key 1 (int) for examples from 0; a column is named by a string"),
        (lambda b: {"v": 5}, True, "map(batched=True)'s function returned int as column 'v' for the batch at 0; it must return a dict of lists"),
        (lambda b: {"v": "abc"}, True, "map(batched=True)'s function returned str as column 'v' for the batch at 0; it must return a dict of lists"),
        # nineteenth pass; before: a UnicodeEncodeError traceback, no MapError (2 of 2 sources)
        (lambda t: {"v": "\ud800"}, False, "map()'s results do not make a table: 'utf-8' codec can't encode character '\\ud800' in position 0: surrogates not allowed"),
    ],
)  # fmt: skip
def test_results_that_are_no_table_are_a_map_error(
    corpus: convbank.Corpus, function: Callable[[Any], Any], batched: bool, message: str
) -> None:
    for source in (corpus.examples("turns"), corpus):
        with pytest.raises(MapError) as caught:
            source.map(function, batched=batched, cache=False)
        assert str(caught.value) == message
    assert corpus.map(lambda b: {"v": list(range(len(b)))}, batched=True, cache=False)["v"] == [0, 1, 2]
