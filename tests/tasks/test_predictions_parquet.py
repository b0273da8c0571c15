"""``write_predictions`` to a ``.parquet`` name writes any predictions a task's check takes and
reads them back as they were: typed where Arrow holds them as they are, else each as its JSON
text, the file's metadata saying so. Before: a label that is a string here and a boolean
there, an int beyond 64 bits (``2**64``: a finite score) and spans whose keys differ were a
pyarrow traceback (``bench --write-predictions p.parquet`` after the whole run, nothing
printed or saved), and spans whose extra keys differ read back with ``"note": None`` added
(5 of 6 kinds of predictions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from convbank.bench import BenchError, read_predictions, write_predictions

SPAN = {"start": 0, "end": 1, "type": "x"}
CASES = {
    "labels": {"a": ["x"], "b": []},
    "string and boolean": {"a": "yes", "b": True},
    "beyond 64 bits": {"a": 2**64, "b": 3},
    "keys that differ": {"a": [{**SPAN, "note": 1}], "b": [SPAN]},
    "values that differ": {"a": [{**SPAN, "note": 1}], "b": [{**SPAN, "note": "s"}]},
    "an empty object": {"a": [{}]},
}


@pytest.mark.parametrize("kind", list(CASES))
def test_parquet_predictions_read_back_as_they_were_written(tmp_path: Path, kind: str) -> None:
    predictions: dict[str, Any] = CASES[kind]
    path = write_predictions(tmp_path / "p.parquet", predictions)
    assert read_predictions(path) == predictions
    metadata = pq.read_schema(path).metadata or {}
    assert (metadata.get(b"convbank.predictions") == b"json") == (kind not in ("labels",))


@pytest.mark.parametrize("name", ["p.parquet", "p.jsonl"])
def test_predictions_are_written_and_read_by_a_path_given_as_text(tmp_path: Path, name: str) -> None:
    """Before: ``write_predictions("p.jsonl", ...)`` and ``read_predictions("p.jsonl")`` were
    AttributeErrors (``'str' object has no attribute 'suffix'``), 2 of 2 formats."""
    written = write_predictions(str(tmp_path / name), {"a": ["x"], "b": []})
    assert written == tmp_path / name
    assert read_predictions(str(tmp_path / name)) == {"a": ["x"], "b": []}


def test_a_json_prediction_that_is_not_json_is_one_line(tmp_path: Path) -> None:
    table = pa.table({"example_id": ["a"], "prediction": ["[1,"]})
    pq.write_table(table.replace_schema_metadata({b"convbank.predictions": b"json"}), tmp_path / "p.parquet")
    with pytest.raises(BenchError) as caught:
        read_predictions(tmp_path / "p.parquet")
    assert str(caught.value) == (
        f"{tmp_path / 'p.parquet'}: row 1's prediction is not JSON text nested at most 64 deep, "
        "as the file's metadata says its predictions are"
    )


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_file_name_the_system_holds_is_written_whole_however_long(tmp_path: Path, suffix: str) -> None:
    """Before: a name of 220 to 255 bytes, which the file itself can hold, was ``File name too
    long`` (its temporary file's name, ``.<name>.<pid>.<random>.tmp``, was not), 2 of 2 names."""
    path = tmp_path / ("x" * (255 - len(suffix)) + suffix)
    write_predictions(path, {"a": ["x"]})
    assert read_predictions(path) == {"a": ["x"]}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("", "error: --write-predictions: is empty; name a file\n"),
        (
            "nodir/p.jsonl",
            "error: nodir/p.jsonl: its folder nodir is not there; make it first, or name a file elsewhere\n",
        ),
        (  # before: exit 1 after the run (atomic_write refuses a device), 2 of 2 runs
            "/dev/null",
            "error: /dev/null: a device, not a regular file; name a file elsewhere\n",
        ),
        (  # before: exit 1 after the run, File name too long, 2 of 2 runs
            "x" * 300 + ".jsonl",
            f"error: {'x' * 300}.jsonl: its name is longer than the 255 bytes a file's name may be there; "
            "name a file elsewhere\n",
        ),
        (  # before: a file named out.parquet written (Path drops the separator), 2 of 2 runs
            "out.parquet/",
            "error: --write-predictions: 'out.parquet/' ends with a separator, so names a folder; "
            "name a file\n",
        ),
    ],
)
def test_a_predictions_file_that_cannot_be_written_is_said_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, said: str
) -> None:
    """Before: the model ran every fold, then the file could not be written: exit 1, the run
    neither printed nor saved (``""`` read as the current folder), 2 of 2 names."""
    from click.testing import CliRunner

    from convbank.cli.main import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        cli, ["bench", "casino-strategy", "-m", "random", "--write-predictions", name]
    )
    assert (result.exit_code, result.stderr) == (2, said)
    assert list(tmp_path.iterdir()) == []


def _footer_saying(path: Path, size: int, told: int) -> None:
    """Rewrite ``path``'s footer so that its row group's ``total_byte_size`` says ``told``
    where it says ``size`` (Thrift's zigzag varint, padded to the same length)."""
    import struct

    def varint(n: int) -> bytearray:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n >> 7 else 0))
            n >>= 7
            if not n:
                return out

    data = bytearray(path.read_bytes())
    length = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - length
    was, now = varint(size << 1), varint(told << 1)
    while len(now) < len(was):
        now[-1] |= 0x80
        now.append(0)
    footer = bytes(data[start : start + length])
    assert footer.count(bytes(was)) == 1
    data[start : start + length] = footer.replace(bytes(was), bytes(now))
    path.write_bytes(bytes(data))


def test_a_parquet_footer_that_says_less_than_its_pages_hold_is_refused_unread(tmp_path: Path) -> None:
    """Before: a file of 3 KB whose footer said its 8 MiB row group was 100 bytes was read
    whole (for a task of 300 MiB: 989 MB held, 1 of 1 files); the pages' own headers say what
    reading unpacks."""
    path = tmp_path / "p.parquet"
    table = pa.table({"example_id": ["a"], "prediction": pa.array(["x" * (8 << 20)], pa.string())})
    pq.write_table(table, path, compression="zstd", use_dictionary=False)
    size = pq.ParquetFile(path).metadata.row_group(0).total_byte_size
    _footer_saying(path, size, 100)
    assert pq.ParquetFile(path).metadata.row_group(0).total_byte_size == 100
    with pytest.raises(BenchError) as caught:
        read_predictions(path, examples=1)
    assert str(caught.value) == (
        f"{path}: 1 row, 8 MiB uncompressed: more than a predictions file of this task holds "
        "(102 rows, 1 MiB at most)"
    )
    assert read_predictions(path) == {"a": "x" * (8 << 20)}  # no task, no bound: read


@pytest.mark.parametrize(("nested", "arrow_schema"), [(False, True), (True, True), (False, False)])
def test_a_dictionary_taken_by_every_row_is_counted_as_its_rows_hold_it(
    tmp_path: Path, nested: bool, arrow_schema: bool
) -> None:
    """Before: a file of 21 KB whose 9,000 rows each took one dictionary value of 1.9 MB was
    held to 9 MB (the dictionary counted once), then made 17 GB of Python text: a
    ``MemoryError`` under ``ulimit -v``; one of 3 KB without Arrow's schema, whose 300 rows
    took a value of 60 MB, was read as text 64 rows at a time, ``realloc of size 3840000000
    failed`` (2 of 2 files). Now texts are read as dictionaries, counted from the indices."""
    rows = 300
    taken = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), pa.array(["x" * 20_000]))
    prediction = pa.ListArray.from_arrays(pa.array(range(rows + 1), pa.int32()), taken) if nested else taken
    ids = pa.array([f"e{i}" for i in range(rows)])
    path = tmp_path / "p.parquet"
    table = pa.table({"example_id": ids, "prediction": prediction})
    pq.write_table(table, path, compression="zstd", store_schema=arrow_schema)
    assert path.stat().st_size < 10_000
    with pytest.raises(BenchError) as caught:
        read_predictions(path, examples=150)
    assert str(caught.value) == (
        f"{path}: 256 rows, 5 MiB uncompressed: more than a predictions file of this task holds "
        "(400 rows, 3 MiB at most)"
    )


def test_a_page_of_many_values_in_few_bytes_is_counted_from_its_header(tmp_path: Path) -> None:
    """A page may say two million nulls in a few bytes; reading makes an offset for each."""
    prediction = pa.ListArray.from_arrays(
        pa.array([0, 2_000_000], pa.int32()), pa.nulls(2_000_000, pa.string())
    )
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"example_id": ["a"], "prediction": prediction}), path, compression="zstd")
    with pytest.raises(BenchError) as caught:
        read_predictions(path, examples=1)
    assert str(caught.value).startswith(f"{path}: 1 row, 15 MiB uncompressed: more than a predictions file")


def test_a_fixed_length_dictionary_value_taken_by_every_row_is_counted_from_the_headers(
    tmp_path: Path,
) -> None:
    """Before: a file of 1 KB whose 300 rows each took one 3 MB fixed-length value was read 256
    rows at a time before it was refused, 1.7 GB held (1 of 1 files)."""
    rows, width = 300, 20_000
    values = pa.array([b"x" * width], pa.binary(width))
    prediction = pa.DictionaryArray.from_arrays(pa.array([0] * rows, pa.int32()), values)
    path = tmp_path / "p.parquet"
    table = pa.table({"example_id": [f"e{i}" for i in range(rows)], "prediction": prediction})
    pq.write_table(table, path, compression="zstd", store_schema=False)
    with pytest.raises(BenchError) as caught:
        read_predictions(path, examples=150)
    assert str(caught.value) == (
        f"{path}: 300 rows, 6 MiB uncompressed: more than a predictions file of this task holds "
        "(400 rows, 3 MiB at most)"
    )


def test_a_map_prediction_is_read_within_bounds_not_called_unreadable(tmp_path: Path) -> None:
    """Pass 18. Before: a valid Parquet file whose predictions were a map was ``not a readable
    Parquet file (Function 'list_flatten' has no kernel matching input types (map<...>))``
    when read within the task's bounds (``bench --predictions``), 2 of 2 runs: its size was
    counted by flattening it as a list. Now it is read (a malformed prediction for the task's
    check to name), its dictionary keys counted as repeated."""
    kind = pa.map_(pa.string(), pa.int64())
    table = pa.table({"example_id": ["a", "b"], "prediction": pa.array([[("k", 1)], []], kind)})
    pq.write_table(table, tmp_path / "p.parquet")
    assert read_predictions(tmp_path / "p.parquet", examples=2) == {"a": [("k", 1)], "b": []}


@pytest.mark.parametrize("name", ["p.jsonl", "p.parquet"])
def test_a_prediction_json_has_no_number_for_is_refused_never_written_as_null(
    tmp_path: Path, name: str
) -> None:
    """Pass 19. Before: ``write_predictions(path, {"a": nan})`` wrote ``null`` in its place
    (JSONL, and Parquet, whose predictions it then wrote as JSON text), read back as None,
    exit 0 (2 of 2 formats; ``inf`` in a list of scores too). Now one line, nothing written."""

    path = tmp_path / name
    for prediction, shown in (
        (float("nan"), "nan"),
        ([0.5, float("-inf")], "-inf"),
        ({"s": [float("inf")]}, "inf"),
    ):
        with pytest.raises(BenchError) as caught:
            write_predictions(path, {"b": 1.0, "a": prediction})
        assert str(caught.value) == (
            f"{path}: the prediction of 'a' holds {shown}, which a predictions file cannot hold "
            "(JSON has no such number); give a finite number or null"
        )
        assert list(tmp_path.iterdir()) == []
    write_predictions(path, {"a": 1.5, "b": None})
    assert read_predictions(path) == {"a": 1.5, "b": None}


def test_a_parquet_struct_naming_a_field_twice_is_refused(tmp_path: Path) -> None:
    """Pass 19. Before: a prediction column of spans whose struct names ``start`` twice was
    read as ``[{'start': 3}]``, the first value dropped unsaid (pyarrow's own ``to_pylist``
    refuses it; 2 of 2 reads). Now one line, as a JSONL line naming a key twice is."""
    spans = pa.StructArray.from_arrays(
        [pa.array([1, 2]), pa.array([3, 4])],
        fields=[pa.field("start", pa.int64()), pa.field("start", pa.int64())],
    )
    path = tmp_path / "p.parquet"
    pq.write_table(
        pa.table({"example_id": ["a", "b"], "prediction": pa.ListArray.from_arrays([0, 1, 2], spans)}), path
    )
    with pytest.raises(BenchError) as caught:
        read_predictions(path)
    assert str(caught.value) == (
        f"{path}: the column 'prediction' holds a struct naming the field 'start' twice; "
        "each of a prediction's keys once"
    )
