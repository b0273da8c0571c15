"""Arguments of the Corpus API given as what they never are are named in one line, never
taken silently nor failed inside with Python's own words."""

from __future__ import annotations

from typing import Any

import pytest

import convbank
from convbank.errors import UnknownFieldError
from convbank.store import Bank


@pytest.mark.parametrize("call", ["to_arrow", "to_pandas", "to_polars", "scan", "turns_with_labels"])
def test_a_meta_form_that_is_neither_struct_nor_json_is_refused(built: Bank, call: str) -> None:
    """Before: ``to_arrow(meta="xml")`` gave the JSON text and ``scan(meta="xml")`` a frame,
    without a word (5 of 5 readers)."""
    corpus = convbank.load("casino", split="valid")
    method = getattr(corpus, call)
    with pytest.raises(ValueError) as caught:
        method(meta="xml") if call == "turns_with_labels" else method("turns", meta="xml")
    assert str(caught.value) == "meta is 'struct' (typed) or 'json' (the stored text), not 'xml'"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda c: c.filter(5), "where is a SQL condition (a str) or a function of a Conversation, not 5"),
        (lambda c: c.filter(label=1), "label is a text such as 'strategy:uv-part', not 1"),
        (lambda c: c.filter(layer=["strategy"]), "layer is a text such as 'strategy', not ['strategy']"),
        (
            lambda c: c.filter(meta=[("a", 1)]),
            "meta is a mapping of meta keys to values, such as {'eval_score': 5}, not [('a', 1)]",
        ),
        (lambda c: c.neighbours(5), "neighbours() takes a conversation id (a str), not 5"),
    ],
    ids=["where", "label", "layer", "meta", "neighbours"],
)
def test_filter_and_neighbours_name_an_argument_of_the_wrong_kind(
    built: Bank, make: Any, message: str
) -> None:
    """Before: `'int' object is not callable`, `AttributeError: 'int' object has no attribute
    'partition'`, `AttributeError: 'tuple' object has no attribute 'split'`, `'<' not
    supported between instances of 'int' and 'str'` (5 of 5 calls)."""
    with pytest.raises(TypeError) as caught:
        make(convbank.load("casino", split="valid"))
    assert str(caught.value) == message


def test_one_id_is_an_id_and_one_speaker_a_name(built: Bank) -> None:
    """Before: ``take("157")`` looked up ``'1'`` (the id's letters: "casino has no
    conversation '1'"), and ``examples("turns", speaker=1)`` was `'int' object is not
    iterable`."""
    corpus = convbank.load("casino", split="valid")
    assert [c.conversation_id for c in corpus.take("157")] == ["157"]
    with pytest.raises(UnknownFieldError, match=r"^casino has no participant 1 \(speaker=\); participants: "):
        corpus.examples("turns", speaker=1)


def test_load_names_a_config_split_or_bank_of_the_wrong_kind(built: Bank) -> None:
    """Before: ``load("casino", split=["train", "valid"])`` was `unhashable type: 'list'` and
    ``load("casino", bank="/tmp")`` `'str' object has no attribute 'snapshot'` (2 of 2)."""
    with pytest.raises(TypeError) as caught:
        convbank.load("casino", split=["train", "valid"])
    assert str(caught.value) == (
        "a split is named by one string, not list ['train', 'valid'] (None loads every split; "
        "load several one at a time)"
    )
    with pytest.raises(TypeError, match=r"^bank is a convbank.store.Bank \(Bank\(path\)\), not str '/tmp'$"):
        convbank.load("casino", bank="/tmp")
