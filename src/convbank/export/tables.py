"""The unified model as files: ``jsonl`` (one conversation per line), ``parquet`` (the four
tables, ``<dataset>_<table>.parquet``) and ``csv`` (the turns table).

Three formats in one module: they are the unified model's own tables written three ways, with
one encoder and one list of tables (the ``croissant`` format writes :func:`write_parquet`'s
files too), so a field added to the model is seen here once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from convbank._lazy import lazy
from convbank._textio import CsvRows
from convbank.export._core import Selection, part_files, per_part, write_lines
from convbank.export._format import Format
from convbank.model import UNIFIED_TABLES, schema
from convbank.model.schema import UnifiedSchema

if TYPE_CHECKING:
    import pyarrow.parquet as pq
else:
    pq = lazy("pyarrow.parquet")

__all__ = [
    "CSV",
    "CSV_COLUMNS",
    "FORMATS",
    "JSONL",
    "PARQUET",
    "csv_columns",
    "write_csv",
    "write_jsonl",
    "write_parquet",
]

_encode = msgspec.json.Encoder().encode

_JSONL, _CSV = ".jsonl", ".turns.csv"
"""How each part's file ends in the ``jsonl`` and ``csv`` formats."""


def write_jsonl(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.jsonl``: one unified conversation per line."""
    return write_lines(selection, directory, _JSONL, lambda conv: [_encode(conv.to_dict()) + b"\n"])


JSONL = Format(
    order=60,
    name="jsonl",
    summary="unified conversations",
    writes="unified conversations, one per line (`<dataset>_<config>_<split>.jsonl`)",
    read_with="anything",
    writer=write_jsonl,
    plan=per_part(_JSONL),
)
"""The ``jsonl`` format."""


def write_parquet(selection: Selection, directory: Path, *, named: bool = True) -> list[Path]:
    """``{dataset}_{table}.parquet`` for the four unified tables, with dataset, config and
    split (``{table}.parquet`` when not ``named``: inside a folder that names the dataset)."""
    written = []
    for name in UNIFIED_TABLES:
        path = directory / (f"{selection.dataset}_{name}.parquet" if named else f"{name}.parquet")
        pq.write_table(selection.table(name), path, compression="zstd")
        written.append(path)
    return written


def _parquet_files(selection: Selection) -> list[str]:
    return [f"{selection.dataset}_{name}.parquet" for name in UNIFIED_TABLES]


PARQUET = Format(
    order=70,
    name="parquet",
    summary="the four unified tables (DIR/<dataset>_<table>.parquet)",
    writes="the four unified tables (`<dataset>_<table>.parquet`)",
    read_with="anything",
    writer=write_parquet,
    plan=_parquet_files,
)
"""The ``parquet`` format."""


def csv_columns(model: UnifiedSchema | None = None) -> tuple[str, ...]:
    """The columns of the turns CSV, derived from the model: where the turn is, the turn's
    fields with its speaker's ``role`` after ``participant_id``, and ``text`` then ``meta`` (as
    JSON) last, the long ones at the end of each row.

    >>> csv_columns()[4:]
    ('turn_index', 'participant_id', 'role', 'kind', 'text', 'meta')
    """
    fields = (model or schema.SCHEMA).field_names("turns")
    middle = [f for f in fields if f not in _CSV_LAST]
    middle.insert(middle.index("participant_id") + 1, "role")
    return (*schema.PARTITION_COLUMNS, schema.KEY, *middle, *(f for f in _CSV_LAST if f in fields))


_CSV_LAST = ("text", "meta")

CSV_COLUMNS = csv_columns()
"""The columns of the turns CSV of convbank's model (:func:`csv_columns`)."""


def write_csv(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.turns.csv``: one row per turn with the speaker's role
    and the turn's meta as JSON (RFC 4180: CRLF line ends, fields holding a comma, a quote, CR or LF
    quoted; text keeps its newlines and is written unchanged)."""
    written = []
    columns = csv_columns()
    fields = [c for c in columns if c not in (*schema.PARTITION_COLUMNS, schema.KEY, "role")]
    json = {c.name for c in schema.SCHEMA.fields["turns"] if c.json}
    for path, conversations in part_files(selection, directory, _CSV):
        with path.open("w", encoding="utf-8", newline="") as out:
            writer = CsvRows(out, line_end="\r\n")  # data unchanged: no formula guard
            writer.writerow(columns)
            for conv in conversations:
                roles = {p.participant_id: p.role for p in conv.participants}
                where = {"dataset": selection.dataset, "config": conv.config, "split": conv.split}
                where[schema.KEY] = conv.conversation_id
                for t in conv.turns:
                    row = {**where, "role": roles.get(t.participant_id, "")}
                    for name in fields:
                        value = getattr(t, name)
                        row[name] = _encode(value).decode() if name in json else value
                    writer.writerow([row[c] for c in columns])
        written.append(path)
    return written


CSV = Format(
    order=80,
    name="csv",
    summary="the turns",
    writes="the turns (`<dataset>_<config>_<split>.turns.csv`)",
    read_with="anything",
    writer=write_csv,
    plan=per_part(_CSV),
)
"""The ``csv`` format."""

FORMATS = (JSONL, PARQUET, CSV)
"""The three formats of the unified tables."""
