"""The Python API's quieter traps (walkthrough 2, problems 10 and 13): a meta filter value of
a type no stored value has, several statements given to ``convbank.sql``, an unknown table
name, and Corpus equality."""

from __future__ import annotations

import warnings

import pytest

import convbank
from convbank.errors import UnknownFieldError
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
