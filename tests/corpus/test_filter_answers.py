"""A filter's function answers True or False: another answer is never read for its truth."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import convbank
from convbank.store import Bank


@pytest.mark.parametrize(
    ("answer", "shown"),
    [("no", "'no' (str)"), (None, "None (NoneType)"), (1, "1 (int)"), (np.arange(40), "array([ 0, 1, 2,")],
)
def test_a_filters_function_answering_other_than_a_bool_is_named(
    built: Bank, answer: Any, shown: str
) -> None:
    """Nineteenth pass. Before: ``filter(lambda c: "no")`` kept every conversation (``"no"``
    is truthy), ``None`` none, and an array was NumPy's `The truth value of an array with
    more than one element is ambiguous` (4 of 4 answers, a corpus's and a view's filter)."""
    corpus = convbank.load("casino", split="valid")
    first = next(iter(corpus)).conversation_id
    with pytest.raises(TypeError) as caught:
        corpus.filter(lambda c: answer)
    said = str(caught.value)
    assert said.startswith(f"filter's function must return True or False, not {shown}")
    assert said.endswith(f", for conversation {first!r}") and "\n" not in said and len(said) < 200
    with pytest.raises(TypeError, match=r", for example 0$"):
        corpus.examples("turns").filter(lambda t: answer)
    assert len(corpus.filter(lambda c: np.bool_(c.num_turns > 20))) == len(corpus.filter("num_turns > 20"))
    assert len(corpus.examples("turns").filter(lambda t: t["kind"] == "action")) == 64


def test_a_torch_datasets_where_answering_other_than_a_bool_is_named(built: Bank) -> None:
    """Nineteenth pass. Before: ``where=lambda t: t["text"]`` kept every turn with a text and
    ``where=lambda t: None`` none, read for their truth (2 of 2 datasets, map-style and
    iterable), where ``where`` is documented as item -> bool."""
    torch_datasets = pytest.importorskip("convbank.torch")
    corpus = convbank.load("casino", split="valid")
    with pytest.raises(TypeError) as caught:
        torch_datasets.CorpusDataset(corpus, "turns", where=lambda t: t["text"][:5])
    assert str(caught.value) == "where must return True or False, not 'Hello' (str), for item 0"
    stream = torch_datasets.IterableCorpusDataset(corpus, "turns", where=lambda t: None)
    with pytest.raises(
        TypeError, match=r"^where must return True or False, not None \(NoneType\), for a streamed item$"
    ):
        next(iter(stream))
