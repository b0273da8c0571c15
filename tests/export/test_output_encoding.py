"""One CSV writer and one JSON encoder for every command (issue 35, item 5).

CSV: a field holding a bare carriage return is quoted by ``export --format csv``, ``query
--format csv`` and the viewer's download alike (before, the last two wrote it unquoted: the
row split in two, and the split-off line ``=1+1`` escaped the viewer's formula guard).
JSON: the bidi controls (U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C) and the C1
controls are ``\\uXXXX`` escapes in ``query --format json/ndjson``, ``stats --json``, ``show
--json``, ``raw`` and the viewer's ``?format=json`` (before, printed raw).

A CaSiNo bank whose first annotated dialogue holds the texts is built once for the module."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from starlette.testclient import TestClient

from convbank.cli.main import cli
from convbank.store import Bank
from convbank.web.app import create_app
from testsupport import casino_home_with

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ESCAPED = "".join(f"\\u{ord(c):04x}" for c in BIDI)
TEXT = f"deal?\r=1+1 {BIDI}txt.exe"
LABEL = f"self-need{chr(0x202E)}"


@pytest.fixture(scope="module")
def bidi_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield casino_home_with(tmp_path_factory.mktemp("bidi"), TEXT, LABEL)


def run(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.setenv("CONVBANK_HOME", str(home))
    return CliRunner().invoke(cli, list(args))


def _raw_bidi(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if c in BIDI or 0x80 <= ord(c) <= 0x9F]


def test_a_bare_cr_is_quoted_in_every_csv(bidi_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``query --format csv`` and the viewer wrote ``a\\r=1+1`` unquoted (two rows in
    a spreadsheet, the second a live formula ``=1+1``)."""
    sql = "SELECT 'a' || chr(13) || '=1+1' AS x, 2 AS y"
    query = run(bidi_home, monkeypatch, "query", sql, "--format", "csv")
    assert query.exit_code == 0
    assert query.stdout_bytes == b'x,y\n"a\r=1+1",2\n'
    client = TestClient(create_app(Bank(bidi_home / "bank")), base_url="http://127.0.0.1")
    viewer = client.get("/sql", params={"q": sql, "format": "csv"})
    assert viewer.status_code == 200 and viewer.content == b'x,y\n"a\r=1+1",2\n'
    guarded = client.get("/sql", params={"q": "SELECT chr(13) || '=1+1' AS x", "format": "csv"})
    assert guarded.content == b'x\n"\'\r=1+1"\n'  # starts with CR: guarded and quoted
    out = bidi_home / "out"
    assert run(bidi_home, monkeypatch, "export", "casino", "--format", "csv", "-o", str(out)).exit_code == 0
    data = (out / "casino_default_train.turns.csv").read_bytes()
    assert b'"deal?\r=1+1 ' in data and b"\n=1+1" not in data and b"\r=1+1 " + BIDI.encode() in data
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    assert [r[8] for r in rows].count(TEXT) == 1
    assert all(len(r) == 10 for r in rows)  # no row split


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("json", f'[{{"x":"a{ESCAPED}b\\u0085"}}]\n'),
        ("ndjson", f'{{"x":"a{ESCAPED}b\\u0085"}}\n'),
    ],
)
def test_query_json_escapes_bidi_controls(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, expected: str
) -> None:
    """Before: U+202E and the other bidi controls were printed raw (``txt.exe`` shown as
    ``exe.txt``); C1 controls were already escaped."""
    sql = "SELECT 'a' || " + " || ".join(f"chr({ord(c)})" for c in BIDI) + " || 'b' || chr(133) AS x"
    result = run(bidi_home, monkeypatch, "query", sql, "--format", fmt)
    assert result.exit_code == 0
    assert result.stdout_bytes == expected.encode("ascii")
    assert json.loads(result.stdout.splitlines()[0].strip("[]")) == {"x": f"a{BIDI}b\x85"}


def test_every_json_writer_escapes_bidi_controls(bidi_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``stats --json``, ``show --json``, ``raw`` and the viewer's ``?format=json``
    printed U+202E and the other bidi controls raw."""
    dialogue = (bidi_home / "dialogue").read_text(encoding="utf-8")
    outputs = {
        "stats": run(bidi_home, monkeypatch, "stats", "casino", "--json"),
        "show": run(bidi_home, monkeypatch, "show", "casino", dialogue, "--json"),
        "raw": run(bidi_home, monkeypatch, "raw", "casino", "--split", "train"),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.output[-500:])
        assert _raw_bidi(result.stdout) == [], name
    assert "self-need\\u202e" in outputs["stats"].stdout
    assert f"deal?\\r=1+1 {ESCAPED}txt.exe" in outputs["show"].stdout
    assert f"deal?\\r=1+1 {ESCAPED}txt.exe" in outputs["raw"].stdout
    raw = [json.loads(line) for line in outputs["raw"].stdout.splitlines()]
    assert [t["text"] for r in raw for t in r["chat_logs"]].count(TEXT) == 1  # the same JSON
    client = TestClient(create_app(Bank(bidi_home / "bank")), base_url="http://127.0.0.1")
    page = client.get(f"/datasets/casino/conversations/{dialogue}", params={"format": "json"})
    assert page.status_code == 200 and _raw_bidi(page.text) == []
    assert f"deal?\\r=1+1 {ESCAPED}txt.exe".encode() in page.content
    assert [t["text"] for t in page.json()["turns"]].count(TEXT) == 1


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_a_repeated_column_name_loses_no_value(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Before: ``SELECT 1 AS a, 2 AS a`` was ``{"a":2}`` in json and ndjson, the first
    column's value gone without a word. Now each repeat is keyed as DuckDB names it when
    the result is selected from, and stderr says so."""
    sql = "SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS a"
    result = run(bidi_home, monkeypatch, "query", sql, "--format", fmt)
    assert result.exit_code == 0
    row = '{"a":1,"a_1":2,"a_1_1":3,"a_2":4}'
    assert result.stdout == (f"[{row}]\n" if fmt == "json" else f"{row}\n")
    assert result.stderr == (
        "note: column names repeated; the keys of the repeats: 'a' as 'a_1', 'a_1' as 'a_1_1', 'a' as 'a_2'\n"
    )
    csv_out = run(bidi_home, monkeypatch, "query", sql, "--format", "csv")
    assert csv_out.stdout == "a,a,a_1,a\n1,2,3,4\n"  # CSV keeps the names as they are


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_json_text_json_cannot_hold_is_written_not_a_traceback(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Before: a JSON column holding ``1e400`` (``'1e400'::JSON``, ``json_extract``) or
    DuckDB's ``Infinity`` and ``NaN`` (``to_json('inf'::DOUBLE)``) was a msgspec traceback,
    exit 1, in json and ndjson (and at times the process aborted: ``terminate called``).
    Now a number beyond a double is written exactly, and NaN and Infinity are null, as a
    DOUBLE column's are."""
    sql = (
        "SELECT '1e400'::JSON AS big, to_json('inf'::DOUBLE) AS inf, to_json('nan'::DOUBLE) AS nan, "
        "'nan'::DOUBLE AS d, json_extract('{\"x\": [-1e999, 1]}', '$.x') AS x, ['1e400'::JSON] AS l"
    )
    result = run(bidi_home, monkeypatch, "query", sql, "--format", fmt)
    assert result.exit_code == 0, result.output
    row = '{"big":1E+400,"inf":null,"nan":null,"d":null,"x":[-1E+999,1],"l":[1E+400]}'
    assert result.stdout == (f"[{row}]\n" if fmt == "json" else f"{row}\n")
    assert json.loads(result.stdout.splitlines()[0].strip("[]"))["big"] == float("inf")


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_a_json_value_nested_past_the_decoders_depth_is_its_text(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Before: a JSON column nested 1,000 levels deep (``(repeat('[', 1000) || '1' ||
    repeat(']', 1000))::JSON``) was ``RecursionError: maximum recursion depth exceeded while
    deserializing an object``, a traceback, exit 1, in json and ndjson (2 of 2 runs each).
    Now it is written as its text, as JSON no reader takes is; a shallow one stays JSON."""
    deep = "[" * 5000 + "1" + "]" * 5000
    sql = (
        "SELECT (repeat('[', 5000) || '1' || repeat(']', 5000))::JSON AS d, "
        "[(repeat('{\"a\":', 1000) || '1' || repeat('}', 1000))::JSON] AS l, '[[1]]'::JSON AS s"
    )
    result = run(bidi_home, monkeypatch, "query", sql, "--format", fmt)
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout.splitlines()[0].strip("[]"))
    assert row == {"d": deep, "l": ['{"a":' * 1000 + "1" + "}" * 1000], "s": [[1]]}


TEMPORAL = (
    "SELECT 'infinity'::DATE AS a, '-infinity'::TIMESTAMP AS b, '294247-01-10'::DATE AS c, "
    "'290309-12-22 (BC) 00:00:00'::TIMESTAMP AS d, TIMESTAMP_NS '2020-01-01 00:00:00.123456789' AS e, "
    "{'f': 'infinity'::DATE} AS f, ['5877642-06-25 (BC)'::DATE, DATE '2020-01-02'] AS g"
)


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "table"])
def test_a_date_python_cannot_hold_is_written_as_duckdb_writes_it(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Before: DuckDB's ``infinity``, a year past 9999 or before 1 (a column, a struct's
    field, a list's item) was an ``OverflowError`` traceback from pyarrow, exit 1, in every
    format (csv at times aborted the process: "terminate called without an active
    exception"), and a ``TIMESTAMP_NS`` a msgspec traceback in json. Each is now DuckDB's
    own text; dates Python holds are written as ever."""
    result = run(bidi_home, monkeypatch, "query", TEMPORAL, "--format", fmt, "--max-width", "0")
    assert result.exit_code == 0, result.output
    if fmt in ("json", "ndjson"):
        row = (
            '{"a":"infinity","b":"-infinity","c":"294247-01-10","d":"290309-12-22 (BC) 00:00:00",'
            '"e":"2020-01-01T00:00:00.123456789","f":{"f":"infinity"},'
            '"g":["5877642-06-25 (BC)","2020-01-02"]}'
        )
        assert result.stdout == (f"[{row}]\n" if fmt == "json" else f"{row}\n")
    elif fmt == "csv":
        assert list(csv.reader(io.StringIO(result.stdout))) == [
            ["a", "b", "c", "d", "e", "f", "g"],
            [
                "infinity",
                "-infinity",
                "294247-01-10",
                "290309-12-22 (BC) 00:00:00",
                "2020-01-01 00:00:00.123456789",
                '{"f":"infinity"}',
                '["5877642-06-25 (BC)","2020-01-02"]',
            ],
        ]
    else:
        assert "│ infinity │ -infinity │ 294247-01-10 │ 290309-12-22 (BC) 00:00:00 │" in result.stdout


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "table"])
def test_the_end_of_a_day_is_written_as_duckdb_writes_it(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Eleventh pass. Before: DuckDB's ``TIME '24:00:00'`` (a column, a list's item, a
    struct's field) was written ``00:00:00``, pyarrow making it the start of the day without
    a word, in every format; other times are written as ever."""
    sql = (
        "SELECT TIME '24:00:00' AS t, [TIME '24:00:00', NULL, TIME '23:59:59.5'] AS l, "
        "{'x': TIME '24:00:00'} AS s, TIME '12:30' AS u, NULL::TIME AS n"
    )
    result = run(bidi_home, monkeypatch, "query", sql, "--format", fmt, "--max-width", "0")
    assert result.exit_code == 0, result.output
    if fmt in ("json", "ndjson"):
        row = '{"t":"24:00:00","l":["24:00:00",null,"23:59:59.500000"],"s":{"x":"24:00:00"},"u":"12:30:00","n":null}'
        assert result.stdout == (f"[{row}]\n" if fmt == "json" else f"{row}\n")
    elif fmt == "csv":
        assert list(csv.reader(io.StringIO(result.stdout))) == [
            ["t", "l", "s", "u", "n"],
            ["24:00:00", '["24:00:00",null,"23:59:59.500000"]', '{"x":"24:00:00"}', "12:30:00", ""],
        ]
    else:
        assert (
            '│ 24:00:00 │ ["24:00:00",null,"23:59:59.500000"] │ {"x":"24:00:00"} │ 12:30:00 │'
            in result.stdout
        )


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "table"])
def test_a_type_arrow_cannot_hold_is_written_as_duckdb_writes_it(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    """Twelfth pass. Before: DuckDB handed these over as Arrow that is not their value, and
    ``query`` printed that, exit 0: ``UHUGEINT`` ``2**128 - 1`` as ``-1`` (``2**127`` as
    ``-2**127``), ``BIT '101'`` as ``b'\\x05\\xfd'`` (``"Bf0="`` in JSON), ``TIMETZ
    '12:00:00+05:30'`` as ``12:00:00``, a ``TIME_NS`` cut to microseconds, a ``VARINT`` as
    bytes, an ``INTERVAL`` as ``MonthDayNano(months=1, ...)`` (``[1,0,10800000000000]``); in a struct, a list, a map or an array as well. Now DuckDB's text of each."""
    sql = (
        "SELECT 340282366920938463463374607431768211455::UHUGEINT AS u, "
        "170141183460469231731687303715884105728::UHUGEINT AS h, '101'::BIT AS b, "
        "TIMETZ '12:00:00+05:30' AS z, '12:00:00.123456789'::TIME_NS AS n, "
        "'1000000000000000000000000000000'::VARINT AS v, INTERVAL '1 month 3 hours' AS i, "
        "{'x': 2::UHUGEINT, 'y': ['01'::BIT]} AS s, MAP {'1'::BIT: TIMETZ '01:00:00-08'} AS m, "
        "[7::UHUGEINT]::UHUGEINT[1] AS a, 5 AS k"
    )
    result = run(bidi_home, monkeypatch, "query", sql, "--format", fmt, "--max-width", "0")
    assert result.exit_code == 0, result.output
    texts = [
        "340282366920938463463374607431768211455",
        "170141183460469231731687303715884105728",
        "101",
        "12:00:00+05:30",
        "12:00:00.123456789",
        "1" + "0" * 30,
        "1 month 03:00:00",
    ]
    if fmt in ("json", "ndjson"):
        row = json.loads(result.stdout)
        row = row[0] if fmt == "json" else row
        assert list(row.values()) == [*texts, {"x": "2", "y": ["01"]}, [["1", "01:00:00-08"]], ["7"], 5]
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(result.stdout)))
        assert rows[1] == [*texts, '{"x":"2","y":["01"]}', '[["1","01:00:00-08"]]', '["7"]', "5"]
    else:
        for text in texts:
            assert f" {text} " in result.stdout
        assert "-1 " not in result.stdout and "\\x05" not in result.stdout


def test_the_viewers_download_gives_the_values_query_gives(bidi_home: Path) -> None:
    """Twelfth pass. Before: the SQL console's rows were DuckDB's Python objects, so its CSV
    download (and its page) said ``INTERVAL '1 month 3 hours'`` was ``30 days, 3:00:00``,
    the date ``-infinity`` ``0001-01-01``, a ``TIME_NS`` cut to microseconds, and a list
    ``['a']`` in Python's words. Now the values ``query --format csv`` writes (DuckDB's text
    where Arrow or Python cannot hold one, lists and structs as JSON), guarded as ever."""
    sql = (
        "SELECT INTERVAL '1 month 3 hours' AS i, 'infinity'::DATE AS d, "
        "'12:00:00.123456789'::TIME_NS AS n, 340282366920938463463374607431768211455::UHUGEINT AS u, "
        "['a', NULL] AS l, {'x': '=1+1'} AS s, TIME '24:00:00' AS t, '=2' AS f"
    )
    with TestClient(create_app(Bank(bidi_home / "bank")), base_url="http://127.0.0.1") as client:
        answer = client.get("/sql", params={"q": sql, "format": "csv"})
        page = client.get("/sql", params={"q": sql})
    assert answer.status_code == 200, answer.text
    assert list(csv.reader(io.StringIO(answer.text)))[1] == [
        "1 month 03:00:00",
        "infinity",
        "12:00:00.123456789",
        "340282366920938463463374607431768211455",
        '["a",null]',
        '{"x":"=1+1"}',
        "24:00:00",
        "'=2",
    ]
    assert page.status_code == 200 and "30 days" not in page.text and "1 month 03:00:00" in page.text


def test_a_blob_is_the_same_base64_in_every_csv_and_json(
    bidi_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes are base64 wherever they are written as text (before: ``query --format csv`` and
    the viewer's download wrote Python's ``b'\\xff\\x00a'``, JSON ``/wBh``)."""
    sql = "SELECT '\\xFF\\x00a'::BLOB AS b, [1, 2] AS l, NULL::BLOB AS n"
    written = {
        fmt: run(bidi_home, monkeypatch, "query", sql, "--format", fmt).stdout for fmt in ("csv", "json")
    }
    client = TestClient(create_app(Bank(bidi_home / "bank")), base_url="http://127.0.0.1")
    written["viewer"] = client.get("/sql", params={"q": sql, "format": "csv"}).text
    assert written == {
        "csv": 'b,l,n\n/wBh,"[1,2]",\n',
        "json": '[{"b":"/wBh","l":[1,2],"n":null}]\n',
        "viewer": 'b,l,n\n/wBh,"[1,2]",\n',
    }
