"""The records of the record formats (``chat``, ``sharegpt``): each record of a JSON file
(:func:`~convbank.export._read.json_records`) or each row of a Parquet file (the layout in
which the Hugging Face Hub keeps chat datasets: a ``messages`` or ``conversations`` column of
lists of objects), and how such files are recognised."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._lazy import lazy
from convbank.export._format import ReadOptions, Rejected
from convbank.export._read import first_record, json_cells, json_records, non_finite, rejected, suffixed
from convbank.model import Conversation

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
else:
    pa = lazy("pyarrow")
    pq = lazy("pyarrow.parquet")

__all__ = ["PARQUET_SUFFIXES", "holds_messages", "record_conversations", "records"]

PARQUET_SUFFIXES = (".parquet", ".pq")
"""The names of the Parquet files a record format reads a row at a time."""

_ROWS = 1024
"""Rows read from a Parquet file at a time."""


def records(path: Path) -> Iterator[tuple[str, Any] | Rejected]:
    """The records of a file, each with where it is: a Parquet file's rows (``row 3``, its
    cells as JSON holds them: :func:`~convbank.export._read.json_cells`), else the records
    of a JSON file (:func:`~convbank.export._read.json_records`)."""
    if not path.name.lower().endswith(PARQUET_SUFFIXES):
        yield from json_records(path)
        return
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=_ROWS)
        number = 0
        for batch in batches:
            for row in batch.to_pylist():
                number += 1
                odd = non_finite(row)
                cells = json_cells((k, k, v) for k, v in row.items()) if odd is None else None
                if odd is not None or isinstance(cells, str):
                    why = cells or f"expected finite numbers, not {odd!r} (JSON has no such number)"
                    yield rejected(path, f"row {number}", str(why), row)
                    continue
                yield f"row {number}", cells
    except (OSError, pa.ArrowException) as exc:  # not Parquet, or cut short
        yield Rejected(path, "file", f"expected a Parquet file ({exc})")


def record_conversations(
    paths: Sequence[Path],
    options: ReadOptions,
    convert: Callable[[Any, int, ReadOptions], Conversation | str],
) -> Iterator[Conversation | Rejected]:
    """The conversations of record files (:func:`records`), one per record:
    ``convert(record, number, options)`` gives each (``number`` counts the conversations of
    its file) or what is wrong with it, yielded as a :class:`Rejected` naming the record."""
    for path in paths:
        number = 0
        for item in records(path):
            if isinstance(item, Rejected):
                yield item
                continue
            where, value = item
            conv = convert(value, number, options)
            if isinstance(conv, str):
                yield rejected(path, where, conv, value)
                continue
            number += 1
            yield conv


def holds_messages(paths: Sequence[Path], key: str, speaker: str) -> bool:
    """Whether files hold records of a ``key`` list of objects with a ``speaker`` key
    (``messages`` of ``role``s, ``conversations`` of ``from``s): JSON files whose first
    record does, or Parquet files whose ``key`` column is a list of structs with a field
    ``speaker``. How the record formats are sniffed."""
    if suffixed(paths, *PARQUET_SUFFIXES):
        return all(_parquet_holds(p, key, speaker) for p in paths)
    if not suffixed(paths, ".jsonl", ".json", ".ndjson"):
        return False
    record = first_record(paths[0])
    messages = record.get(key) if record else None
    return isinstance(messages, list) and all(isinstance(m, dict) and speaker in m for m in messages)


def _parquet_holds(path: Path, key: str, speaker: str) -> bool:
    """Whether a Parquet file's ``key`` column is a list of structs with a ``speaker`` field."""
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return False
    kind = schema.field(key).type if key in schema.names else None
    if kind is None or not (pa.types.is_list(kind) or pa.types.is_large_list(kind)):
        return False
    item = kind.value_type
    return bool(pa.types.is_struct(item) and item.get_field_index(speaker) >= 0)
