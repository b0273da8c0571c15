"""A table's values are imported as ``query`` reads them, whatever Python can hold."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli


def test_a_parquet_table_of_values_python_cannot_hold_is_imported_as_their_text(tmp_path: Path) -> None:
    """Twelfth pass. Before: a Parquet table whose timestamp column (or another) held the
    date ``infinity`` (``2**31 - 1`` days), a timestamp of ``2**63 - 1`` microseconds or a
    duration of ``2**62`` s was an ``OverflowError`` traceback, exit 1, nothing imported
    (4 of 4 files). Now such a value is its text, as ``query`` writes it (and DuckDB's
    ``24:00:00`` is not ``00:00:00``)."""
    far = pa.array([2**63 - 1, 0], pa.int64())
    pq.write_table(
        pa.table(
            {
                "cid": ["c1", "c1"],
                "who": ["a", "b"],
                "said": ["x", "y"],
                "ts": pa.array([2**31 - 1, 0], pa.int32()).cast(pa.date32()),
                "far": far.cast(pa.timestamp("us")),
                "long": pa.array([2**62, 1], pa.int64()).cast(pa.duration("s")),
                "end": pa.array([86_400_000_000, 0], pa.time64("us")),
            }
        ),
        tmp_path / "t.parquet",
    )
    done = CliRunner().invoke(
        cli,
        ["import", str(tmp_path / "t.parquet"), "--name", "mine", "--map",
         "conversation_id=cid,speaker=who,text=said,timestamp=ts"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    turns = next(iter(convbank.load("mine"))).turns
    assert [t.meta for t in turns] == [
        {"timestamp": "infinity", "far": "infinity", "long": "4611686018427387904 s", "end": "24:00:00"},
        {"timestamp": "1970-01-01", "far": "1970-01-01T00:00:00", "long": 1.0, "end": "00:00:00"},
    ]


def test_a_hugging_face_dataset_of_values_python_cannot_hold_is_imported(tmp_path: Path) -> None:
    """Twelfth pass. Before: a ``save_to_disk`` folder whose rows held the date ``infinity``
    beside their messages was an ``OverflowError`` traceback from ``datasets``' rows, exit
    1. Now its rows are read through Arrow as ``query`` reads them."""
    import datasets

    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    table = pa.table(
        {
            "messages": pa.array([messages] * 2),
            "when": pa.array([2**31 - 1, 0], pa.int32()).cast(pa.date32()),
        }
    )
    datasets.DatasetDict({"train": datasets.Dataset(table)}).save_to_disk(str(tmp_path / "odd"))
    done = CliRunner().invoke(cli, ["import", str(tmp_path / "odd"), "--name", "mine"])
    assert done.exit_code == 0, done.output
    assert [[t.text for t in c.turns] for c in convbank.load("mine")] == [["hi", "yo"], ["hi", "yo"]]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        (
            "007,01,5\n007,02,0.50\n7,1,1e3\n7,2,yes\n",
            [("007", "01", "5"), ("007", "02", "0.50"), ("7", "1", "1e3"), ("7", "2", "yes")],
        ),
        ("08,1,hi\n08,2,\n", [("08", "1", "hi"), ("08", "2", "")]),
        ("1,a,5\n1,b,6\n", [("1", "a", "5"), ("1", "b", "6")]),
    ],
    ids=["ids-alike-as-numbers", "an-empty-text", "texts-of-digits"],
)
def test_a_csvs_mapped_columns_are_read_as_the_text_they_hold(
    tmp_path: Path, rows: str, expected: list[tuple[str, str, str]]
) -> None:
    """Before: the conversation id, speaker and text columns named by ``--map`` were typed as
    pyarrow infers: ``007`` and ``7`` were one conversation of four turns, speakers ``01``
    and ``1`` one speaker, exit 0 (2 of 2 files); a text column of digits, or of empty
    cells only, was ``expected a string 't'``, exit 2."""
    (tmp_path / "t.csv").write_text("c,s,t\n" + rows, encoding="utf-8")
    done = CliRunner().invoke(
        cli,
        ["import", str(tmp_path / "t.csv"), "--name", "mine", "--map", "conversation_id=c,speaker=s,text=t"],
    )
    assert done.exit_code == 0, done.output
    got = convbank.sql(
        "SELECT conversation_id, participant_id, text FROM turns ORDER BY conversation_id, turn_index"
    ).to_pylist()
    assert [tuple(r.values()) for r in got] == expected
