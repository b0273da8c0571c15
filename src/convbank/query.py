"""Reading the bank: :func:`load` returns a :class:`~convbank.Corpus` (see
:mod:`convbank.corpus`); :func:`sql` runs read-only SQL, :func:`sql_batches` streams its result."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from convbank._wording import article
from convbank.corpus import DEFAULT_CACHE_BYTES, Corpus
from convbank.model import UNIFIED_TABLES
from convbank.store import Bank, Snapshot

__all__ = ["Corpus", "describe", "load", "sql", "sql_batches"]


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
    (900, '938')
    """
    if isinstance(name, (list, tuple, set, frozenset)):
        from convbank.errors import UnknownDatasetError

        raise UnknownDatasetError(
            f"a corpus holds one dataset, not {len(name)} ({', '.join(map(repr, name))}): load each "
            "([convbank.load(name) for name in names]), or query them together with convbank.sql",
            kind="dataset",
            name=name,
        )
    for what, value in (("config", config), ("split", split)):
        if value is not None and not isinstance(value, str):
            raise TypeError(
                f"{article(what)} is named by one string, not {type(value).__name__} {value!r} "
                f"(None loads every {what}; load several one at a time)"
            )
    if bank is not None and not isinstance(bank, Bank):  # as a_bank_or_none says (no DuckDB here)
        raise TypeError(f"bank is a convbank.store.Bank (Bank(path)), not {type(bank).__name__} {bank!r:.80}")
    return Corpus(name, config, split, bank=bank, cache_bytes=cache_bytes)


def describe(*, bank: Bank | None = None) -> list[dict[str, Any]]:
    """The views SQL can read: ``[{"name", "rows", "columns": [{"name", "type"}]}]``, the
    unified tables first."""
    from convbank.store.queries import a_bank_or_none
    from convbank.store.sql import connect  # DuckDB, imported by SQL alone (not by load)

    with (a_bank_or_none(bank) or Bank()).snapshot() as snapshot:
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
    (no file, no setting, nothing that outlives the call). By default nothing limits a
    query (Ctrl-C interrupts it). With ``timeout`` (seconds) or ``memory_limit`` (``"1GB"``)
    the query runs in a worker process that the operating system holds to them (a capped
    address space, killed at the deadline), so that no expression can overrun them; past
    either, :class:`QueryError`. The worker stays warm for the next call: a limit costs
    milliseconds, not a process start. For results larger than memory, :func:`sql_batches`.

    Of several statements (``"SELECT 1 AS a; SELECT 2 AS b"``) only the last one's result
    is returned, with a warning (:class:`UserWarning`) that the earlier ones' were dropped.

    Example: ``convbank.sql("SELECT dataset, count(*) FROM turns GROUP BY 1", timeout=30)``
    """
    from convbank.store.queries import stream
    from convbank.store.sql import collect

    items = stream(
        query, bank=bank, snapshot=snapshot, timeout=timeout, memory_limit=memory_limit, last_only=True
    )
    return collect(_warned(items))


def _warned(items: Iterator[Any]) -> Iterator[Any]:
    """``items``, with a warning when the last result follows dropped earlier statements."""
    from convbank.store.sql import Begin

    for item in items:
        if isinstance(item, Begin) and item.count > 1:
            import warnings

            dropped = item.count - 1
            warnings.warn(
                f"{dropped} earlier " + ("statements' results" if dropped > 1 else "statement's result") + " "
                "dropped: convbank.sql returns the last statement's result (run each statement on "
                "its own to get each)",
                UserWarning,
                stacklevel=4,
            )
        yield item


def sql_batches(
    query: str,
    *,
    bank: Bank | None = None,
    snapshot: Snapshot | None = None,
    timeout: float | None = None,
    memory_limit: str | None = None,
    batch_rows: int = 8192,
) -> Iterator[pa.RecordBatch]:
    """As :func:`sql` (the last statement's result, a warning for the others), but it
    arrives in Arrow record batches of ``batch_rows`` rows as DuckDB produces them, so that
    memory stays bounded whatever its size; ``timeout`` covers the whole stream. Leaving the
    loop early ends the query.

    Example: ``for batch in convbank.sql_batches("SELECT * FROM turns"): ...``
    """
    from convbank.store.queries import stream
    from convbank.store.sql import Begin

    for item in _warned(
        stream(
            query,
            bank=bank,
            snapshot=snapshot,
            timeout=timeout,
            memory_limit=memory_limit,
            batch_rows=batch_rows,
            last_only=True,
        )
    ):
        if not isinstance(item, Begin):
            yield item
