"""The unified tables, derived from the model's Structs, and the conversions between rows and
conversations.

The Structs of :mod:`convbank.model.types` are the one declaration: :class:`UnifiedSchema`
reads them once and every table, column, type and conversion follows. The conversation's
fields that are lists of Structs (``participants``, ``turns``, ``annotations``) are the child
tables, each keyed by ``conversation_id`` and holding its Struct's fields in order; the
``conversations`` table holds the conversation's other fields, with ``num_turns`` (a
property, :data:`COMPUTED`) after its key. An ``int`` bounded to 32 bits
(:data:`~convbank.model.types.Int32`) is an int32 column, any other an int64; a field
that admits ``None`` is nullable, every other not; a ``dict`` (``meta``) is JSON text
(field metadata :data:`JSON_FIELD`).

The schemas carry no ``dataset``/``config``/``split`` columns: the bank stores those as
Hive partition folders (``dataset=X/config=Y/split=Z``), and every reader (DuckDB, Spark,
Polars, pyarrow.dataset) adds them back as columns.

:data:`SCHEMA` is the model convbank uses; every reader and writer takes it from here when
called (a test may set another, made of copies of the Structs with a field more).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import msgspec
import msgspec.inspect as mi

from convbank._lazy import lazy
from convbank.model._arrow import arrow_column, arrow_of
from convbank.model.types import Conversation

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pa = lazy("pyarrow")
    pc = lazy("pyarrow.compute")


SCHEMA_VERSION = "1.0"
"""Version of the unified schema; stored in the manifest and in every Parquet file's metadata,
and checked by every reader (a bank of another version is refused: rebuild it)."""

PARTITION_COLUMNS = ("dataset", "config", "split")
"""The conversation's fields stored as partition folders, not columns."""

KEY = "conversation_id"
"""The conversation's field that keys every table."""

COMPUTED = ("num_turns",)
"""Properties of the conversation stored as columns, after its key."""

JSON_FIELD = {b"convbank.type": b"json"}
"""Field metadata of columns that hold JSON text."""


@dataclass(frozen=True)
class Column:
    """One column of a unified table, derived from a Struct field (or a property)."""

    name: str
    type: mi.Type
    nullable: bool
    json: bool
    """A ``dict`` field, stored as JSON text."""
    listed: bool
    """A list field (each conversation built gets its own copy)."""
    default: Any
    """The stored value of a field left out (``msgspec.NODEFAULT``: required)."""

    def arrow(self) -> pa.Field:
        """The column as an Arrow field."""
        if self.json:
            return pa.field(self.name, pa.string(), nullable=self.nullable, metadata=JSON_FIELD)
        return pa.field(self.name, arrow_of(self.type), nullable=self.nullable)


def _column(name: str, info: mi.Type, default: Any) -> Column:
    types = info.types if isinstance(info, mi.UnionType) else (info,)
    kinds = [t for t in types if not isinstance(t, mi.NoneType)]
    json = all(isinstance(t, mi.DictType) for t in kinds)
    if json and default is not msgspec.NODEFAULT:
        default = "{}" if default == {} else msgspec.json.encode(default).decode()
    listed = all(isinstance(t, (mi.ListType, mi.VarTupleType)) for t in kinds)
    if any(isinstance(t, (mi.StructType, mi.CustomType)) for t in kinds):
        raise TypeError(f"the unified column {name!r} has no Arrow type: {info!r}")
    return Column(name, info, len(kinds) < len(types), json, listed, default)


def _default(field: mi.Field) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default


def _filler(schema: UnifiedSchema) -> Callable[..., None]:
    """``fill(conversations, columns, encode)``: the columns of every table (lists by table,
    in stored order) appended to, a conversation after the other (generated once per model:
    attribute reads and appends, as a hand-written loop would)."""
    lines = ["def fill(conversations, columns, enc):"]
    for t, table in enumerate(schema.tables):
        names = ", ".join(f"t{t}_{k}" for k in range(len(schema.columns[table])))
        lines.append(f"    {names}, = [c.append for c in columns[{table!r}]]")
    lines += ["    for conv in conversations:", f"        cid = conv.{KEY}"]
    for k, c in enumerate(schema.columns["conversations"]):
        value = "cid" if c.name == KEY else (f"enc(conv.{c.name})" if c.json else f"conv.{c.name}")
        lines.append(f"        t0_{k}({value})")
    for t, table in enumerate(schema.children, 1):
        lines.append(f"        for x in conv.{table}:")
        for k, c in enumerate(schema.columns[table]):
            value = "cid" if k == 0 else (f"enc(x.{c.name})" if c.json else f"x.{c.name}")
            lines.append(f"            t{t}_{k}({value})")
    namespace: dict[str, Any] = {}
    exec(compile("\n".join(lines), "<convbank.model.schema>", "exec"), namespace)
    return namespace["fill"]  # type: ignore[no-any-return]


class UnifiedSchema:
    """The unified tables of a conversation model, derived once from its Struct classes: the
    columns of each table, their Arrow schemas, and the fast builders of Structs from rows.

    >>> UnifiedSchema(Conversation).names("turns")
    ('conversation_id', 'turn_index', 'participant_id', 'text', 'kind', 'meta')
    """

    def __init__(self, conversation: type[Conversation] = Conversation) -> None:
        info = mi.type_info(conversation)
        if not isinstance(info, mi.StructType):
            raise TypeError(f"{conversation!r} is not a msgspec Struct")
        self.conversation = conversation
        self.children: dict[str, type[msgspec.Struct]] = {}
        """The child tables and their Structs (``{"turns": Turn, ...}``), in field order."""
        own: list[Column] = []
        key: Column | None = None
        for f in info.fields:
            if isinstance(f.type, mi.ListType) and isinstance(f.type.item_type, mi.StructType):
                self.children[f.name] = f.type.item_type.cls
            elif f.name == KEY:
                key = _column(f.name, f.type, msgspec.NODEFAULT)
            elif f.name not in PARTITION_COLUMNS:
                own.append(_column(f.name, f.type, _default(f)))
        if key is None or not all(p in conversation.__struct_fields__ for p in PARTITION_COLUMNS):
            raise TypeError(f"{conversation.__name__} lacks {KEY} or one of {', '.join(PARTITION_COLUMNS)}")
        computed = [_property(conversation, name) for name in COMPUTED]
        self.key = key
        self.tables: tuple[str, ...] = ("conversations", *self.children)
        """The unified tables, in the order readers and writers take them."""
        self.fields: dict[str, tuple[Column, ...]] = {"conversations": tuple(own)}
        """Per table, the Struct fields stored (not the key, nor a computed column)."""
        for table, cls in self.children.items():
            sub = mi.type_info(cls)
            assert isinstance(sub, mi.StructType)
            self.fields[table] = tuple(_column(f.name, f.type, _default(f)) for f in sub.fields)
        self.columns: dict[str, tuple[Column, ...]] = {
            "conversations": (key, *computed, *own),
            **{t: (key, *self.fields[t]) for t in self.children},
        }
        """Per table, its columns in stored order."""
        self._arrow: dict[str, pa.Schema] | None = None
        self._makers = {t: _maker(cls, self.fields[t]) for t, cls in self.children.items()}
        self.make_conversation = _conversation_maker(conversation, self.children)
        """``make_conversation(row, children, decode)``: a conversation from the tuple of its
        scalar fields (in field order) and its built children."""
        self.scalars = tuple(f for f in conversation.__struct_fields__ if f not in self.children)
        self.fill = _filler(self)
        """``fill(conversations, columns, encode)``: see :func:`conversations_to_tables`."""
        """The conversation's scalar fields, in field order (what a built row holds)."""

    def names(self, table: str) -> tuple[str, ...]:
        """The column names of a table, in stored order."""
        return tuple(c.name for c in self.columns[table])

    def field_names(self, table: str) -> tuple[str, ...]:
        """The Struct fields a table stores (not its key nor a computed column), in order."""
        return tuple(c.name for c in self.fields[table])

    def make(self, table: str, rows: Iterable[tuple[Any, ...]], decode: Callable[[str], Any]) -> list[Any]:
        """The Structs of a child table from row tuples of its :meth:`field_names` (JSON
        columns as text, decoded with ``decode``)."""
        return self._makers[table](rows, decode)

    def arrow(self) -> dict[str, pa.Schema]:
        """The Arrow schema of each table (made on first use: pyarrow loads then)."""
        if self._arrow is None:
            self._arrow = {t: pa.schema([c.arrow() for c in cols]) for t, cols in self.columns.items()}
        return self._arrow

    def problem(self, table: str, schema: pa.Schema) -> str | None:
        """What a stored file's schema lacks of ``table``'s (a column, or its type); None
        when every column is there as expected."""
        for want in self.arrow()[table]:
            index = schema.get_field_index(want.name)
            if index < 0:
                return f"its {table} table has no column {want.name!r}"
            got = schema.field(index).type
            if got != want.type:
                return f"its {table} column {want.name!r} is {got}, not {want.type}"
        return None

    def table(self, table: str, columns: Mapping[str, Any], rows: int) -> pa.Table:
        """A table from its columns by name (lists or Arrow arrays); a column not given is
        its field's default on every row (a required one is an error)."""
        arrays = []
        for col, field in zip(self.columns[table], self.arrow()[table], strict=True):
            values = columns.get(col.name)
            if values is None:
                if col.default is msgspec.NODEFAULT:
                    raise KeyError(f"the {table} table needs its column {col.name!r}")
                values = (
                    pa.nulls(rows, field.type)
                    if col.default is None
                    else pa.repeat(pa.scalar(col.default, field.type), rows)
                )
            arrays.append(values if isinstance(values, pa.Array) else pa.array(values, field.type))
        return pa.Table.from_arrays(arrays, schema=self.arrow()[table])


def _property(cls: type, name: str) -> Column:
    import typing

    hints = typing.get_type_hints(getattr(cls, name).fget, include_extras=True)
    return _column(name, mi.type_info(hints["return"]), msgspec.NODEFAULT)


def _value(column: Column, name: str) -> str:
    if column.json:
        return f'({{}} if {name} == "{{}}" else d({name}))'
    if column.listed:
        return f"(None if {name} is None else list({name}))" if column.nullable else f"list({name})"
    return name


def _compile(source: str, namespace: dict[str, Any]) -> Any:
    """A function from its source (the builders are generated, as :mod:`dataclasses` makes
    ``__init__``: positional calls, as fast as hand-written ones)."""
    return eval(compile(source, "<convbank.model.schema>", "eval"), namespace)


def _maker(cls: type, fields: Sequence[Column]) -> Callable[..., list[Any]]:
    names = [f"v{i}" for i in range(len(fields))]
    args = ", ".join(_value(f, n) for f, n in zip(fields, names, strict=True))
    unpack = ", ".join(names) + ("," if len(names) == 1 else "")
    return _compile(f"lambda rows, d: [C({args}) for {unpack} in rows]", {"C": cls})  # type: ignore[no-any-return]


def _conversation_maker(cls: type[Conversation], children: Mapping[str, type]) -> Callable[..., Conversation]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    args, row, child = [], 0, 0
    for f in info.fields:
        if f.name in children:
            args.append(f"kids[{child}]")
            child += 1
        else:
            args.append(_value(_column(f.name, f.type, msgspec.NODEFAULT), f"r[{row}]"))
            row += 1
    return _compile(f"lambda r, kids, d: C({', '.join(args)})", {"C": cls})  # type: ignore[no-any-return]


SCHEMA = UnifiedSchema(Conversation)
"""The unified tables of convbank's model."""

UNIFIED_TABLES = SCHEMA.tables
"""The four unified tables, in the order readers and writers take them."""


def table_schemas() -> dict[str, pa.Schema]:
    """The Arrow schemas of the unified tables (made on first use: pyarrow loads then)."""
    return SCHEMA.arrow()


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
    """Turn conversations into the unified tables (rows in conversation order)."""
    schema = SCHEMA
    columns: dict[str, list[list[Any]]] = {t: [[] for _ in schema.columns[t]] for t in schema.tables}
    schema.fill(conversations, columns, _meta)
    return {
        t: pa.Table.from_arrays(
            [
                arrow_column(t, vs, f, columns[t][0])
                for vs, f in zip(columns[t], schema.arrow()[t], strict=True)
            ],
            schema=schema.arrow()[t],
        )
        for t in schema.tables
    }


def _runs(table: pa.Table | None) -> tuple[dict[str, tuple[int, int]], dict[str, list[Any]]]:
    """Where each conversation's rows are in a table whose rows are grouped by conversation
    (``{id: (start, end)}``), and its columns as Python lists."""
    if table is None or table.num_rows == 0:
        return {}, {}
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    runs = pc.run_end_encode(table.column(KEY).combine_chunks())
    ends = runs.run_ends.to_pylist()
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for cid, end in zip(runs.values.to_pylist(), ends, strict=True):
        if cid in spans:  # not grouped: the caller gathers the rows one by one
            raise NotGroupedError
        spans[cid] = (start, end)
        start = end
    return spans, columns


class NotGroupedError(Exception):
    """Rows of one conversation are not next to each other (or two conversations of a
    batch share an id)."""


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
        except NotGroupedError:
            return _by_rows(tables, dataset=dataset, config=config, split=split)


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while thousands of acyclic objects are made (it
    would rescan them again and again; reference counting still frees them: measured,
    ``to_builtins`` 3x slower at PEC scale with it running)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


TurnRow = tuple[int, str, str, str]
"""A turn's index, participant, text and kind."""

_TURN_ROW = ("turn_index", "participant_id", "text", "kind")
_ANNOTATION_MARK = ("turn_index", "layer", "label")


class PreparedTables:
    """The unified tables of a batch decoded once into Python columns, from which any of its
    conversations is built in microseconds (:meth:`build`); what a corpus caches per stored
    batch for random access. The tables' rows must be grouped by conversation (as the bank
    stores them)."""

    def __init__(self, tables: Mapping[str, pa.Table], *, dataset: str, config: str, split: str) -> None:
        schema = self.schema = SCHEMA
        conv = tables["conversations"]
        c = {name: conv.column(name).to_pylist() for name in conv.column_names}
        self._spans: list[dict[str, tuple[int, int]]] = []
        self._said: list[list[tuple[Any, ...]]] = []
        for table in schema.children:
            spans, columns = _runs(tables.get(table))
            self._spans.append(spans)
            names = schema.field_names(table)
            self._said.append(list(zip(*(columns[n] for n in names), strict=True)) if columns else [])
        self._parts = list(
            zip((schema._makers[t] for t in schema.children), self._spans, self._said, strict=True)
        )
        self._conversation = schema.make_conversation
        self._turns = list(schema.children).index("turns")
        turn = schema.field_names("turns")
        self._turn_row = itemgetter(*(turn.index(n) for n in _TURN_ROW))
        self._turn_index = turn.index("turn_index")
        self._people = list(schema.children).index("participants")
        self._roles = tuple(schema.field_names("participants").index(n) for n in ("participant_id", "role"))
        marks = schema.field_names("annotations")
        self._marks = list(schema.children).index("annotations")
        self._mark = itemgetter(*(marks.index(n) for n in _ANNOTATION_MARK))
        n = conv.num_rows
        given = {"dataset": dataset, "config": config, "split": split}
        self._rows = list(
            zip(*(c.get(f) or [given[f]] * n if f in given else c[f] for f in schema.scalars), strict=True)
        )
        self._key = schema.scalars.index(KEY)
        self._where = itemgetter(*(schema.scalars.index(f) for f in (*PARTITION_COLUMNS, KEY)))

    def __len__(self) -> int:
        return len(self._rows)

    def build(self, row: int) -> Conversation:
        """A new :class:`Conversation` from row ``row`` of the conversations table."""
        decode = _decode
        r = self._rows[row]
        cid = r[self._key]
        none = (0, 0)
        kids = [make(said[slice(*spans.get(cid, none))], decode) for make, spans, said in self._parts]
        turns = kids[self._turns]
        if any(turns[k].turn_index > turns[k + 1].turn_index for k in range(len(turns) - 1)):
            turns.sort(key=lambda x: x.turn_index)
        return self._conversation(r, kids, decode)

    def rows_of(self, row: int) -> tuple[tuple[Any, ...], list[list[tuple[Any, ...]]]]:
        """The stored values of conversation ``row``: its scalar fields (in field order) and
        each child table's row tuples (their :meth:`UnifiedSchema.field_names`, JSON as text),
        turns in the order :meth:`build` gives them. What :mod:`convbank.model.records`
        writes."""
        r = self._rows[row]
        cid = r[self._key]
        none = (0, 0)
        kids = [said[slice(*spans.get(cid, none))] for _, spans, said in self._parts]
        turns = kids[self._turns]
        at = self._turn_index
        if any(turns[k][at] > turns[k + 1][at] for k in range(len(turns) - 1)):
            turns.sort(key=itemgetter(at))
        return r, kids

    def turn(
        self, row: int, turn_index: int
    ) -> tuple[tuple[str, str, str, str], TurnRow, str, list[tuple[str, str]]]:
        """One turn of conversation ``row`` without building the conversation: its
        conversation's (dataset, config, split, id), the turn's (turn index, participant,
        text, kind), its speaker's role ("" if not listed) and its annotations' (layer,
        label) pairs. What the ``turns`` example view reads."""
        where = self._where(self._rows[row])
        cid = where[3]
        none = (0, 0)
        ts, te = self._spans[self._turns].get(cid, none)
        said = [self._turn_row(t) for t in self._said[self._turns][ts:te]]
        at = turn_index if turn_index < len(said) and said[turn_index][0] == turn_index else None
        if at is None:
            at = next(i for i, t in enumerate(said) if t[0] == turn_index)
        k, pid, text, kind = said[at]
        ps, pe = self._spans[self._people].get(cid, none)
        p_at, r_at = self._roles
        role = next((p[r_at] for p in self._said[self._people][ps:pe] if p[p_at] == pid), "")
        as_, ae = self._spans[self._marks].get(cid, none)
        marks = [
            (layer, label)
            for t, layer, label in map(self._mark, self._said[self._marks][as_:ae])
            if t == turn_index
        ]
        return where, (k, pid, text, kind), role, marks


def _by_rows(tables: Mapping[str, pa.Table], *, dataset: str, config: str, split: str) -> list[Conversation]:
    """Conversations from tables whose rows are not grouped by conversation, row by row."""
    schema = SCHEMA
    grouped: list[dict[str, list[tuple[Any, ...]]]] = []
    for table in schema.children:
        groups: dict[str, list[tuple[Any, ...]]] = {}
        names = schema.field_names(table)
        data = tables.get(table)
        for row in data.to_pylist() if data is not None else ():
            groups.setdefault(row[KEY], []).append(tuple(row[n] for n in names))
        grouped.append(groups)
    given = {"dataset": dataset, "config": config, "split": split}
    out = []
    for row in tables["conversations"].to_pylist():
        r = tuple(row.get(f, given[f]) if f in given else row[f] for f in schema.scalars)
        kids = [
            schema.make(t, g.get(row[KEY], ()), _decode)
            for t, g in zip(schema.children, grouped, strict=True)
        ]
        kids[list(schema.children).index("turns")].sort(key=lambda t: t.turn_index)
        out.append(schema.make_conversation(r, kids, _decode))
    return out
