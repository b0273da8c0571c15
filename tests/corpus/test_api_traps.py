"""The Python API's quieter traps (walkthrough 2, problems 10 and 13): a meta filter value of
a type no stored value has, several statements given to ``convbank.sql``, an unknown table
name, and Corpus equality."""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import convbank
from convbank.errors import UnknownFieldError
from convbank.examples import mix
from convbank.store import Bank


def test_a_meta_value_of_the_wrong_type_is_an_error(built: Bank) -> None:
    """Before: ``meta={"eval_score": "5"}`` gave 0 conversations, silently (79 with ``5``)."""
    volunteers = convbank.load("convai2", "volunteers")
    assert len(volunteers.filter(meta={"eval_score": 5})) == 79
    assert len(volunteers.filter(meta={"eval_score": 5.0})) == 79  # a number is a number
    with pytest.raises(UnknownFieldError) as info:
        volunteers.filter(meta={"eval_score": "5"})
    assert str(info.value) == (
        "eval_score holds integers in convai2; '5' is a string and matches none; "
        "did you mean meta={'eval_score': 5}?"
    )
    with pytest.raises(UnknownFieldError) as info:
        volunteers.filter(meta={"eval_score": "five"})
    assert str(info.value) == "eval_score holds integers in convai2; 'five' is a string and matches none"
    assert len(volunteers.filter(meta={"eval_score": 99})) == 0  # the right type: no match is no error


def test_sql_says_when_earlier_results_are_dropped(built: Bank) -> None:
    """Before: ``convbank.sql("SELECT 1 AS a; SELECT 2 AS b")`` returned b alone, silently."""
    with pytest.warns(UserWarning) as caught:
        table = convbank.sql("SELECT 1 AS a; SELECT 3 AS c; SELECT 2 AS b")
    assert table.to_pylist() == [{"b": 2}]
    assert [str(w.message) for w in caught] == [
        "2 earlier statements' results dropped: convbank.sql returns the last statement's result "
        "(run each statement on its own to get each)"
    ]
    assert caught[0].filename == __file__
    with pytest.warns(UserWarning, match=r"^1 earlier statement's result dropped"):
        assert [b.num_rows for b in convbank.sql_batches("SELECT 1 AS a; SELECT 2 AS b")] == [1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert convbank.sql("SELECT 2 AS b").num_rows == 1


def test_an_unknown_table_is_convbanks_own_error(built: Bank) -> None:
    """Before: a bare ``KeyError("unknown table 'turn'; one of ...")``."""
    casino = convbank.load("casino", split="valid")
    with pytest.raises(UnknownFieldError) as info:
        casino.to_pandas("turn")
    assert str(info.value) == (
        "casino has no table 'turn'; did you mean turns? tables: conversations, participants, turns, "
        "annotations, raw"
    )
    assert isinstance(info.value, KeyError) and info.value.exit_code == 2
    with pytest.raises(UnknownFieldError, match=r"^casino has no table 'x'; tables: conversations, "):
        casino.to_arrow("x")


def test_a_corpus_is_a_value(built: Bank) -> None:
    """Before: ``load("casino", split="train") == load("casino", split="train")`` was False, and
    a pickle round trip was ``!=`` its original."""
    import pickle

    train = convbank.load("casino", split="train")
    again = convbank.load("casino", split="train")
    assert train == again and hash(train) == hash(again) and len({train, again}) == 1
    assert pickle.loads(pickle.dumps(train)) == train
    picked = train.select([0, 5, 2])
    assert pickle.loads(pickle.dumps(picked)) == picked == again.select([0, 5, 2])
    assert train[:] == train and train.select(range(len(train))) == train  # all, in order
    assert picked != train.select([0, 2, 5]) and train != convbank.load("casino", split="valid")
    assert convbank.load("casino") != train and convbank.load("casino", "default") == convbank.load("casino")
    assert train != "casino"


SEEDED = {
    "Corpus.shuffle": lambda c, s: c.shuffle(seed=s),
    "Corpus.train_test_split": lambda c, s: c.train_test_split(0.2, seed=s),
    "Examples.shuffle": lambda c, s: c.examples("turns").shuffle(seed=s),
    "Examples.train_test_split": lambda c, s: c.examples("turns").train_test_split(0.2, seed=s),
    "mix": lambda c, s: mix([c.examples("turns"), c.examples("chat")], seed=s),
    "Mixture.set_epoch": lambda c, s: mix([c.examples("turns"), c.examples("chat")]).set_epoch(s),
    "IterableCorpusDataset": lambda c, s: _iterable(c, seed=s),
    "IterableCorpusDataset.set_epoch": lambda c, s: _iterable(c).set_epoch(s),
}


def _iterable(corpus: Any, **options: Any) -> Any:
    from convbank.torch import IterableCorpusDataset

    return IterableCorpusDataset(corpus, "turns", shuffle=True, **options)


@pytest.mark.parametrize(
    ("value", "error"), [(-1, ValueError), (1.5, TypeError), ("1", TypeError), (True, TypeError)]
)
@pytest.mark.parametrize("call", list(SEEDED))
def test_a_seed_or_epoch_is_a_whole_number_of_at_least_0(
    built: Bank, call: str, value: Any, error: type[Exception]
) -> None:
    """Every seed and epoch is checked alike, by name (before: -1 was NumPy's "expected
    non-negative integer", 8 of 8 calls; 1.5 was ``int(1.5)``, seed 1's plan, and "1" seed 1,
    for ``mix``, ``set_epoch`` and the iterable dataset, 6 of 24 cases silent)."""
    corpus = convbank.load("casino", split="valid")
    name = "epoch" if call.endswith("set_epoch") else "seed"
    with pytest.raises(error) as caught:
        SEEDED[call](corpus, value)
    assert str(caught.value) == f"{name} must be a whole number of at least 0, not {value!r}"
    made = SEEDED[call](corpus, np.int64(3))  # NumPy's ints are their value
    if call == "IterableCorpusDataset":
        assert made.seed == 3 and type(made.seed) is int
    else:
        assert made == SEEDED[call](corpus, 3)


@pytest.mark.parametrize("of", ["corpus", "view"])
@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (np.float32(0.5), (515, 515)),
        (np.float16(0.25), (772, 258)),
        (Fraction(1, 5), (824, 206)),
        (np.int64(5), (1025, 5)),
        (True, "not True"),
        ("5", "not '5'"),
    ],
)
def test_a_test_size_is_a_fraction_or_a_count_whatever_its_type(
    built: Bank, of: str, size: Any, expected: Any
) -> None:
    """A NumPy float or a ``Fraction`` is a fraction, a NumPy int a count, and a bool or a
    string an error (before: each went through ``int()``: ``np.float32(0.5)`` was a count of 0,
    "test_size 0.5 leaves no train or no test", ``True`` a count of 1 and ``"5"`` of 5; 5 of 6
    sizes)."""
    corpus = convbank.load("casino")
    if of == "view":
        corpus = corpus.examples("conversations")  # one example a conversation: the same sizes
    if isinstance(expected, str):
        with pytest.raises(TypeError) as caught:
            corpus.train_test_split(size)
        assert str(caught.value) == f"test_size must be a fraction between 0 and 1 or a count, {expected}"
        return
    parts = corpus.train_test_split(size, seed=0)
    assert (len(parts["train"]), len(parts["test"])) == expected


SIZED = {
    "Corpus.shard(n, 0)": (lambda c, v: c.shard(v, 0), "num_shards must be a whole number of at least 1"),
    "Corpus.shard(3, i)": (lambda c, v: c.shard(3, v), "index must be a whole number of at least 0"),
    "Examples.shard(n, 0)": (
        lambda c, v: c.examples("turns").shard(v, 0),
        "num_shards must be a whole number of at least 1",
    ),
    "Examples.iter": (
        lambda c, v: next(c.examples("turns").iter(v)),
        "batch_size must be a whole number of at least 1",
    ),
    "Corpus.iter_batches": (
        lambda c, v: next(c.iter_batches("turns", batch_size=v)),
        "batch_size must be a whole number of at least 1",
    ),
    "IterableCorpusDataset unit": (
        lambda c, v: _iterable(c, unit=v),
        "unit must be a whole number of at least 1",
    ),
}


@pytest.mark.parametrize("value", [True, 2.0, "2"])
@pytest.mark.parametrize("call", list(SIZED))
def test_a_size_or_position_is_a_whole_number(built: Bank, call: str, value: Any) -> None:
    """A number of shards, a shard index, a batch size or a unit is a whole number, NumPy's
    ints too (before: ``True`` ran as 1 in 7 of 8 places, ``2.0`` ran in 2 and failed with
    Python's "slice indices must be integers" or "'float' object cannot be interpreted as an
    integer" in 3, ``"2"`` with "'<' not supported between instances of 'str' and 'int'" in
    6; ``history=np.int64(2)`` and ``PadCollator(pad_to_multiple_of=np.int64(2))`` were
    refused; 20 of 32 cases)."""
    from convbank.torch import PadCollator

    corpus = convbank.load("casino", split="valid")
    make, message = SIZED[call]
    with pytest.raises(TypeError) as caught:
        make(corpus, value)
    assert str(caught.value) == f"{message}, not {value!r}"
    make(corpus, np.int64(2))  # NumPy's ints are their value
    assert len(corpus.examples("responses", history=np.int64(2))[3]["context"]) == 2
    assert PadCollator(0, pad_to_multiple_of=np.int64(8)).pad_to_multiple_of == 8


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda c: c.examples("turns").select_columns("text").column_names, ["text"]),
        (lambda c: "text" in c.examples("turns").remove_columns("text").column_names, False),
        (lambda c: next(c.iter_batches("turns", columns="text")).schema.names, ["text"]),
    ],
    ids=["select_columns", "remove_columns", "iter_batches"],
)
def test_one_column_name_is_a_name_not_its_letters(built: Bank, call: Any, expected: Any) -> None:
    """Where columns are named, one name is taken as Hugging Face takes it (before: the
    string was read as its letters, "these examples have no column 't'", 3 of 3 calls)."""
    assert call(convbank.load("casino", split="valid")) == expected
