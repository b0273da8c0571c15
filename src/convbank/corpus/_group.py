"""A stored batch decoded for random access where the bank has no record files: its four
tables, where each conversation's rows are, and (after enough single reads) its Python
columns (:class:`Group`, cached by :class:`convbank.corpus._source.Source`)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from convbank._forksafe import renew_after_fork
from convbank.model import UNIFIED_TABLES, Conversation, Part, tables_to_conversations
from convbank.model.schema import PreparedTables, paused_gc


class Cache(Protocol):
    """What holds a :class:`Group`: told of the bytes it adds (``grew``)."""

    def grew(self, added: int) -> None: ...


__all__ = ["Group"]

_PREPARE_SHARE = 32
"""A batch's Python columns are decoded whole once a 32nd of its conversations have been read
one by one: decoding a PEC batch of 2,000 costs about what 130 single reads cost through Arrow
slices (60 ms against 0.47 ms each, measured here), so a few random reads stay cheap and a
pass over the batch pays one decoding (rent until renting would have cost the purchase)."""


class Group:
    """A decoded batch: its four tables, where each conversation's rows are, and (after enough
    single reads) its Python columns."""

    def __init__(self, tables: dict[str, pa.Table], part: Part, dataset: str) -> None:
        self.tables = tables
        self.part = part
        self.dataset = dataset
        self.ids: list[str] = tables["conversations"].column("conversation_id").to_pylist()
        self.spans = {name: _spans(tables[name]) for name in UNIFIED_TABLES[1:]}
        self.prepared: PreparedTables | None = None
        self.reads = 0
        self.prepare_after = max(4, len(self.ids) // _PREPARE_SHARE)
        self.nbytes: int = sum(t.nbytes for t in tables.values())
        self.lock = threading.Lock()
        renew_after_fork(self, lock=threading.Lock)

    @property
    def cost(self) -> int:
        """Bytes this batch holds in the cache (Python columns at three times their Arrow size)."""
        return self.nbytes * (4 if self.prepared is not None else 1)

    def _prepare(self) -> int:
        """Decode the Python columns (once); the bytes this added to the cache."""
        with self.lock, paused_gc():
            if self.prepared is not None:
                return 0
            self.prepared = PreparedTables(
                self.tables, dataset=self.dataset, config=self.part.config, split=self.part.split
            )
            return self.nbytes * 3

    def conversation(self, row: int, source: Cache) -> Conversation:
        """Conversation ``row`` of this batch, a new object each time: built from the Python
        columns once they are decoded, else from Arrow slices of its rows."""
        prepared = self.prepared
        if prepared is None:
            self.reads += 1
            if self.reads > self.prepare_after:
                source.grew(self._prepare())
                prepared = self.prepared
        if prepared is not None:
            return prepared.build(row)
        return self.subset([row])[0]

    def prepared_tables(self, source: Cache) -> PreparedTables:
        """The batch's Python columns, decoded now if they were not (what a pass over many of
        its rows, such as the ``turns`` example view's, reads)."""
        if self.prepared is None:
            source.grew(self._prepare())
        assert self.prepared is not None
        return self.prepared

    def subset(self, rows: Sequence[int]) -> list[Conversation]:
        """Conversations at these rows (distinct), in that order: their rows of each table
        taken and decoded together, column by column."""
        if self.prepared is not None:
            return [self.prepared.build(r) for r in rows]
        chosen = {"conversations": self.tables["conversations"].take(pa.array(rows, pa.int64()))}
        for name, spans in self.spans.items():
            ranges = [spans.get(self.ids[r], (0, 0)) for r in rows]
            taken = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in ranges])
            chosen[name] = self.tables[name].take(pa.array(taken))
        return tables_to_conversations(
            chosen, dataset=self.dataset, config=self.part.config, split=self.part.split
        )


def _spans(table: pa.Table) -> dict[str, tuple[int, int]]:
    """``{conversation_id: (start, end)}`` of a table whose rows are grouped by conversation."""
    if table.num_rows == 0:
        return {}
    runs = pc.run_end_encode(table.column("conversation_id").combine_chunks())
    ends = runs.run_ends.to_pylist()
    return dict(zip(runs.values.to_pylist(), zip([0, *ends[:-1]], ends, strict=True), strict=True))
