"""A CSV column of numbers is read from its text, each cell its own number: an integer is one
exactly whatever its size, as a JSON import keeps it, and a column whose cells change kind
after Arrow's first block of 1 MiB is read as a smaller file is, never refused."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import convbank
from convbank.errors import CorpusImportError
from convbank.imports import import_conversations


def _metas(name: str) -> list[dict]:
    return [turn.meta for conv in convbank.load(name) for turn in conv.turns]


def test_an_integer_beyond_64_bits_keeps_its_value_and_its_column_its_ints(tmp_path: Path) -> None:
    """Before: ``2**70`` was imported as ``1.1805916207174113e+21`` and the column's ``1`` as
    ``1.0`` (2 of 2 cells); a JSON import kept both."""
    path = tmp_path / "t.csv"
    path.write_text(
        f"conversation_id,participant_id,text,x,y\n1,a,hi,1,0.5\n1,b,yo,{2**70},NA\n1,a,ok,-{2**64},7\n"
    )
    import_conversations(path, name="mine")
    assert _metas("mine") == [{"x": 1, "y": 0.5}, {"x": 2**70, "y": None}, {"x": -(2**64), "y": 7}]
    assert [type(m["x"]) for m in _metas("mine")] == [int, int, int]


LATER = {
    "ints": (str, ["1.5", "abc"], [{"x": 1.5}, {"x": "abc"}], [{"x": 39_998}, {"x": 39_999}]),
    "bools": (
        lambda i: "true",
        ["maybe", "FALSE"],
        [{"x": "maybe"}, {"x": False}],
        [{"x": True}, {"x": True}],
    ),
    "nulls": (lambda i: "", ["5", "NA"], [{"x": 5}, {"x": None}], [{"x": None}, {"x": None}]),
}


@pytest.mark.parametrize("kind", sorted(LATER))
def test_a_column_that_changes_kind_after_the_first_block_is_read_as_a_small_file_is(
    tmp_path: Path, kind: str
) -> None:
    """Before: a CSV of over 1 MiB whose column held ints, ``true`` or nothing in Arrow's first
    block and ``1.5``, ``maybe`` or ``5`` later was refused whole (`rows after row 21214:
    expected rows of the same columns and types (In CSV column #3: CSV conversion error to
    int64: invalid value '1.5')`, `... to bool: invalid value 'maybe'`, `... to null: invalid
    value '5'`), where the same rows in a smaller file were imported (3 of 3 files)."""
    cell, later, read_later, read_first = LATER[kind]
    rows = [f"c{i // 2},p{i % 2},hello there this is a line of text,{cell(i)}" for i in range(40_000)]
    path = tmp_path / "t.csv"
    tail = [f"cz,a,hi,{later[0]}", f"cz,b,yo,{later[1]}"]
    path.write_text("\n".join(["conversation_id,participant_id,text,x", *rows, *tail]) + "\n")
    assert path.stat().st_size > 1 << 20
    import_conversations(path, name="mine")
    corpus = convbank.load("mine")
    assert len(corpus) == 20_001
    assert [t.meta for t in corpus["cz"].turns] == read_later
    assert [t.meta for t in corpus["c19999"].turns] == read_first


@pytest.mark.parametrize("quoted", [False, True], ids=["one-line", "quoted-lines"])
def test_a_row_longer_than_arrows_block_is_read(tmp_path: Path, quoted: bool) -> None:
    """Before: a CSV whose text cell held 2.1 MB (on one line, or quoted over 2,100 lines) was
    refused whole, `expected a CSV, TSV or Parquet table (straddling object straddles two block
    boundaries (try to increase block size?))`, where a JSON line of up to 64 MiB is read (2 of
    2 files); a row beyond the bound is now said as one."""
    text = ("x" * 999 + "\n") * 2100 if quoted else "x" * (2100 * 1000)
    path = tmp_path / "t.csv"
    cell = f'"{text}"' if quoted else text
    path.write_text(f"conversation_id,participant_id,text\n1,a,{cell}\n1,b,yo\n")
    import_conversations(path, name="mine")
    assert [t.text for t in convbank.load("mine")["1"].turns] == [text, "yo"]


def test_a_row_beyond_the_line_limit_is_said_as_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row longer than the bound (made 512 KiB here) is one line saying so, nothing imported."""
    from convbank.export import _csv_text

    monkeypatch.setattr(_csv_text, "LINE_LIMIT", 1 << 19)
    path = tmp_path / "t.csv"
    path.write_text("conversation_id,participant_id,text\n1,a," + "x" * (3 << 20) + "\n1,b,yo\n")
    with pytest.raises(CorpusImportError) as caught:
        import_conversations(path, name="mine")
    assert str(caught.value) == (
        f"{path}, file: expected rows of at most 524,288 bytes (a row of the file is longer) "
        "(nothing was imported; --skip-bad imports the rest)"
    )


def test_a_number_read_from_its_text_is_read_as_arrow_reads_one(tmp_path: Path) -> None:
    """Spaces around a number are left out and ``0x10`` is 16, as Arrow's reader takes them
    (read from its text, `` 5`` was kept as text where Arrow read 5, 3 of 3 columns)."""
    path = tmp_path / "t.csv"
    path.write_text(f"conversation_id,participant_id,text,x,y,z\n1,a,hi, 5,0x10, {2**70}\n1,b,yo,6 ,0x11,1\n")
    import_conversations(path, name="mine")
    assert _metas("mine") == [{"x": 5, "y": 16, "z": 2**70}, {"x": 6, "y": 17, "z": 1}]


def test_a_turn_order_is_numbers_never_text_sorted(tmp_path: Path) -> None:
    """Before: one row's ``x`` made Arrow type the whole turn column as text, and conversation
    1's turns ``1, 2, 10`` were sorted as text, ``first, tenth, second``, exit 0; a DataFrame's
    text turn column was sorted as text too (2 of 2 tables). Now the column is read as numbers
    and a row whose place is not one is a bad row."""
    path = tmp_path / "t.csv"
    path.write_text(
        "conversation_id,participant_id,text,turn_index\n1,a,first,1\n1,b,second,2\n1,a,tenth,10\n2,a,x,x\n"
    )
    import_conversations(path, name="mine", skip_bad=tmp_path / "rejects.jsonl")
    assert [t.text for t in convbank.load("mine")["1"].turns] == ["first", "second", "tenth"]
    assert json.loads((tmp_path / "rejects.jsonl").read_text())["expected"] == (
        "expected a number in 'turn_index' (the turn's place), not 'x'"
    )
    frame = pd.DataFrame(
        {
            "conversation_id": ["1", "1"],
            "participant_id": ["a", "b"],
            "text": ["u", "v"],
            "turn_index": ["10", "2"],
        }
    )
    with pytest.raises(CorpusImportError, match=r"^DataFrame, row 1: expected a number in 'turn_index'"):
        import_conversations(frame, name="other")


def test_a_date_or_time_column_keeps_each_cells_text_in_every_block(tmp_path: Path) -> None:
    """Nineteenth pass. Before: a CSV of over 1 MiB whose column held timestamps (or dates) in
    Arrow's first block and a word later was refused whole (`expected rows of the same columns
    and types (... CSV conversion error to timestamp[s]: invalid value 'not a time')`); one of
    times of day was an ``ArrowNotImplementedError`` traceback, exit 1; ``+02:00`` was made
    UTC (3 of 3 files). Now each cell is its text, as a smaller file's are."""
    row = (
        "hello there this is a line of text,2024-01-02 03:04:05,2024-01-02,03:04:05,2024-01-02T03:04:05+02:00"
    )
    rows = [f"c{i // 2},p{i % 2},{row}" for i in range(12_000)]
    path = tmp_path / "t.csv"
    tail = ["cz,a,hi,not a time,not a day,noon,later"]
    path.write_text(
        "\n".join(["conversation_id,participant_id,text,when,day,clock,zoned", *rows, *tail]) + "\n"
    )
    assert path.stat().st_size > 1 << 20
    import_conversations(path, name="mine")
    corpus = convbank.load("mine")
    first = {"when": "2024-01-02 03:04:05", "day": "2024-01-02", "clock": "03:04:05"}
    assert corpus["c0"].turns[0].meta == {**first, "zoned": "2024-01-02T03:04:05+02:00"}
    assert corpus["cz"].turns[0].meta == {
        "when": "not a time",
        "day": "not a day",
        "clock": "noon",
        "zoned": "later",
    }
