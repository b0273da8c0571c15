"""Arrow schemas of the four unified tables, and the conversions between rows and conversations.

The schemas carry no ``dataset``/``config``/``split`` columns: the bank stores those as
Hive partition folders (``dataset=X/config=Y/split=Z``), and every reader (DuckDB, Spark,
Polars, pyarrow.dataset) adds them back as columns. ``meta`` columns hold JSON text.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any

import msgspec

from convbank._lazy import lazy
from convbank.model.types import Annotation, Conversation, Participant, Turn

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pa = lazy("pyarrow")
    pc = lazy("pyarrow.compute")


SCHEMA_VERSION = "1.0"
"""Version of the unified schema; stored in every Parquet file's metadata."""

PARTITION_COLUMNS = ("dataset", "config", "split")

JSON_FIELD = {b"convbank.type": b"json"}
"""Field metadata of columns that hold JSON text."""


UNIFIED_TABLES = ("conversations", "participants", "turns", "annotations")
"""The four unified tables, in the order readers and writers take them."""


@cache
def table_schemas() -> dict[str, pa.Schema]:
    """The Arrow schemas of the unified tables (made on first use: pyarrow loads then)."""
    return {
        "conversations": pa.schema(
            [
                pa.field("conversation_id", pa.string(), nullable=False),
                pa.field("num_turns", pa.int32(), nullable=False),
                pa.field("source_index", pa.int64(), nullable=False),
                pa.field("meta", pa.string(), nullable=False, metadata=JSON_FIELD),
            ]
        ),
        "participants": pa.schema(
            [
                pa.field("conversation_id", pa.string(), nullable=False),
                pa.field("participant_id", pa.string(), nullable=False),
                pa.field("role", pa.string(), nullable=False),
                pa.field("persona", pa.list_(pa.string()), nullable=False),
                pa.field("meta", pa.string(), nullable=False, metadata=JSON_FIELD),
            ]
        ),
        "turns": pa.schema(
            [
                pa.field("conversation_id", pa.string(), nullable=False),
                pa.field("turn_index", pa.int32(), nullable=False),
                pa.field("participant_id", pa.string(), nullable=False),
                pa.field("text", pa.string(), nullable=False),
                pa.field("kind", pa.string(), nullable=False),
                pa.field("meta", pa.string(), nullable=False, metadata=JSON_FIELD),
            ]
        ),
        "annotations": pa.schema(
            [
                pa.field("conversation_id", pa.string(), nullable=False),
                pa.field("turn_index", pa.int32(), nullable=False),
                pa.field("layer", pa.string(), nullable=False),
                pa.field("label", pa.string(), nullable=False),
                pa.field("start_char", pa.int32()),
                pa.field("end_char", pa.int32()),
                pa.field("meta", pa.string(), nullable=False, metadata=JSON_FIELD),
            ]
        ),
    }


def __getattr__(name: str) -> Any:
    """``TABLE_SCHEMAS``: the Arrow schema of each unified table, by name (made when first
    read, so that importing the model costs no pyarrow import)."""
    if name == "TABLE_SCHEMAS":
        return table_schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    TABLE_SCHEMAS: dict[str, pa.Schema]


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(dict[str, Any]).decode


def _meta(meta: Mapping[str, Any]) -> str:
    return _encode(meta).decode() if meta else "{}"


def conversations_to_tables(conversations: Iterable[Conversation]) -> dict[str, pa.Table]:
    """Turn conversations into the four unified tables (rows in conversation order)."""
    cols: dict[str, dict[str, list[Any]]] = {
        name: {f.name: [] for f in schema} for name, schema in table_schemas().items()
    }
    c, p, t, a = (cols[n] for n in UNIFIED_TABLES)
    for conv in conversations:
        cid = conv.conversation_id
        c["conversation_id"].append(cid)
        c["num_turns"].append(len(conv.turns))
        c["source_index"].append(conv.source_index)
        c["meta"].append(_meta(conv.meta))
        for part in conv.participants:
            p["conversation_id"].append(cid)
            p["participant_id"].append(part.participant_id)
            p["role"].append(part.role)
            p["persona"].append(part.persona)
            p["meta"].append(_meta(part.meta))
        for turn in conv.turns:
            t["conversation_id"].append(cid)
            t["turn_index"].append(turn.turn_index)
            t["participant_id"].append(turn.participant_id)
            t["text"].append(turn.text)
            t["kind"].append(turn.kind)
            t["meta"].append(_meta(turn.meta))
        for ann in conv.annotations:
            a["conversation_id"].append(cid)
            a["turn_index"].append(ann.turn_index)
            a["layer"].append(ann.layer)
            a["label"].append(ann.label)
            a["start_char"].append(ann.start_char)
            a["end_char"].append(ann.end_char)
            a["meta"].append(_meta(ann.meta))
    return {name: pa.Table.from_pydict(cols[name], schema=schema) for name, schema in table_schemas().items()}


def _runs(table: pa.Table | None) -> tuple[dict[str, tuple[int, int]], dict[str, list[Any]]]:
    """Where each conversation's rows are in a table whose rows are grouped by conversation
    (``{id: (start, end)}``), and its columns as Python lists."""
    if table is None or table.num_rows == 0:
        return {}, {}
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    runs = pc.run_end_encode(table.column("conversation_id").combine_chunks())
    ends = runs.run_ends.to_pylist()
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for cid, end in zip(runs.values.to_pylist(), ends, strict=True):
        if cid in spans:  # not grouped: the caller gathers the rows one by one
            raise _NotGroupedError
        spans[cid] = (start, end)
        start = end
    return spans, columns


class _NotGroupedError(Exception):
    """Rows of one conversation are not next to each other."""


def _group(table: pa.Table | None) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    if table is None:
        return groups
    for row in table.to_pylist():
        groups.setdefault(row["conversation_id"], []).append(row)
    return groups


def tables_to_conversations(
    tables: Mapping[str, pa.Table], *, dataset: str = "", config: str = "", split: str = ""
) -> list[Conversation]:
    """Rebuild conversations from unified tables, in the order of the ``conversations`` table.

    ``dataset``/``config``/``split`` columns are used where the tables have them, else the
    keyword arguments. Participants, turns and annotations keep their stored order (turns
    by ``turn_index``). Works column by column on tables whose rows are grouped by
    conversation (as the bank stores them), row by row otherwise.
    """
    with paused_gc():
        try:
            prepared = PreparedTables(tables, dataset=dataset, config=config, split=split)
            return [prepared.build(i) for i in range(len(prepared))]
        except _NotGroupedError:
            return _by_rows(tables, dataset=dataset, config=config, split=split)


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while thousands of acyclic objects are made (it
    would rescan them again and again; reference counting still frees them)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


TurnRow = tuple[int, str, str, str]
"""A turn's index, participant, text and kind."""


class PreparedTables:
    """The unified tables of a batch decoded once into Python columns, from which any of its
    conversations is built in microseconds (:meth:`build`); what a corpus caches per stored
    batch for random access. The tables' rows must be grouped by conversation (as the bank
    stores them)."""

    def __init__(self, tables: Mapping[str, pa.Table], *, dataset: str, config: str, split: str) -> None:
        conv = tables["conversations"]
        c = {name: conv.column(name).to_pylist() for name in conv.column_names}
        self._p_spans, p = _runs(tables.get("participants"))
        self._t_spans, t = _runs(tables.get("turns"))
        self._a_spans, a = _runs(tables.get("annotations"))
        self._people = (
            list(zip(p["participant_id"], p["role"], p["persona"], p["meta"], strict=True)) if p else []
        )
        self._said = (
            list(zip(t["turn_index"], t["participant_id"], t["text"], t["kind"], t["meta"], strict=True))
            if t
            else []
        )
        self._marks = (
            list(
                zip(
                    a["turn_index"],
                    a["layer"],
                    a["label"],
                    a["start_char"],
                    a["end_char"],
                    a["meta"],
                    strict=True,
                )
            )
            if a
            else []
        )
        n = conv.num_rows
        self._rows = list(
            zip(
                c.get("dataset") or [dataset] * n,
                c.get("config") or [config] * n,
                c.get("split") or [split] * n,
                c["conversation_id"],
                c["source_index"],
                c["meta"],
                strict=True,
            )
        )

    def __len__(self) -> int:
        return len(self._rows)

    def build(self, row: int) -> Conversation:
        """A new :class:`Conversation` from row ``row`` of the conversations table."""
        decode = _decode
        ds, cfg, sp, cid, index, meta = self._rows[row]
        none = (0, 0)
        ps, pe = self._p_spans.get(cid, none)
        ts, te = self._t_spans.get(cid, none)
        as_, ae = self._a_spans.get(cid, none)
        turns = [
            Turn(k, pid, text, kind, {} if m == "{}" else decode(m))
            for k, pid, text, kind, m in self._said[ts:te]
        ]
        if any(turns[k].turn_index > turns[k + 1].turn_index for k in range(len(turns) - 1)):
            turns.sort(key=lambda x: x.turn_index)
        return Conversation(
            ds,
            cfg,
            sp,
            cid,
            index,
            [
                Participant(pid, role, list(persona), {} if m == "{}" else decode(m))
                for pid, role, persona, m in self._people[ps:pe]
            ],
            turns,
            [
                Annotation(k, layer, label, start, end, {} if m == "{}" else decode(m))
                for k, layer, label, start, end, m in self._marks[as_:ae]
            ],
            {} if meta == "{}" else decode(meta),
        )

    def turn(
        self, row: int, turn_index: int
    ) -> tuple[tuple[str, str, str, str], TurnRow, str, list[tuple[str, str]]]:
        """One turn of conversation ``row`` without building the conversation: its
        conversation's (dataset, config, split, id), the turn's (turn index, participant,
        text, kind), its speaker's role ("" if not listed) and its annotations' (layer,
        label) pairs. What the ``turns`` example view reads."""
        ds, cfg, sp, cid, _, _ = self._rows[row]
        none = (0, 0)
        ts, te = self._t_spans.get(cid, none)
        said = self._said[ts:te]
        at = turn_index if turn_index < len(said) and said[turn_index][0] == turn_index else None
        if at is None:
            at = next(i for i, t in enumerate(said) if t[0] == turn_index)
        k, pid, text, kind, _ = said[at]
        ps, pe = self._p_spans.get(cid, none)
        role = next((r for p, r, _, _ in self._people[ps:pe] if p == pid), "")
        as_, ae = self._a_spans.get(cid, none)
        marks = [(layer, label) for t, layer, label, _, _, _ in self._marks[as_:ae] if t == turn_index]
        return (ds, cfg, sp, cid), (k, pid, text, kind), role, marks


def _by_rows(tables: Mapping[str, pa.Table], *, dataset: str, config: str, split: str) -> list[Conversation]:
    participants = _group(tables.get("participants"))
    turns = _group(tables.get("turns"))
    annotations = _group(tables.get("annotations"))
    out = []
    for row in tables["conversations"].to_pylist():
        cid = row["conversation_id"]
        out.append(
            Conversation(
                dataset=row.get("dataset", dataset),
                config=row.get("config", config),
                split=row.get("split", split),
                conversation_id=cid,
                source_index=row["source_index"],
                meta=_decode(row["meta"]),
                participants=[
                    Participant(
                        participant_id=r["participant_id"],
                        role=r["role"],
                        persona=list(r["persona"]),
                        meta=_decode(r["meta"]),
                    )
                    for r in participants.get(cid, ())
                ],
                turns=[
                    Turn(
                        turn_index=r["turn_index"],
                        participant_id=r["participant_id"],
                        text=r["text"],
                        kind=r["kind"],
                        meta=_decode(r["meta"]),
                    )
                    for r in sorted(turns.get(cid, ()), key=lambda r: r["turn_index"])
                ],
                annotations=[
                    Annotation(
                        turn_index=r["turn_index"],
                        layer=r["layer"],
                        label=r["label"],
                        start_char=r["start_char"],
                        end_char=r["end_char"],
                        meta=_decode(r["meta"]),
                    )
                    for r in annotations.get(cid, ())
                ],
            )
        )
    return out
