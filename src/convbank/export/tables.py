"""The unified model as files: ``jsonl`` (one conversation per line), ``parquet`` (the four
tables, ``<dataset>_<table>.parquet``) and ``csv`` (the turns table).

Three formats in one module: they are the unified model's own tables written three ways, with
one encoder and one list of tables (the ``croissant`` format writes :func:`write_parquet`'s
files too), so a field added to the model is seen here once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from convbank._lazy import lazy
from convbank._textio import CsvRows, json_line
from convbank._wording import counted
from convbank.export._core import Selection, part_files, per_part, write_lines
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._read import head, json_lines, rejected, suffixed
from convbank.model import UNIFIED_TABLES, Annotation, Conversation, Participant, Turn, schema
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
    "read_jsonl",
    "read_parquet",
    "write_csv",
    "write_jsonl",
    "write_parquet",
]

_encode = msgspec.json.Encoder().encode

_JSONL, _CSV = ".jsonl", ".turns.csv"
"""How each part's file ends in the ``jsonl`` and ``csv`` formats."""


def write_jsonl(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.jsonl``: one unified conversation per line."""
    return write_lines(selection, directory, _JSONL, lambda conv: [json_line(_encode(conv.to_dict()))])


def read_jsonl(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of ``jsonl`` exports, exactly as the bank held them, each line's
    ``config`` and ``split`` kept (the dataset is ``options.dataset``)::

        read_jsonl([Path("out/casino_default_train.jsonl")], ReadOptions(dataset="casino_again"))
    """
    for path in paths:
        for item in json_lines(path):
            if isinstance(item, Rejected):
                yield item
                continue
            number, value = item
            try:
                conv = msgspec.convert(value, Conversation)
            except msgspec.ValidationError as exc:
                yield rejected(path, f"line {number}", f"expected a unified conversation ({exc})", value)
                continue
            said = _not_held(value, len(conv.turns))
            if said is not None:  # jsonl loses nothing: what the model would drop is refused
                yield rejected(path, f"line {number}", f"expected a unified conversation ({said})", value)
                continue
            conv.dataset = options.dataset
            yield conv


_KEYS = {
    name: {f.name for f in msgspec.structs.fields(kind)}
    for name, kind in (("participants", Participant), ("turns", Turn), ("annotations", Annotation))
}
_CONVERSATION_KEYS = {f.name for f in msgspec.structs.fields(Conversation)} | {"num_turns"}


def _not_held(value: dict[str, Any], turns: int) -> str | None:
    """What of a line a unified conversation has no place for (a key ``turns[3].zzz``, which
    ``msgspec.convert`` would drop, or a ``num_turns`` other than its turns), else None."""
    odd = next((str(k) for k in value if k not in _CONVERSATION_KEYS), None)
    for field, keys in _KEYS.items():
        for i, item in enumerate(value.get(field) or ()):
            odd = odd or next((f"{field}[{i}].{k}" for k in item if k not in keys), None)
    if odd is not None:
        return f"a key {odd!r} it has no place for"
    if value.get("num_turns", turns) != turns:
        return f"num_turns {value['num_turns']!r} where it has {counted(turns, 'turn')}"
    return None


def _sniff_jsonl(paths: Sequence[Path]) -> bool:
    """A first line that is a unified conversation's start: ``dataset``, ``config`` and
    ``conversation_id`` keys first, as :meth:`Conversation.to_dict` writes them."""
    if not suffixed(paths, ".jsonl", ".json", ".ndjson"):
        return False
    first = head(paths[0]).split(b"\n", 1)[0]
    return first.startswith(b'{"dataset":') and b'"conversation_id":' in first and b'"turns":' in first


JSONL = Format(
    order=60,
    name="jsonl",
    summary="unified conversations",
    writes="unified conversations, one per line (`<dataset>_<config>_<split>.jsonl`)",
    read_with="anything",
    writer=write_jsonl,
    plan=per_part(_JSONL),
    reader=read_jsonl,
    loses="nothing: the bank's conversations exactly (the dataset takes the import's name)",
    sniff=_sniff_jsonl,
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


def _table_files(paths: Sequence[Path]) -> dict[str, Path] | Rejected:
    """The file of each unified table among ``paths`` (a folder stands for its files)."""
    files = [f for p in paths for f in (sorted(p.glob("*.parquet")) if p.is_dir() else [p])]
    found: dict[str, Path] = {}
    for f in files:
        table = next(
            (t for t in UNIFIED_TABLES if f.name == f"{t}.parquet" or f.name.endswith(f"_{t}.parquet")), None
        )
        if table is None or table in found:
            why = "a second file of its table" if table else "not one of the unified tables"
            return Rejected(f, "file", f"expected the four unified tables, one file each ({why})")
        found[table] = f
    if "conversations" not in found:
        where = files[0] if files else (paths[0] if paths else Path("."))
        return Rejected(
            where, "file", "expected the unified conversations table (<dataset>_conversations.parquet)"
        )
    return found


def _rows(path: Path, table: str) -> Iterator[tuple[int, dict[str, Any]] | Rejected]:
    """A table file's rows (numbered from 1), read in batches; its schema checked first."""
    f = pq.ParquetFile(path)
    problem = schema.SCHEMA.problem(table, f.schema_arrow)
    if problem is not None:
        yield Rejected(path, "file", f"expected convbank's unified {table} table ({problem})")
        return
    number = 0
    for batch in f.iter_batches(batch_size=4096):
        for row in batch.to_pylist():
            number += 1
            yield number, row


class _Children:
    """One child table's rows, taken a conversation at a time in the conversations' order."""

    def __init__(self, path: Path | None, table: str) -> None:
        self.path, self.table = path, table
        self.rows = _rows(path, table) if path is not None else iter(())
        self.names = schema.SCHEMA.field_names(table)
        self.next: tuple[int, dict[str, Any]] | Rejected | None = next(self.rows, None)

    def take(self, cid: str) -> list[tuple[Any, ...]] | Rejected:
        out = []
        while isinstance(self.next, tuple) and self.next[1][schema.KEY] == cid:
            out.append(tuple(self.next[1][n] for n in self.names))
            self.next = next(self.rows, None)
        return self.next if isinstance(self.next, Rejected) else out

    def left(self) -> Rejected | None:
        if self.next is None or isinstance(self.next, Rejected):
            return self.next
        number, row = self.next
        assert self.path is not None
        return rejected(
            self.path,
            f"row {number}",
            f"expected a row of a conversation of the conversations table, in its "
            f"order (conversation {row[schema.KEY]!r})",
            row,
        )


def read_parquet(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of a ``parquet`` export (the four unified tables, given as files
    or their folder), exactly as the bank held them, in the conversations table's order,
    each row's ``config`` and ``split`` kept (the dataset is ``options.dataset``)::

        read_parquet([Path("out")], ReadOptions(dataset="casino_again"))
    """
    files = _table_files(paths)
    if isinstance(files, Rejected):
        yield files
        return
    model = schema.SCHEMA
    children = [_Children(files.get(t), t) for t in model.children]
    decode = msgspec.json.Decoder(dict[str, Any]).decode
    for item in _rows(files["conversations"], "conversations"):
        if isinstance(item, Rejected):
            yield item
            return
        _, row = item
        taken = [c.take(row[schema.KEY]) for c in children]
        kids = [k for k in taken if not isinstance(k, Rejected)]
        if len(kids) < len(taken):
            yield next(k for k in taken if isinstance(k, Rejected))
            return
        row.update(dataset=options.dataset, config=row.get("config", options.config))
        row["split"] = row.get("split", options.split)
        scalars = tuple(row[f] for f in model.scalars)
        built = [model.make(t, k, decode) for t, k in zip(model.children, kids, strict=True)]
        built[list(model.children).index("turns")].sort(key=lambda t: t.turn_index)
        yield model.make_conversation(scalars, built, decode)
    for c in children:
        if (left := c.left()) is not None:
            yield left


def _sniff_parquet(paths: Sequence[Path]) -> bool:
    """Files (or a folder) holding the unified conversations and turns tables."""
    files = _table_files(paths)
    return not isinstance(files, Rejected) and "turns" in files


PARQUET = Format(
    order=70,
    name="parquet",
    summary="the four unified tables (DIR/<dataset>_<table>.parquet)",
    writes="the four unified tables (`<dataset>_<table>.parquet`)",
    read_with="anything",
    writer=write_parquet,
    plan=_parquet_files,
    reader=read_parquet,
    together=True,
    loses="nothing: the bank's conversations exactly (the dataset takes the import's name)",
    sniff=_sniff_parquet,
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
