"""A table's values are imported as ``query`` reads them, whatever Python can hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import convbank
from convbank.cli.main import cli
from convbank.errors import CorpusImportError, NotBuiltError


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


@pytest.mark.parametrize(
    ("kind", "column"), [("csv", "x"), ("csv", "t"), ("parquet", "x"), ("dataframe", "x")]
)
def test_a_table_whose_columns_repeat_a_name_is_refused_never_halved(
    tmp_path: Path, kind: str, column: str
) -> None:
    """Before: a CSV or Parquet table of two columns ``x`` was imported with the second's
    values only (``{"x": 2}``, the ``1`` beside it gone), and of two ``t`` (the text) with the
    second's text, exit 0 (3 of 3 files); a pandas DataFrame's was pyarrow's ``ValueError``.
    Now each is one line naming the column, nothing imported."""
    names = ["c", "s", "t", "x", column]
    rows = [["1", "a", "hi", "1", "2"], ["1", "b", "yo", "3", "4"]]
    mapping = {"conversation_id": "c", "speaker": "s", "text": "t"}
    source: Any
    if kind == "csv":
        source = tmp_path / "t.csv"
        source.write_text("\n".join(",".join(r) for r in [names, *rows]) + "\n", encoding="utf-8")
    elif kind == "parquet":
        source = tmp_path / "t.parquet"
        pq.write_table(
            pa.Table.from_arrays([pa.array(list(c)) for c in zip(*rows, strict=True)], names=names), source
        )
    else:
        import pandas as pd

        source = pd.DataFrame(rows, columns=names)
    where = "DataFrame" if kind == "dataframe" else str(source)
    with pytest.raises(CorpusImportError) as info:
        convbank.import_conversations(source, name="mine", format="table", mapping=mapping)
    assert str(info.value) == (
        f"{where}, file: expected each column named once; {column!r} names 2 columns (rename all but one) "
        "(nothing was imported; --skip-bad imports the rest)"
    )
    with pytest.raises(NotBuiltError):  # the bank as it was: empty
        convbank.sql("SELECT 1 FROM conversations")


@pytest.mark.parametrize(
    ("maps", "error"),
    [
        (["conversation_id=c", "speaker=s", "text=t"], None),
        (["conversation_id=c,speaker=s", "text=t"], None),
        (
            ["conversation_id=c,speaker=s,text=t,text=u"],
            "text is given two columns, 't' and 'u'; give it one",
        ),
        (
            ["conversation_id=c,speaker=s,text=u", "text=t"],
            "text is given two columns, 'u' and 't'; give it one",
        ),
    ],
    ids=["one-pair-each", "two-maps", "a-name-twice", "a-name-twice-in-two-maps"],
)
def test_every_map_given_counts_and_a_name_given_twice_is_refused(
    tmp_path: Path, maps: list[str], error: str | None
) -> None:
    """Before: only the last ``--map`` counted (``--map conversation_id=c --map speaker=s
    --map text=t`` was `expected a column 'conversation_id'`, exit 2) and a name given twice
    took its last column without a word (``text=t,text=u`` imported ``u`` as the text, exit 0)."""
    (tmp_path / "t.csv").write_text("c,s,t,u\n1,a,hi,other\n1,b,yo,other\n", encoding="utf-8")
    args = [a for m in maps for a in ("--map", m)]
    done = CliRunner().invoke(cli, ["import", str(tmp_path / "t.csv"), "--name", "mine", *args])
    if error is None:
        assert done.exit_code == 0, done.output
        texts = convbank.sql("SELECT text FROM turns ORDER BY turn_index").column("text").to_pylist()
        assert texts == ["hi", "yo"]
    else:
        assert done.exit_code == 2
        assert done.output.splitlines()[-1] == f"Error: Invalid value: {error}"


def test_a_binary_value_is_its_utf8_text_or_a_bad_row_never_replaced(tmp_path: Path) -> None:
    """Before: a Parquet binary column's bytes that are not UTF-8 were imported with U+FFFD in
    their place (``b"\\xff\\xfe\\x00"`` as ``"\\ufffd\\ufffd\\x00"``), exit 0, so two values
    could become one (2 of 2 rows). Now bytes of UTF-8 text are that text, and others are a
    bad row naming the column."""
    rows = {"c": ["1", "1"], "s": ["a", "b"], "t": ["hi", "yo"]}
    good = pa.array([b"ok", "caf\u00e9".encode()], pa.binary())
    pq.write_table(pa.table({**rows, "u": good}), tmp_path / "good.parquet")
    pq.write_table(
        pa.table({**rows, "u": good, "h": pa.array([b"\xff\xfe\x00", b"\x80abc"], pa.binary())}),
        tmp_path / "bad.parquet",
    )
    mapping = {"conversation_id": "c", "speaker": "s", "text": "t"}
    convbank.import_conversations(tmp_path / "good.parquet", name="good", format="table", mapping=mapping)
    assert [t.meta for t in convbank.load("good")["1"].turns] == [{"u": "ok"}, {"u": "caf\u00e9"}]
    with pytest.raises(CorpusImportError) as info:
        convbank.import_conversations(tmp_path / "bad.parquet", name="bad", format="table", mapping=mapping)
    assert str(info.value) == (
        f"{tmp_path / 'bad.parquet'}, row 1: expected column 'h' to hold text, or bytes of UTF-8 text "
        "(invalid start byte at byte 0) (nothing was imported; --skip-bad imports the rest)"
    )


def test_a_column_named_timestamp_beside_the_mapped_timestamp_is_refused_never_overwritten(
    tmp_path: Path,
) -> None:
    """Before: with ``--map timestamp=ts``, a column named ``timestamp`` went to the turns'
    meta ``timestamp`` and was overwritten by ``ts`` (``local-a`` gone), exit 0 (2 of 2 rows).
    Now it is one line naming both columns; mapping ``timestamp=timestamp`` imports it."""
    path = tmp_path / "t.csv"
    path.write_text("c,s,t,ts,timestamp\n1,a,hi,100,local-a\n1,b,yo,200,local-b\n", encoding="utf-8")
    mapping = {"conversation_id": "c", "speaker": "s", "text": "t", "timestamp": "ts"}
    with pytest.raises(CorpusImportError) as info:
        convbank.import_conversations(path, name="mine", format="table", mapping=mapping)
    assert str(info.value) == (
        f"{path}, file: expected no column 'timestamp' beside the timestamp column 'ts' (--map "
        "timestamp=...), whose values the turns keep as their meta 'timestamp'; rename one (nothing "
        "was imported; --skip-bad imports the rest)"
    )
    convbank.import_conversations(
        path, name="mine", format="table", mapping={**mapping, "timestamp": "timestamp"}
    )
    assert [t.meta for t in convbank.load("mine")["1"].turns] == [
        {"ts": 100, "timestamp": "local-a"},
        {"ts": 200, "timestamp": "local-b"},
    ]


@pytest.mark.parametrize(
    ("name", "rows", "said"),
    [
        ("t.csv", '1,a,"hi\n1,b,yo\n2,a,x\n', "t.csv, line 2: expected a closing quote"),
        ("t.tsv", '1\ta\tok\n1\tb\t"hi\n2\ta\tx\n', "t.tsv, line 3: expected a closing quote"),
        ("t.csv", '1,a,5\'11"\n1,b,"two\nlines, ""quoted"""\n', None),  # a bare quote: odd, but closed
    ],
    ids=["csv", "tsv", "a-bare-quote"],
)
def test_a_quote_never_closed_is_refused_never_read_to_the_end(
    tmp_path: Path, name: str, rows: str, said: str | None
) -> None:
    """Before: Arrow's reader took the rest of the file as the open field's text: ``"hi`` and
    the rows after it one turn, ``hi\\n1,b,yo\\n2,a,x\\n``, exit 0 (2 of 2 files)."""
    path = tmp_path / name
    path.write_text(("c\ts\tt\n" if name.endswith(".tsv") else "c,s,t\n") + rows, encoding="utf-8")
    args = ["import", str(path), "--name", "mine", "--map", "conversation_id=c,speaker=s,text=t"]
    done = CliRunner().invoke(cli, args)
    if said is not None:
        assert done.exit_code == 2 and done.stderr.startswith(f"error: {tmp_path / said}"), done.output
        with pytest.raises(NotBuiltError):
            convbank.sql("SELECT * FROM turns")
        return
    assert done.exit_code == 0, done.output
    texts = convbank.sql("SELECT text FROM turns ORDER BY turn_index").to_pylist()
    assert [r["text"] for r in texts] == ["5'11\"", 'two\nlines, "quoted"']


@pytest.mark.parametrize(
    ("header", "cell", "mapping", "expected"),
    [
        ("x", "1e400", "", "column 'x' to hold a finite number, not inf"),
        ("x", "-inf", "", "column 'x' to hold a finite number, not -inf"),
        ("turn", "1e400", ",turn=turn", "column 'turn' to hold a finite number, not inf"),
        ("timestamp", "inf", ",timestamp=timestamp", "column 'timestamp' to hold a finite number, not inf"),
    ],
)
def test_a_number_json_cannot_hold_is_a_bad_row_never_null(
    tmp_path: Path, header: str, cell: str, mapping: str, expected: str
) -> None:
    """Sixteenth pass. Before: a CSV cell read as an infinity (``1e400``, ``-inf``) was
    imported as meta ``null``, its turn order or timestamp too, exit 0 (4 of 4 columns). Now a
    row naming the column, exit 2, as a JSON line holding ``1e400`` is; ``--skip-bad`` imports
    the rest."""
    (tmp_path / "t.csv").write_text(f"c,s,t,{header}\n1,a,hi,1\n2,b,yo,{cell}\n", encoding="utf-8")
    args = [
        "import",
        str(tmp_path / "t.csv"),
        "--name",
        "mine",
        "--map",
        f"conversation_id=c,speaker=s,text=t{mapping}",
    ]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 2, done.output
    assert f"t.csv, row 3: expected {expected} (nothing was imported" in done.output
    kept = CliRunner().invoke(cli, [*args, "--skip-bad", str(tmp_path / "bad.jsonl")])
    assert kept.exit_code == 0, kept.output
    assert convbank.sql("SELECT conversation_id FROM turns").to_pylist() == [{"conversation_id": "1"}]


def test_a_nan_in_a_parquet_list_is_a_bad_row_never_null(tmp_path: Path) -> None:
    """Before: a NaN in a Parquet list column was imported as ``[null]``, exit 0."""
    table = {"conversation_id": ["1"], "participant_id": ["a"], "text": ["x"], "v": [[float("nan")]]}
    pq.write_table(pa.table(table), tmp_path / "t.parquet")
    done = CliRunner().invoke(cli, ["import", str(tmp_path / "t.parquet"), "--name", "mine"])
    assert done.exit_code == 2, done.output
    assert "t.parquet, row 1: expected column 'v' to hold a finite number, not nan" in done.output


def test_a_hugging_face_datasets_bytes_are_their_utf8_text_as_a_tables_are() -> None:
    """Before: a Hugging Face dataset's binary column was imported as base64 (``b"abc"`` as
    ``"YWJj"``, ``b"\\xff\\x00"`` as ``"/wA="``) and a duration as ISO text, where a table's are
    the UTF-8 text and the seconds (3 of 3 values). Now one rule for both readers."""
    import datetime

    import datasets
    import pandas as pd

    messages = [{"role": "user", "content": "hi", "x": b"m"}]
    when = datetime.timedelta(seconds=90)
    ds = datasets.Dataset.from_list([{"messages": messages, "blob": b"abc", "d": when}])
    convbank.import_conversations(ds, name="hf_bytes")
    conv = convbank.load("hf_bytes")[0]
    assert (conv.meta, conv.turns[0].meta) == ({"blob": "abc", "d": 90.0}, {"x": "m"})
    frame = pd.DataFrame(
        {"conversation_id": ["c"], "participant_id": ["a"], "text": ["hi"], "blob": [b"abc"], "d": [when]}
    )
    convbank.import_conversations(frame, name="table_bytes")
    assert convbank.load("table_bytes")[0].turns[0].meta == {"blob": "abc", "d": 90.0}
    bad = datasets.Dataset.from_list([{"messages": messages, "bad": b"\xff\x00"}])
    with pytest.raises(CorpusImportError) as info:
        convbank.import_conversations(bad, name="hf_bad")
    assert str(info.value) == (
        "Dataset, train row 1: expected column 'bad' to hold text, or bytes of UTF-8 text "
        "(invalid start byte at byte 0) (nothing was imported; --skip-bad imports the rest)"
    )


def test_a_parquet_time32_column_is_imported_as_its_times(tmp_path: Path) -> None:
    """Nineteenth pass. Before: a Parquet column of ``time32`` (seconds or milliseconds) was an
    ``ArrowNotImplementedError: Unsupported cast from time32[ms] to int64`` traceback, exit 1,
    nothing imported (2 of 2 files)."""
    ticks = pa.array([1_000, 86_400_000], pa.int32())
    table = {"conversation_id": ["c", "c"], "participant_id": ["a", "b"], "text": ["x", "y"]}
    pq.write_table(pa.table({**table, "t": ticks.cast(pa.time32("ms"))}), tmp_path / "t.parquet")
    convbank.import_conversations(tmp_path / "t.parquet", name="mine")
    assert [t.meta for t in convbank.load("mine")["c"].turns] == [{"t": "00:00:01"}, {"t": "24:00:00"}]


OWN = "dataset,config,split,conversation_id,turn_index,participant_id,role,kind,text,meta\n"


@pytest.mark.parametrize(
    ("cell", "why"),
    [
        ('"{""a"":"', "expected JSON (Input data was truncated)"),
        ('"{""k"":1,""k"":2}"', 'expected each key of a JSON object once (the key "k" is given twice in $; '
         "a reader would keep the last alone)"),
        ('"[1]"', "not list"),
    ],
)  # fmt: skip
def test_a_bad_meta_cell_of_convbanks_csv_is_a_bad_row(tmp_path: Path, cell: str, why: str) -> None:
    """Nineteenth pass. Before: a ``meta`` cell of convbank's own CSV that was not JSON or not
    an object was a ``msgspec`` traceback, exit 1, and one giving a key twice was imported
    with the first value dropped, exit 0 (3 of 3 cells)."""
    path = tmp_path / "t.csv"
    path.write_text(OWN + f"mine,default,train,c,0,u,user,message,hi,{cell}\n")
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(path, name="mine")
    assert str(caught.value) == (
        f"{path}, row 2: expected column 'meta' to hold a JSON object ({why}) "
        "(nothing was imported; --skip-bad imports the rest)"
    )


@pytest.mark.parametrize("inside", [False, True], ids=["struct", "list-of-structs"])
def test_a_parquet_struct_repeating_a_field_name_is_refused_never_halved(
    tmp_path: Path, inside: bool
) -> None:
    """Nineteenth pass. Before: a Parquet struct column of two fields ``a`` (or a list of such
    structs) was imported as ``{"a": 3}``, the first field's ``1`` dropped without a word,
    exit 0 (2 of 2 files), where two columns of one name are refused."""
    struct = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    column = pa.ListArray.from_arrays(pa.array([0, 1, 2]), struct) if inside else struct
    table = {"conversation_id": ["c", "c"], "participant_id": ["a", "b"], "text": ["x", "y"], "s": column}
    pq.write_table(pa.table(table), tmp_path / "t.parquet")
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(tmp_path / "t.parquet", name="mine")
    assert str(caught.value) == (
        f"{tmp_path / 't.parquet'}, file: expected each field of column 's' named once; 'a' names 2 fields "
        "(nothing was imported; --skip-bad imports the rest)"
    )


@pytest.mark.parametrize("rows", [3, 40_000], ids=["one block", "many blocks"])
def test_a_csv_cell_that_is_not_utf8_refuses_its_conversation_alone(tmp_path: Path, rows: int) -> None:
    """Before: a byte that is not UTF-8 in a CSV's cell refused the whole file (one block), or,
    past Arrow's first block, every row after that block's start: with --skip-bad, 23,792 of
    40,000 good turns imported, exit 0, the rest said as ``rows after row 23795`` (2 of 2).
    Now that cell's conversation is the bad record, said by its row; every other is imported."""
    path = tmp_path / "turns.csv"
    good = b"".join(b"c%d,p%d,hello there this is a line of text\n" % (i // 2, i % 2) for i in range(rows))
    path.write_bytes(b"conversation_id,participant_id,text\n" + good + b"cz,a,fine\ncz,b,caf\xe9!\n")
    with pytest.raises(CorpusImportError) as info:
        convbank.import_conversations(path, name="u8")
    assert str(info.value) == (
        f"{path}, row {rows + 3}: expected column 'text' to hold UTF-8 text (invalid continuation byte "
        "at byte 3) (nothing was imported; --skip-bad imports the rest)"
    )
    rejects = tmp_path / "rejects.jsonl"
    convbank.import_conversations(path, name="u8", skip_bad=rejects)
    corpus = convbank.load("u8")
    assert (len(corpus), sum(len(c.turns) for c in corpus)) == ((rows + 1) // 2, rows)
    (bad,) = [msgspec.json.decode(line) for line in rejects.read_bytes().splitlines()]
    assert (bad["where"], bad["record"]) == (
        f"row {rows + 3}",
        '{"conversation_id":"cz","participant_id":"b","text":"caf\\\\xe9!"}',
    )


@pytest.mark.parametrize("rows", [3, 40_000], ids=["one block", "many blocks"])
def test_a_ragged_csv_row_refuses_its_conversation_alone_said_by_its_row(tmp_path: Path, rows: int) -> None:
    """Twentieth pass. Before: a row of more (or fewer) cells than the header in Arrow's first
    block refused the whole file said as ``file``; past it, every row after that block's start,
    said as ``rows after row 32147`` (2 of 2 each). Now its conversation is the bad record,
    said by its row, its text the record; every other conversation is imported."""
    path = tmp_path / "turns.csv"
    good = b"".join(b"c%d,p%d,hello there this is a line of text\n" % (i // 2, i % 2) for i in range(rows))
    tail = b'cz,a,fine\ncz,b,"two\nlines",extra\ncy,a,ok\n,x\n'
    path.write_bytes(b"conversation_id,participant_id,text\n" + good + tail)
    with pytest.raises(CorpusImportError) as info:
        convbank.import_conversations(path, name="ragged")
    assert str(info.value) == (
        f"{path}, row {rows + 3}: expected 3 cells, one for each column of the header; got 4 "
        "(nothing was imported; --skip-bad imports the rest)"
    )
    rejects = tmp_path / "rejects.jsonl"
    convbank.import_conversations(path, name="ragged", skip_bad=rejects)
    corpus = convbank.load("ragged")
    assert (len(corpus), sum(len(c.turns) for c in corpus)) == ((rows + 1) // 2 + 1, rows + 1)
    said = [msgspec.json.decode(line) for line in rejects.read_bytes().splitlines()]
    assert [(bad["where"], bad["expected"][-5:], bad["record"]) for bad in said] == [
        (f"row {rows + 3}", "got 4", 'cz,b,"two\nlines",extra'),
        (f"row {rows + 5}", "got 2", ",x"),
    ]


def test_a_csv_of_semicolons_is_read_by_its_semicolons(tmp_path: Path) -> None:
    """Before: a ``.csv`` a spreadsheet wrote with semicolons (where a comma is the decimal
    mark) was refused, its header one column ``conversation_id;participant_id;text`` (2 of 2
    files). Now a header of semicolons and no comma separates by semicolons."""
    path = tmp_path / "t.csv"
    path.write_text('conversation_id;participant_id;text;score\nc1;a;"hi, there";1,5\nc1;b;yo;x\n')
    convbank.import_conversations(path, name="mine")
    turns = [(t.participant_id, t.text, t.meta) for t in convbank.load("mine")["c1"].turns]
    assert turns == [("a", "hi, there", {"score": "1,5"}), ("b", "yo", {"score": "x"})]


@pytest.mark.parametrize("separator", [",", ";"])
def test_a_spreadsheets_separator_line_is_said_to_be_one(tmp_path: Path, separator: str) -> None:
    """Before: a CSV beginning with Excel's ``sep=,`` line was refused as having the columns
    ``sep=, `` and nothing said what that line was (2 of 2 files)."""
    path = tmp_path / "t.csv"
    path.write_text(
        f"sep={separator}\nconversation_id{separator}participant_id{separator}text\nc1{separator}a{separator}hi\n"
    )
    with pytest.raises(CorpusImportError) as caught:
        convbank.import_conversations(path, name="mine")
    assert str(caught.value) == (
        f"{path}, file: expected a column 'conversation_id' (conversation_id; name it with --map "
        "conversation_id=COLUMN), the file's columns: sep=, ; its first line is a spreadsheet's "
        "separator line ('sep=' and a separator): delete it (nothing was imported; --skip-bad "
        "imports the rest)"
    )
