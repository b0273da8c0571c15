"""Reading the bank: :func:`load` returns a :class:`~convbank.Corpus` (see
:mod:`convbank.corpus`); :func:`sql` runs read-only SQL."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from convbank.corpus import DEFAULT_CACHE_BYTES, Corpus
from convbank.errors import NotBuiltError, QueryError
from convbank.model import UNIFIED_TABLES
from convbank.store import Bank, Snapshot, connect
from convbank.store.sandbox import SqlSandbox, parse_size
from convbank.store.sql import run

__all__ = ["Corpus", "describe", "load", "sql"]


def load(
    name: str,
    config: str | None = None,
    split: str | None = None,
    *,
    bank: Bank | None = None,
    cache_bytes: int = DEFAULT_CACHE_BYTES,
) -> Corpus:
    """Open a built dataset as a :class:`Corpus` (raises :class:`NotBuiltError` if absent):
    every config and split unless named; ``cache_bytes`` bounds the decoded batches kept for
    random access.

    >>> corpus = convbank.load("casino", split="train")
    >>> len(corpus), corpus[0].conversation_id
    (900, '1')
    """
    return Corpus(name, config, split, bank=bank, cache_bytes=cache_bytes)


def describe(*, bank: Bank | None = None) -> list[dict[str, Any]]:
    """The views SQL can read: ``[{"name", "rows", "columns": [{"name", "type"}]}]``, the
    unified tables first."""
    with (bank or Bank()).snapshot() as snapshot:
        con = connect(snapshot)
        try:
            views = []
            names = sorted(snapshot.tables(), key=lambda t: (t not in UNIFIED_TABLES, t))
            for name in names:
                columns = con.execute(f'DESCRIBE "{name}"').fetchall()
                views.append(
                    {
                        "name": name,
                        "rows": sum(r.rows or 0 for r in snapshot.refs(name)),
                        "columns": [{"name": c[0], "type": c[1]} for c in columns],
                    }
                )
            return views
        finally:
            con.close()


def sql(
    query: str,
    *,
    bank: Bank | None = None,
    snapshot: Snapshot | None = None,
    timeout: float | None = None,
    memory_limit: str | None = None,
) -> pa.Table:
    """Run one or more read-only statements over the bank's views; return the last result.

    Every call gets its own connection, which can read the bank's tables and nothing else
    (no file, no setting, nothing that outlives the call). With ``timeout`` (seconds) or
    ``memory_limit`` (``"1GB"``) the query runs in a child process that the operating
    system holds to them (a capped address space, killed at the deadline), so that no
    expression can overrun them; past either, :class:`QueryError`.
    """
    if timeout is None and memory_limit is None:
        con = connect(snapshot or bank or Bank())
        try:
            return run(con, query)
        finally:
            con.close()
    try:
        memory = parse_size(memory_limit) if memory_limit else 0
    except ValueError as exc:
        raise QueryError(f"memory limit: {exc}") from None
    pinned = snapshot or (bank or Bank()).snapshot()
    sandbox = SqlSandbox(pinned.bank.root, workers=1, memory=memory)
    try:
        if not pinned.tables():
            raise NotBuiltError(f"the bank at {pinned.bank.root} is empty; run `convbank build` first")
        return sandbox.table(pinned.generation, query, timeout=timeout)
    finally:
        sandbox.close()
        if snapshot is None:
            pinned.close()
