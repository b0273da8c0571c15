"""Conversations as JSON records, one a conversation: what the bank's record files hold
(:mod:`convbank.store.records`), so that one conversation is served by decoding its own few
hundred bytes, not a stored batch of 2,000.

A record is made from the unified tables of a stored batch without building
:class:`~convbank.model.Conversation` objects: each row's stored values go into the JSON as
they are, ``meta`` columns spliced in as the JSON text they hold (:class:`msgspec.Raw`), so a
record decodes (with msgspec, into the model's Structs, in C) into exactly the conversation
that :func:`~convbank.model.tables_to_conversations` makes of the same rows: the same JSON
text decoded by the same decoder, the rows in the same order (turns sorted by index where
the stored order is not).

The participants are left out of a conversation's record and returned as records of their
own, so that a file can keep each distinct participant once (PEC lists every speaker's
persona in every conversation it speaks in: 9,990 distinct participants of 134,740 in a
synthetic PEC of 30,000 conversations). The record of a conversation is then the JSON array
``[conversation, [positions of its participants in the file's pool]]``; in a file whose
participants are mostly distinct (CaSiNo's, ConvAI2's) it is ``[conversation, null]``, the
participants inside.

Example::

    codec = RecordCodec.of()
    rows = codec.rows(tables, dataset="casino", config="default", split="train")
    conversation, pooled = rows[0]          # JSON-ready dict, participants' JSON records
    made, _ = codec.decode(codec.encode(conversation, list(range(len(pooled)))))
    assert codec.attach(made, [codec.participant(p) for p in pooled]) == first
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from convbank.model.schema import SCHEMA, Column, PreparedTables, UnifiedSchema, paused_gc

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["POOLED", "RecordCodec"]

POOLED = "participants"
"""The child table whose rows a record file keeps once each (see the module doc)."""


def _json_value(column: Column, name: str) -> str:
    if column.json:
        return f"(None if {name} is None else R({name}))"
    return name


def _dicts(names: Sequence[str], columns: Sequence[Column]) -> Callable[[Sequence[Any]], list[Any]]:
    """``rows -> [dict]``: JSON-ready dicts of row tuples (JSON columns as raw JSON text)."""
    values = [f"v{i}" for i in range(len(names))]
    items = ", ".join(f"{n!r}: {_json_value(c, v)}" for n, c, v in zip(names, columns, values, strict=True))
    unpack = ", ".join(values) + ("," if len(values) == 1 else "")
    source = f"lambda rows: [{{{items}}} for {unpack} in rows]"
    return eval(compile(source, "<convbank.model.records>", "eval"), {"R": msgspec.Raw})  # type: ignore[no-any-return]


class RecordCodec:
    """The records of one conversation model (:class:`~convbank.model.schema.UnifiedSchema`):
    made once per model (:meth:`of`)."""

    _made: ClassVar[dict[int, RecordCodec]] = {}

    @classmethod
    def of(cls, schema: UnifiedSchema | None = None) -> RecordCodec:
        """The codec of ``schema`` (default: the model convbank uses now, :data:`SCHEMA`)."""
        from convbank.model import schema as unified

        schema = schema or unified.SCHEMA
        found = cls._made.get(id(schema))
        if found is None or found.schema is not schema:
            found = cls._made[id(schema)] = cls(schema)
        return found

    def __init__(self, schema: UnifiedSchema = SCHEMA) -> None:
        self.schema = schema
        self.children = [t for t in schema.children if t != POOLED]
        self.pooled = POOLED in schema.children
        own = {c.name: c for c in schema.fields["conversations"]}
        # the partition columns and the key are plain strings, as the key column is
        scalars = [own.get(f, schema.key) for f in schema.scalars]
        self._conversation = _dicts(schema.scalars, scalars)
        self._child = {t: _dicts(schema.field_names(t), schema.fields[t]) for t in schema.children}
        self._encode = msgspec.json.Encoder().encode
        cls = schema.conversation
        self._decode_record = msgspec.json.Decoder(tuple[cls, list[int] | None]).decode  # type: ignore[valid-type]
        pooled = schema.children.get(POOLED)
        self._decode_pooled = msgspec.json.Decoder(pooled).decode if pooled is not None else None

    def rows(
        self, tables: Mapping[str, pa.Table], *, dataset: str, config: str, split: str
    ) -> list[tuple[dict[str, Any], list[bytes]]]:
        """Each conversation of a stored batch (its unified tables, rows grouped by
        conversation) as a JSON-ready dict without its participants, and its participants'
        JSON records, in order."""
        with paused_gc():
            prepared = PreparedTables(tables, dataset=dataset, config=config, split=split)
            children = list(self.schema.children)
            encode = self._encode
            pooled = children.index(POOLED) if self.pooled else -1
            out = []
            for row in range(len(prepared)):
                scalars, kids = prepared.rows_of(row)
                conversation = self._conversation((scalars,))[0]
                participants: list[bytes] = []
                for k, (table, said) in enumerate(zip(children, kids, strict=True)):
                    if k == pooled:
                        participants = [encode(d) for d in self._child[table](said)]
                    else:
                        conversation[table] = self._child[table](said)
                out.append((conversation, participants))
            return out

    def encode(self, conversation: dict[str, Any], pooled: list[int]) -> bytes:
        """The record of a conversation (from :meth:`rows`) whose participants are at these
        positions of its file's pool."""
        return self._encode((conversation, pooled))

    def encode_whole(self, conversation: dict[str, Any], participants: list[bytes]) -> bytes:
        """The record of a conversation (from :meth:`rows`) holding its participants (their
        records, from :meth:`rows`): for files whose participants are not pooled."""
        if self.pooled:
            conversation[POOLED] = [msgspec.Raw(p) for p in participants]
        return self._encode((conversation, None))

    def decode(self, record: bytes) -> tuple[Any, list[int] | None]:
        """A record's :class:`~convbank.model.Conversation` and its participants' positions
        in the file's pool (the participants not yet there: set them with :meth:`attach`),
        or None for a record that holds them (:meth:`encode_whole`)."""
        return self._decode_record(record)

    def attach(self, conversation: Any, participants: list[Any]) -> Any:
        """``conversation`` (from :meth:`decode`) with its participants (each from
        :meth:`participant`), returned."""
        if self.pooled:
            setattr(conversation, POOLED, participants)
        return conversation

    def participant(self, record: bytes) -> Any:
        """A participant from its record."""
        assert self._decode_pooled is not None
        return self._decode_pooled(record)
