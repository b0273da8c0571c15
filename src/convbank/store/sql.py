"""DuckDB over the bank, read-only by construction.

A connection is an in-memory database that cannot touch a file at all
(``enable_external_access=false``, configuration locked): the bank's tables reach it as
Arrow datasets over the files of one pinned generation, which DuckDB can scan but has no
way to write. Whatever a statement does (``COPY ... TO``, ``EXPLAIN ANALYZE`` of a write,
``ATTACH``, ``CREATE VIEW``) can change nothing but that connection's own catalog, and every
query gets its own connection. The statement check (:func:`is_read_only`) only gives a
clearer message first.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import pyarrow as pa

from convbank.errors import DamagedBankError, NotBuiltError, QueryError
from convbank.model.schema import JSON_FIELD, PARTITION_COLUMNS, UNIFIED_TABLES
from convbank.store.bank import Bank, Snapshot
from convbank.store.snapshot import damaged

__all__ = ["READ_ONLY_STATEMENTS", "bank_queries", "connect", "damage_of", "deadline", "is_read_only", "run"]

READ_ONLY_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})

_PINNED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Snapshot] = weakref.WeakKeyDictionary()
"""The generation each connection reads (to name a damaged file when a scan fails)."""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def connect(
    source: Bank | Snapshot,
    *,
    threads: int | None = None,
    memory_limit: str | None = None,
) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB connection with a view per bank table (``meta`` columns as
    JSON) and no file access at all; ``memory_limit`` (e.g. ``"512MB"``) bounds what a query
    may hold (nothing spills to disk). A :class:`Bank` is pinned for the connection's life;
    a :class:`Snapshot` stays the caller's to close."""
    snapshot = source if isinstance(source, Snapshot) else source.snapshot()
    if not snapshot.tables():
        raise NotBuiltError(f"the bank at {snapshot.bank.root} is empty; run `convbank build` first")
    snapshot.check()
    datasets = snapshot.arrow_datasets()
    config: dict[str, str | bool | int | float | list[str]] = {
        "temp_directory": "",  # nothing spills to disk: a query over its memory limit fails
        "python_enable_replacements": False,  # SQL cannot reach this process's Python objects
    }
    if threads:
        config["threads"] = int(threads)
    if memory_limit:
        config["memory_limit"] = memory_limit
    try:
        con = duckdb.connect(":memory:", config=config)
    except duckdb.Error as exc:
        raise QueryError(f"cannot open a query connection: {str(exc).splitlines()[0]}") from exc
    keys = ", ".join(PARTITION_COLUMNS)
    for table, data in datasets.items():
        con.register(f"_arrow_{table}", data)
        replace = " REPLACE (meta::JSON AS meta)" if table in UNIFIED_TABLES else ""
        con.execute(
            f"CREATE VIEW {_quote(table)} AS SELECT {keys}, * EXCLUDE ({keys}){replace} "
            f"FROM {_quote('_arrow_' + table)}"
        )
    con.execute("SET enable_progress_bar=false")  # never on the caller's stdout
    con.execute("SET enable_external_access=false")
    con.execute("SET lock_configuration=true")
    if snapshot is not source:
        weakref.finalize(con, snapshot.close)
    _PINNED[con] = snapshot
    return con


def is_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`QueryError` unless every statement of ``sql`` only reads (a clear
    message first; the connection itself cannot write whatever passes)."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL syntax error: {str(exc).splitlines()[0]}") from exc
    except (TypeError, UnicodeError) as exc:
        raise QueryError(f"the SQL cannot be read: {exc}") from exc
    if not statements:
        raise QueryError("empty SQL statement")
    for st in statements:
        kind = st.type.name
        if kind not in READ_ONLY_STATEMENTS:
            raise QueryError(
                f"only read-only statements are allowed (SELECT, WITH ... SELECT, DESCRIBE, "
                f"SHOW, EXPLAIN); got {kind}"
            )


@contextmanager
def deadline(con: duckdb.DuckDBPyConnection, seconds: float | None) -> Iterator[threading.Event]:
    """Interrupt whatever ``con`` runs once ``seconds`` have passed (no limit for None);
    yields an event that is set when the limit struck."""
    struck = threading.Event()

    def strike() -> None:
        struck.set()
        con.interrupt()

    timer = threading.Timer(seconds, strike) if seconds else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield struck
    finally:
        if timer is not None:
            timer.cancel()


def run(con: duckdb.DuckDBPyConnection, sql: str, *, timeout: float | None = None) -> pa.Table:
    """Run read-only ``sql`` (one or more statements; the last one's result) on ``con``
    within ``timeout`` seconds; DuckDB errors become one-line :class:`QueryError`."""
    is_read_only(con, sql)
    with deadline(con, timeout) as struck:
        try:
            result = con.sql(sql)
            if result is None:
                return pa.table({})
            return _mark_json(result.to_arrow_table(), [str(t) for t in result.types])
        except duckdb.Error as exc:
            damage = damage_of(_PINNED.get(con), exc)
            if damage is not None:
                raise damage from exc
            raise _query_error(exc, struck.is_set(), timeout) from exc
        except (TypeError, UnicodeError) as exc:  # text DuckDB cannot take (lone surrogates)
            raise QueryError(f"the SQL cannot be read: {exc}") from exc


@contextmanager
def bank_queries(snapshot: Snapshot) -> Iterator[None]:
    """Around convbank's own queries over a bank (statistics, checks): those are valid SQL,
    so a DuckDB error there means a file the size check could not catch (same size,
    corrupt bytes) and becomes a one-line :class:`DamagedBankError`."""
    try:
        yield
    except duckdb.Error as exc:
        damage = damage_of(snapshot, exc)
        if damage is not None:
            raise damage from exc
        raise DamagedBankError(
            f"the bank at {snapshot.bank.root} cannot be read ({str(exc).splitlines()[0]}); run "
            "`convbank doctor` to find the damaged file, then rebuild its dataset"
        ) from exc


def damage_of(snapshot: Snapshot | None, exc: duckdb.Error) -> DamagedBankError | None:
    """The damaged file behind a failed scan of the bank's files (a page whose checksum
    fails, bytes that cannot be decoded), found by its sha256; None for other errors."""
    if snapshot is None or "reading the stream registered as" not in str(exc):
        return None
    ref = snapshot.locate_damage()
    if ref is None:
        return None
    return DamagedBankError(damaged(ref, f"corrupt ({_arrow_cause(exc)})"))


def _arrow_cause(exc: duckdb.Error) -> str:
    """What Arrow said when a scan failed (after DuckDB's own prefix)."""
    line = str(exc).splitlines()[0]
    return line.split(" failed: ", 1)[-1]


def _mark_json(table: pa.Table, types: list[str]) -> pa.Table:
    """Mark the columns DuckDB typed ``JSON`` (Arrow sees plain strings) with the field
    metadata the unified schemas use, so that readers can decode them."""
    fields = [
        f.with_metadata({**(f.metadata or {}), **JSON_FIELD}) if t in ("JSON", "JSON[]") else f
        for f, t in zip(table.schema, types, strict=True)
    ]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def _query_error(exc: duckdb.Error, timed_out: bool, timeout: float | None) -> QueryError:
    if timed_out or isinstance(exc, duckdb.InterruptException):
        return QueryError(f"the query ran past its time limit of {timeout:g} s and was stopped")
    if isinstance(exc, duckdb.OutOfMemoryException):
        return QueryError(
            f"the query needs more memory than its limit allows ({str(exc).splitlines()[0]}); "
            "select fewer rows or columns, or aggregate"
        )
    return QueryError(f"SQL error: {str(exc).splitlines()[0]}")
