"""A task's data out (examples and gold, per fold, JSONL and Parquet) and predictions in.

``convbank bench TASK --export DIR`` writes::

    DIR/<task>/task.json                      the protocol, the prediction's form, the folds
    DIR/<task>/<fold>/train.jsonl             what a model sees (example_id, group, inputs)
    DIR/<task>/<fold>/train.gold.jsonl        {example_id, gold}
    DIR/<task>/<fold>/test.jsonl, test.gold.jsonl
    ... and the same four as .parquet

(``<fold>`` is the fold's name as a file name, :func:`fold_folders`: ``volunteers-fold1``
for the fold ``volunteers/fold1`` of a run of several configs; ``task.json`` gives each
fold's ``folder``)
and ``--predictions FILE`` reads ``{example_id, prediction}`` rows from JSONL or Parquet.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from convbank._textio import foreign_encoding, json_line
from convbank._wording import counted
from convbank.bench._repeats import by_id, ids_text, refuse_repeated_field, refuse_repeated_key
from convbank.bench._writable import refuse_unwritable
from convbank.errors import BenchError
from convbank.tasks import Task, TaskData

__all__ = [
    "BYTES_PER_EXAMPLE",
    "LINE_LIMIT",
    "MAX_DEPTH",
    "export_task",
    "fold_folders",
    "read_predictions",
    "refuse_unwritable",
    "write_predictions",
]


def export_task(
    task: Task, data: TaskData, directory: Path | str, *, seed: int = 0, overwrite: bool = False
) -> list[Path]:
    """Write every fold's train and test examples and gold answers under
    ``directory/<task>/`` (JSONL and Parquet) and ``task.json``; returns the files. Written
    in a temporary folder and moved into place whole; like every export it replaces only
    what the same export wrote there before, unless ``overwrite``. An empty ``directory``
    (``""``) is refused, as ``bench --export ""`` is, never taken for the current folder.

    >>> from pathlib import Path
    >>> from convbank.bench import task_named
    >>> task = task_named("casino-strategy")
    >>> files = export_task(task, task.data(convbank.load("casino")), Path("out"))
    >>> len(files), str(files[0])
    (41, 'out/casino-strategy/task.json')
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from convbank._names import EMPTY_FOLDER, empty_folder
    from convbank.export._place import placed

    if empty_folder(directory):  # what --export "" is refused as; Path would take it for "."
        raise BenchError(f"directory: {EMPTY_FOLDER}", task=task.name)
    ids_text(f"{task.name}'s examples", (e.id for e in data.examples), task=task.name)
    directory = Path(directory)
    target = directory / task.name
    folders = fold_folders([f.name for f in data.folds])
    written: list[Path] = []
    record = {"dataset": task.dataset, "format": f"bench task {task.name}", "parts": _parts(data, seed)}
    with placed(directory, record, overwrite=overwrite) as (top, moved):
        tmp = top / task.name
        tmp.mkdir()
        describe = {
            **task.describe(),
            "seed": seed,
            "folds": [
                {"name": f.name, "folder": folder, "train": len(f.train), "test": len(f.test)}
                for f, folder in zip(data.folds, folders, strict=True)
            ],
            "details": data.details,
            "files": "per fold: train.jsonl, train.gold.jsonl, test.jsonl, test.gold.jsonl (and .parquet)",
            "predictions": "one {example_id, prediction} row per test example of every fold",
        }
        (tmp / "task.json").write_text(json.dumps(describe, indent=2, default=str) + "\n", encoding="utf-8")
        written.append(target / "task.json")
        for fold, folder in zip(data.folds, folders, strict=True):
            (tmp / folder).mkdir()
            for part, rows in (("train", fold.train), ("test", fold.test)):
                inputs = [data.examples[i].to_dict() for i in rows]
                gold = [{"example_id": data.examples[i].id, "gold": data.gold[i]} for i in rows]
                for stem, records in ((part, inputs), (f"{part}.gold", gold)):
                    plain = msgspec.to_builtins(records)
                    jsonl = tmp / folder / f"{stem}.jsonl"
                    jsonl.write_bytes(b"".join(json_line(msgspec.json.encode(r)) for r in plain))
                    table = (
                        pa.Table.from_pylist(plain)
                        if plain
                        else pa.table({"example_id": pa.array([], pa.string())})
                    )
                    pq.write_table(table, tmp / folder / f"{stem}.parquet")
                    written += [target / folder / f"{stem}.{ext}" for ext in ("jsonl", "parquet")]
        moved.append(tmp)
    return written


def _parts(data: TaskData, seed: int) -> list[str]:
    """What a task's export is of, for its record: the seed and its examples (their count and
    a digest of their ids and folds), so that the export of another config or corpus is
    another export, never taken for this one (``['seed 0', '593 examples 1f0c...']``)."""
    import hashlib

    ids = [e.id for e in data.examples]
    folds = [[f.name, list(f.train), list(f.test)] for f in data.folds]
    digest = hashlib.sha256(msgspec.json.encode([ids, folds])).hexdigest()[:16]
    return [f"seed {seed}", f"{counted(len(ids), 'example')} {digest}"]


LINE_LIMIT = 1 << 20
"""The longest line of a predictions file, in bytes (1 MiB; a ranking of 100 candidates
takes about 2 KiB)."""
BYTES_PER_EXAMPLE = 16 << 10
"""A predictions file's size may be 16 KiB per test example of the task (plus one line):
what reading it may cost is bounded by the task, not by the file."""
MAX_DEPTH = 64
"""The deepest nesting of ``[`` and ``{`` a line may hold (a row of spans holds 3), checked
before the line is decoded."""


def fold_folders(names: list[str]) -> list[str]:
    """The folder of each fold of an export: its name where that is a safe file name, else
    with each character other than letters, digits, ``-``, ``_`` and ``.`` as ``-`` (a
    run of several configs names its folds ``volunteers/fold1``), never starting with a dot,
    never the same for two folds (``-2``, ``-3``... added).

    >>> fold_folders(["volunteers/fold1", "fold1", "fold1", "..", ""])
    ['volunteers-fold1', 'fold1', 'fold1-2', 'fold', 'fold-2']
    """
    out: list[str] = []
    for name in names:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", name).lstrip(".")[:100] or "fold"
        chosen, n = safe, 1
        while chosen in out:
            n += 1
            chosen = f"{safe}-{n}"
        out.append(chosen)
    return out


def read_predictions(path: Path | str, *, examples: int | None = None) -> dict[str, Any]:
    """``{example_id: prediction}`` from a JSONL or Parquet file of ``{example_id,
    prediction}`` rows; a duplicate id, a row without either field or a line that is not
    JSON is a :class:`BenchError` naming the first few (and their count).

    The file is read as a stream, within bounds: a line of at most :data:`LINE_LIMIT`
    bytes, nested at most :data:`MAX_DEPTH` deep, and, when ``examples`` (the task's test
    examples) is given, at most :data:`BYTES_PER_EXAMPLE` bytes per example and twice as
    many rows: an endless stream (``/dev/zero``) or a flood of blank lines is refused after
    that much, in bounded memory.

    >>> from pathlib import Path
    >>> _ = Path("mine.jsonl").write_text('{"example_id": "a", "prediction": []}\\n\\n')
    >>> read_predictions(Path("mine.jsonl"))
    {'a': []}
    >>> _ = Path("deep.jsonl").write_text('{"example_id": "a", "prediction": ' + "[" * 100 + "]" * 100 + "}")
    >>> read_predictions(Path("deep.jsonl"))
    Traceback (most recent call last):
    convbank.errors.BenchError: deep.jsonl: line 1 is nested more than 64 deep; ...
    """
    path = Path(path)  # a str as the system names it; anything else Path's own TypeError
    limit = None if examples is None else max(examples, 1) * BYTES_PER_EXAMPLE + LINE_LIMIT
    most_rows = None if examples is None else 2 * examples + 100
    rows: list[tuple[int, Any]] = []
    if path.suffix == ".parquet":
        rows = _parquet_rows(path, limit, most_rows)
    else:
        bad: list[int] = []
        bad_count = 0
        for number, line in _lines(path, limit):
            if not rows and not bad_count and line.lstrip().startswith(b"["):
                raise _an_array(path, number)
            if _too_deep(line):
                raise BenchError(
                    f"{path}: line {number:,} is nested more than {MAX_DEPTH} deep; "
                    'each line is {"example_id": ..., "prediction": ...}',
                    path=path,
                    line=number,
                )
            try:
                rows.append((number, msgspec.json.decode(line)))
            except msgspec.DecodeError:
                bad_count += 1
                bad += [number] if len(bad) < 3 else []
            else:
                refuse_repeated_key(path, number, line, rows[-1][1])
            if most_rows is not None and len(rows) + bad_count > most_rows:
                raise BenchError(
                    f"{path}: more than {most_rows:,} rows, for a task of {examples:,} test examples; "
                    'each example once, as {"example_id": ..., "prediction": ...}',
                    path=path,
                )
        if bad_count:
            raise BenchError(
                f"{path}: {bad_count:,} line(s) are not JSON (line {', '.join(map(str, bad))}"
                f'{", ..." if bad_count > 3 else ""}); each line is {{"example_id": ..., "prediction": ...}}',
                path=path,
                line=bad[0],
            )
    return by_id(path, rows)


_CHUNK = 1 << 20
_TEXT = re.compile(rb"[^\n]+")


def _lines(path: Path, limit: int | None) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of every line holding more than white space, read 1 MiB at a
    time (a UTF-8 byte-order mark at the start left out, as the importers do): a line longer
    than :data:`LINE_LIMIT`, or more than ``limit`` bytes in all, is a :class:`BenchError` as
    soon as it is seen."""
    try:
        f = path.open("rb")
    except OSError as exc:
        raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})", path=path) from exc
    with f:
        number, size, rest = 1, 0, b""  # number: the line that ``rest`` begins
        while True:
            try:
                chunk = f.read(_CHUNK)
            except OSError as exc:
                raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})", path=path) from exc
            size += len(chunk)
            if limit is not None and size > limit:
                raise BenchError(
                    f"{path}: larger than {_mib(limit)} ({BYTES_PER_EXAMPLE >> 10} KiB a test example of "
                    'the task); a predictions file holds one {"example_id": ..., "prediction": ...} '
                    "line per test example",
                    path=path,
                )
            buffer = rest + chunk
            if size == len(chunk):  # the first chunk: a byte-order mark (Notepad's) is not data
                if (foreign := foreign_encoding(chunk[:4])) is not None:  # UTF-16: no lines of NULs
                    raise BenchError(f"{path}: {foreign}", path=path, line=1)
                buffer = buffer.removeprefix(b"\xef\xbb\xbf")
            end = len(buffer) if not chunk else buffer.rfind(b"\n") + 1
            position = 0
            for match in _TEXT.finditer(buffer, 0, end):
                number += buffer.count(b"\n", position, match.start())
                position = match.start()
                line = match.group()
                if len(line) - line.endswith(b"\r") > LINE_LIMIT:  # a CRLF's CR ends it, no part of it
                    raise _too_long(path, number)
                if line.strip():
                    yield number, line
            number += buffer.count(b"\n", position, end)
            rest = buffer[end:]
            if len(rest) > LINE_LIMIT + 1:  # a whole line, and the CR of its CRLF
                raise _too_long(path, number)
            if not chunk:
                return


def _an_array(path: Path, number: int) -> BenchError:
    """A predictions file that is one JSON array of rows (``[{"example_id": ...}, ...]``),
    seen from its first line: said as such, never as rows without their fields."""
    return BenchError(
        f'{path}: a JSON array (line {number:,} begins with "["); a predictions file holds one JSON '
        'object a line (JSON Lines), {"example_id": ..., "prediction": ...}, not an array of them',
        path=path,
        line=number,
    )


def _too_long(path: Path, number: int) -> BenchError:
    return BenchError(
        f"{path}: line {number:,} is longer than {_mib(LINE_LIMIT)}; "
        'each line is {"example_id": ..., "prediction": ...}',
        path=path,
        line=number,
    )


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def _too_deep(line: bytes) -> bool:
    """Whether ``line`` nests ``[`` and ``{`` more than :data:`MAX_DEPTH` deep (brackets in
    strings aside), found by scanning, before any decoder recurses into it."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    for bracket in _BRACKET.findall(_STRING.sub(b"", line)):
        depth += 1 if bracket in (b"[", b"{") else -1
        if depth > MAX_DEPTH:
            return True
    return False


def _parquet_rows(path: Path, limit: int | None, most_rows: int | None) -> list[tuple[int, Any]]:
    """The rows of a Parquet predictions file, numbered; one larger (uncompressed) than
    ``limit`` or of more than ``most_rows`` rows is refused unread: from its footer, then from
    its pages' own headers (a footer may say less than its pages hold), then as its batches
    are read (a dictionary's values repeated)."""
    import pyarrow as pa

    f = _open_regular(path)
    try:
        table = _bounded_table(path, f, limit, most_rows)
    except (OSError, pa.ArrowException) as exc:
        raise BenchError(f"{path}: not a readable Parquet file ({exc})", path=path) from exc
    finally:
        f.close()
    from convbank.store._values import python_values

    repeated = next((n for n in ("example_id", "prediction") if table.column_names.count(n) > 1), None)
    if repeated is not None:  # a row of it would keep one of them, unsaid which
        raise BenchError(
            f"{path}: {counted(table.column_names.count(repeated), 'column')} named {repeated!r}; a "
            "predictions file has one example_id and one prediction column",
            path=path,
        )
    refuse_repeated_field(path, table.schema)
    columns = []
    for name, column in zip(table.column_names, table.columns, strict=True):
        try:  # a date or a time Python cannot hold is its text (a malformed prediction), as in query
            columns.append(python_values(column))
        except (TypeError, ValueError, OverflowError) as exc:
            raise BenchError(
                f"{path}: column {name!r} holds a value Python cannot read ({exc})", path=path
            ) from exc
    rows = (dict(zip(table.column_names, values, strict=True)) for values in zip(*columns, strict=True))
    if (table.schema.metadata or {}).get(JSON_PREDICTIONS) == b"json":
        rows = (_json_prediction(path, n, row) for n, row in enumerate(rows, 1))
    return list(enumerate(rows, 1))


def _bounded_table(path: Path, f: BinaryIO, limit: int | None, most_rows: int | None) -> Any:
    """The table of the Parquet file ``f``, read within ``limit`` bytes and ``most_rows`` rows
    (both None: read whole)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from convbank.bench._parquet_size import UnreadablePagesError, held_bytes, unpacked_bytes

    parquet = pq.ParquetFile(f)
    footer = parquet.metadata
    if limit is None or most_rows is None:
        return parquet.read()
    texts = [c.path for c in parquet.schema if c.physical_type == "BYTE_ARRAY"]
    parquet = pq.ParquetFile(f, read_dictionary=texts)  # texts as dictionaries: never repeated
    size = sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups))
    if footer.num_rows > most_rows or size > limit:
        raise _too_large(path, footer.num_rows, size, limit, most_rows)
    try:
        size = unpacked_bytes(f, footer)
    except UnreadablePagesError as exc:
        raise BenchError(f"{path}: not a readable Parquet file ({exc})", path=path) from exc
    if size > limit:
        raise _too_large(path, footer.num_rows, size, limit, most_rows)
    batches, rows, held = [], 0, 0
    for group in range(footer.num_row_groups):  # a batch of one group: one dictionary a column
        for batch in parquet.iter_batches(batch_size=256, row_groups=[group]):
            rows, held = rows + batch.num_rows, held + sum(held_bytes(c) for c in batch.columns)
            if rows > most_rows or held > limit:
                raise _too_large(path, rows, held, limit, most_rows)
            batches.append(batch)
    return pa.Table.from_batches(batches) if batches else parquet.schema_arrow.empty_table()


def _too_large(path: Path, rows: int, size: int, limit: int, most_rows: int) -> BenchError:
    return BenchError(
        f"{path}: {counted(rows, 'row')}, {_mib(size)} uncompressed: more than a predictions "
        f"file of this task holds ({most_rows:,} rows, {_mib(limit)} at most)",
        path=path,
    )


def _json_prediction(path: Path, number: int, row: dict[str, Any]) -> dict[str, Any]:
    """A row of a Parquet file whose predictions are their JSON text (:data:`JSON_PREDICTIONS`),
    its prediction decoded (nested at most :data:`MAX_DEPTH` deep); a row without one is left
    for :func:`read_predictions` to name."""
    if "prediction" not in row:
        return row
    text = row["prediction"]
    try:
        if isinstance(text, str) and not _too_deep(text.encode()):
            return {**row, "prediction": msgspec.json.decode(text)}
    except msgspec.DecodeError:
        pass
    raise BenchError(
        f"{path}: row {number:,}'s prediction is not JSON text nested at most {MAX_DEPTH} deep, "
        "as the file's metadata says its predictions are",
        path=path,
        line=number,
    )


JSON_PREDICTIONS = b"convbank.predictions"
"""The key of a Parquet predictions file's metadata saying (``json``) that each prediction is
its JSON text: what :func:`write_predictions` writes when no Arrow type holds them as they are."""


def _parquet_bytes(rows: list[dict[str, Any]]) -> bytes:
    """A Parquet file of ``rows``: the predictions typed as Arrow infers them where they read
    back the same, else (a label that is a string here and a boolean there, an int beyond 64
    bits, spans whose keys differ) each as its JSON text, the file's metadata saying so
    (:data:`JSON_PREDICTIONS`), so that :func:`read_predictions` reads back what was written."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    try:
        table = pa.Table.from_pylist(rows)
        pq.write_table(table, buffer)
        same = pq.read_table(pa.BufferReader(buffer.getvalue())).to_pylist() == rows
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        same = False
    if same:
        return buffer.getvalue()
    ids = pa.array([str(r["example_id"]) for r in rows], pa.string())
    texts = pa.array([msgspec.json.encode(r["prediction"]).decode() for r in rows], pa.string())
    table = pa.table({"example_id": ids, "prediction": texts})
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata({JSON_PREDICTIONS: b"json"}), buffer)
    return buffer.getvalue()


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file: opened without blocking, so that a
    FIFO or a device there (or a link to one) is refused at once, never waited on; the file
    checked is the one read."""
    from convbank._atomic import kind_of

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise BenchError(f"{path}: cannot be read ({exc.strerror or exc})", path=path) from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise BenchError(f"{path}: {kind_of(mode)}, not a regular file; pass a Parquet file", path=path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def write_predictions(path: Path | str, predictions: Mapping[str, Any]) -> Path:
    """Write ``{example_id, prediction}`` rows (JSONL, or Parquet for a ``.parquet`` name),
    atomically; what :func:`read_predictions` and ``--predictions`` read back. A ``path``
    among convbank's own files is refused (:func:`refuse_convbanks_own`), and so is a
    prediction holding a number JSON has no value for (``nan``, ``inf``), which would be
    written as ``null`` (:func:`refuse_not_finite`)."""
    from convbank._atomic import atomic_write
    from convbank.bench._repeats import refuse_not_finite
    from convbank.bench._writable import refuse_convbanks_own

    path = Path(path)  # a str as the system names it
    refuse_convbanks_own(path)
    ids_text(str(path), predictions)
    refuse_not_finite(path, predictions)

    rows = [{"example_id": k, "prediction": v} for k, v in predictions.items()]
    if path.suffix == ".parquet":
        atomic_write(path, _parquet_bytes(rows))
    else:
        atomic_write(path, b"".join(json_line(msgspec.json.encode(r)) for r in rows))
    return path
