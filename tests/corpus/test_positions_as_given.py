"""Positions given to ``Corpus.select`` and to a view's ``select`` and ``[]`` are checked as
given, before any is cast to int64: an unsigned NumPy position that int64 wraps to a negative
is outside, never the last conversation; a Python int beyond 64 bits is an ``IndexError``
naming it, not a ``TypeError`` about ``object``. Before: ``select(np.array([2**64 - 1],
dtype=np.uint64))`` was the last conversation, silently; ``select([2**63])`` named position
-9223372036854775808; ``select([10**20])`` was "not object" (3 of 3 calls, corpus and view)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import convbank
from testsupport import imported_chats


@pytest.fixture
def corpus(tmp_path: Path) -> convbank.Corpus:
    return imported_chats(tmp_path, 5)


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        (np.array([2**64 - 1], dtype=np.uint64), IndexError, "position 18446744073709551615 is outside {of}"),
        (np.array([2**63], dtype=np.uint64), IndexError, "position 9223372036854775808 is outside {of}"),
        ([2**63], IndexError, "position 9223372036854775808 is outside {of}"),
        (
            [10**20, -(10**20)],
            IndexError,
            "position 100000000000000000000 is outside {of} (2 such positions)",
        ),
        ([10**20, None], TypeError, "{refused} NoneType"),
        ([None], TypeError, "{refused} NoneType"),
        ([1.5], TypeError, "{refused} float64"),
    ],
)
def test_positions_are_checked_as_given(
    corpus: convbank.Corpus, given: object, error: type[Exception], message: str
) -> None:
    view = corpus.examples("turns")
    cases = [
        (corpus.select, "this corpus of 5 conversations", "select() takes integer positions, not"),
        (view.select, "this view of 5 examples", "examples are selected by integer positions, not"),
    ]
    for select, of, refused in cases:
        with pytest.raises(error) as caught:
            select(given)  # type: ignore[arg-type]
        assert str(caught.value) == message.format(of=of, refused=refused)
    assert corpus.select(np.array([4, 0], dtype=np.uint8)).conversation_ids() == ["c4", "c0"]
    assert view.select(np.array([-1]))[0]["text"] == "q4"


def test_a_torch_datasets_indices_are_checked_as_given(corpus: convbank.Corpus) -> None:
    """Before: ``CorpusDataset.select`` cast with ``np.asarray(..., dtype=np.int64)``: ``[1.5]``
    and ``[True]`` were item 1, ``2**64 - 1`` unsigned the last item, ``10**20`` an
    ``OverflowError`` traceback."""
    pytest.importorskip("torch")
    from convbank.torch import CorpusDataset

    dataset = CorpusDataset(corpus, "turns")
    refused = "a dataset selects by integer indices, not"
    for given, error, message in [
        ([1.5], TypeError, f"{refused} float64"),
        ([True], TypeError, f"{refused} bool"),
        (np.array([2**64 - 1], dtype=np.uint64), IndexError, "index 18446744073709551615 is outside"),
        ([10**20], IndexError, "index 100000000000000000000 is outside"),
    ]:
        with pytest.raises(error) as caught:
            dataset.select(given)  # type: ignore[arg-type]
        assert str(caught.value).startswith(message)
    assert str(caught.value) == "index 100000000000000000000 is outside this dataset of 5 turns"
    assert [t["text"] for t in dataset.select([-1, 0])] == ["q4", "q0"]
