"""A pandas DataFrame with a column Arrow cannot type (values of several types in one
``object`` column, complex numbers, objects of no known type) is one line naming the column,
nothing imported. Before: pyarrow's ``ArrowInvalid`` or ``ArrowNotImplementedError`` came
out of ``import_conversations`` as it was (4 of 4 columns)."""

from __future__ import annotations

import pandas as pd
import pytest

import convbank
from convbank.errors import CorpusImportError, UnknownDatasetError
from convbank.export._format import ReadOptions, Rejected
from convbank.export.table import read_frame

BASE = {"conversation_id": ["a", "a", "b"], "participant_id": ["u", "v", "u"], "text": ["x", "y", "z"]}


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ([1, "a", None], "Could not convert 'a' with type str: tried to convert to int64"),
        ([{"k": 1}, [1], None], "cannot mix list and non-list, non-null values"),
        ([1 + 2j, None, None], "Unsupported numpy type 15"),
        ([2**70, 1, None], "Python int too large to convert to C long"),  # before: an OverflowError
    ],
)
def test_a_column_arrow_cannot_type_is_one_line_naming_it(values: list[object], why: str) -> None:
    frame = pd.DataFrame({**BASE, "c": values})
    (got,) = read_frame(frame, ReadOptions(dataset="mine"))
    assert isinstance(got, Rejected)
    assert (
        got.line()
        == f"DataFrame, file: expected column 'c' to hold values of one type Arrow can store ({why})"
    )
    with pytest.raises(CorpusImportError, match=r"^DataFrame, file: expected column 'c' to hold"):
        convbank.import_conversations(frame, name="mine")
    with pytest.raises(UnknownDatasetError):
        convbank.load("mine")
    convbank.import_conversations(pd.DataFrame({**BASE, "c": [str(v) for v in values]}), name="mine")
    assert [t.meta["c"] for t in convbank.load("mine")[0].turns] == [str(values[0]), str(values[1])]


@pytest.mark.parametrize("cell", [[1.0, float("nan")], {"a": float("nan")}], ids=["list", "dict"])
def test_a_nan_inside_a_frames_list_or_dict_is_a_bad_row_never_null(cell: object) -> None:
    """Before: Arrow's ``from_pandas`` made it null, ``[1.0, None]`` and ``{"a": None}``, exit 0
    (2 of 2 cells), where an infinity there and a NaN in a Parquet list are bad rows; a cell
    that is itself missing (NaN, None) is still null."""
    frame = pd.DataFrame({**BASE, "c": [cell, None, float("nan")]})
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(frame, name="mine")
    assert str(caught.value) == (
        "DataFrame, row 1: expected column 'c' to hold a finite number, not nan "
        "(nothing was imported; --skip-bad imports the rest)"
    )
    frame = pd.DataFrame({**BASE, "c": [[1.0] if isinstance(cell, list) else {"a": 1.0}, None, float("nan")]})
    convbank.import_conversations(frame, name="mine")
    assert [t.meta.get("c") for c in convbank.load("mine") for t in c.turns][1:] == [None, None]


@pytest.mark.parametrize("column", ["text", "c"])
def test_a_lone_surrogate_in_an_object_column_is_one_line_naming_it(column: str) -> None:
    """Nineteenth pass. Before: a pandas ``object`` column holding ``"\\ud800"`` (the text or a
    meta column) was a ``UnicodeEncodeError`` traceback out of ``import_conversations`` (2 of
    2 columns)."""
    frame = pd.DataFrame({**BASE, "c": ["1", "2", "3"]}, dtype=object)
    frame.loc[1, column] = "\ud800"
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(frame, name="mine")
    assert str(caught.value) == (
        f"DataFrame, file: expected column {column!r} to hold text of whole characters ('utf-8' codec can't "
        "encode character '\\ud800' in position 0: surrogates not allowed) (nothing was imported; "
        "--skip-bad imports the rest)"
    )


def test_a_frames_named_index_is_data_its_unnamed_one_row_numbers() -> None:
    """A named index is kept as pandas' ``to_parquet`` and Hugging Face's ``from_pandas``
    keep it: its levels are columns (a mapped one, or the turn's meta), and a name it shares
    with a column is the repeated column it is (before: ``set_index("minute")`` imported the
    turns with meta ``{}``, the minutes lost, and ``set_index("conversation_id")`` said the
    frame had no such column, 2 of 2 runs each); an unnamed index (row numbers) is not data."""
    frame = pd.DataFrame({**BASE, "minute": [0, 1, 0]})

    def turns(given: pd.DataFrame) -> list[tuple[str, str, object]]:
        got = list(read_frame(given, ReadOptions(dataset="mine")))
        return [(c.conversation_id, t.text, t.meta) for c in got for t in c.turns]  # type: ignore[union-attr]

    kept = [("a", "x", {"minute": 0}), ("a", "y", {"minute": 1}), ("b", "z", {"minute": 0})]
    assert turns(frame.set_index("minute")) == turns(frame) == kept
    assert turns(frame.set_index(["conversation_id", "minute"])) == kept
    assert turns(frame.set_index(pd.Index([7, 8, 9]))) == kept
    (clash,) = read_frame(frame.set_index("minute").rename_axis("text"), ReadOptions(dataset="mine"))
    assert isinstance(clash, Rejected) and clash.expected == (
        "expected each column named once; 'text' names 2 columns (rename all but one)"
    )
