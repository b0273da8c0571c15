"""A filter's function (and a torch dataset's where) answers True or False, and a position is an
int: another answer or index is never read for its truth or taken as a number."""

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


@pytest.mark.parametrize("index", [True, np.bool_(True), "a", None, 1.5])
def test_a_torch_dataset_indexed_by_other_than_an_int_is_named(built: Bank, index: Any) -> None:
    """Nineteenth pass. Before: a map-style dataset of turns took ``True`` as 1 (a corpus and
    one of conversations refuse it), ``"a"`` and None were `'<' not supported between
    instances of 'str' and 'int'`, 1.5 `list indices must be integers` (5 of 5 indices); and
    ``select([True, 0])`` took ``True`` as 1 on a corpus and a dataset (2 of 2)."""
    torch_datasets = pytest.importorskip("convbank.torch")
    corpus = convbank.load("casino", split="valid")
    turns = torch_datasets.CorpusDataset(corpus, "turns")
    kind = {str: "<U1", float: "float64"}.get(type(index), type(index).__name__)
    with pytest.raises(TypeError) as caught:
        turns[index]
    assert str(caught.value) == f"a dataset is indexed by integer positions, not {kind}"
    with pytest.raises(TypeError, match=r"^select\(\) takes integer positions, not bool$"):
        corpus.select([True, 0])
    with pytest.raises(TypeError, match=r"^a dataset selects by integer indices, not bool$"):
        turns.select([0, True])
    assert turns[-1] == turns[len(turns) - 1] and turns[np.int64(0)]["turn_index"] == 0


def test_a_0d_bool_tensor_or_array_is_a_filters_answer(built: Bank) -> None:
    """Twentieth pass. Before: ``filter(lambda c: torch.tensor(c.num_turns > 20))``, what a
    predicate computed with torch returns, was refused (`not tensor(True) (Tensor)`), and a
    NumPy 0-d bool array too (2 of 2 answers, a filter's and a torch dataset's where). Now a
    0-d bool tensor or array is its bool; one of one number, or a 1-d one, is refused as before."""
    torch = pytest.importorskip("torch")
    torch_datasets = pytest.importorskip("convbank.torch")
    corpus = convbank.load("casino", split="valid")
    many = len(corpus.filter("num_turns > 20"))
    assert len(corpus.filter(lambda c: torch.tensor(c.num_turns > 20))) == many
    assert len(corpus.filter(lambda c: np.array(c.num_turns > 20))) == many
    assert len(corpus.examples("turns").filter(lambda t: torch.tensor(t["kind"] == "action"))) == 64
    turns = torch_datasets.CorpusDataset(corpus, "turns", where=lambda t: torch.tensor(t["kind"] == "action"))
    assert len(turns) == 64
    for answer, shown in [
        (torch.tensor(1), "tensor(1) (Tensor)"),
        (torch.tensor([True]), "tensor([True]) (Tensor)"),
        (np.array(1.0), "array(1.) (ndarray)"),
    ]:
        with pytest.raises(TypeError) as caught:
            corpus.filter(lambda c, answer=answer: answer)
        assert str(caught.value).startswith(f"filter's function must return True or False, not {shown}, for")


def test_a_0d_integer_tensor_is_a_position_and_a_bool_tensor_none(built: Bank) -> None:
    """Twentieth pass. Before: ``corpus[torch.tensor(1)]`` and a view's were refused (`not by
    Tensor`) while ``shard(torch.tensor(3), ...)`` was taken, and ``shard(4, torch.tensor(True))``
    was shard 1 (``operator.index`` reads a bool tensor as 1), 2 of 2 each. Now a position or a
    whole number is one rule (``convbank._arguments.an_index``): a 0-d integer tensor or array
    is its int; a bool, a bool tensor and a 1-d one are refused."""
    torch = pytest.importorskip("torch")
    corpus = convbank.load("casino", split="valid")
    assert corpus[torch.tensor(1)] == corpus[1] and corpus[np.array(-1)] == corpus[-1]
    turns = corpus.examples("turns")
    assert turns[torch.tensor(2)] == turns[2]
    assert corpus.shard(4, torch.tensor(1)).conversation_ids() == corpus.shard(4, 1).conversation_ids()
    with pytest.raises(TypeError, match=r"^index must be a whole number of at least 0, not tensor\(True\)$"):
        corpus.shard(4, torch.tensor(True))
    for key in (torch.tensor([1]), torch.tensor(True), np.array([1])):
        with pytest.raises(TypeError, match=r"^a corpus is indexed by conversation id"):
            corpus[key]
