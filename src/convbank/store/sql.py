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

import re
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from convbank._wording import article, counted
from convbank._workers import ctrl_c_said, forbid_fork
from convbank.errors import DamagedBankError, NotBuiltError, QueryError
from convbank.model.schema import JSON_FIELD, PARTITION_COLUMNS, UNIFIED_TABLES
from convbank.store._exact import exact_relation, names_kept
from convbank.store._held import HeldFile
from convbank.store._pumped import pumped
from convbank.store._statements import explained, kind_of
from convbank.store.bank import Bank, Snapshot
from convbank.store.integrity import damaged

__all__ = [
    "BATCH_ROWS",
    "READ_ONLY_STATEMENTS",
    "bank_queries",
    "connect",
    "damage_of",
    "deadline",
    "fetched",
    "interrupt_all",
    "is_read_only",
    "results",
    "run",
    "statements",
    "verify",
]

READ_ONLY_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})
BATCH_ROWS = 8192
"""Rows of a streamed batch: what a reader of :func:`results` holds at a time."""

_LIVE: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
"""Every open connection of this process, for :func:`interrupt_all`."""
_SIGNALLED: weakref.WeakSet[duckdb.DuckDBPyConnection] = weakref.WeakSet()
"""The connections :func:`interrupt_all` interrupted: their interrupt is the signal's, said as
:class:`KeyboardInterrupt`; another connection's is its time limit's, whatever came before."""


def interrupt_all() -> None:
    """Interrupt whatever every connection of this process runs (the command line's Ctrl-C:
    DuckDB stops at once and its call raises :class:`KeyboardInterrupt`)."""
    for con in list(_LIVE):
        _SIGNALLED.add(con)
        with suppress(duckdb.Error):  # closed meanwhile
            con.interrupt()


_PINNED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, Snapshot] = weakref.WeakKeyDictionary()
"""The generation each connection reads (to name a damaged file when a scan fails)."""

_HELD: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, list[HeldFile]] = weakref.WeakKeyDictionary()
"""The files each connection reads, held open for its life (see :func:`verify`)."""


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
        raise NotBuiltError(
            f"the bank at {snapshot.bank.root} is empty; run `convbank build` first", path=snapshot.bank.root
        )
    snapshot.check()
    held: list[HeldFile] = []
    datasets = snapshot.arrow_datasets(held)
    config: dict[str, str | bool | int | float | list[str]] = {
        "temp_directory": "",  # nothing spills to disk: a query over its memory limit fails
        "python_enable_replacements": False,  # SQL cannot reach this process's Python objects
    }
    if threads:
        config["threads"] = int(threads)
    if memory_limit:
        config["memory_limit"] = memory_limit
    forbid_fork()  # DuckDB's threads: a worker is then started anew, not forked from here
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
    _LIVE.add(con)
    _PINNED[con] = snapshot
    _HELD[con] = held
    return con


def verify(con: duckdb.DuckDBPyConnection) -> None:
    """Raise :class:`~convbank.errors.DamagedBankError` naming a file of the bank that was
    written since ``con`` checked it (its footer checked again through the descriptor the
    connection reads): called before each answer is given, so that none comes from a file
    written in place under a query. Nothing to do for a connection of another maker."""
    for held in _HELD.get(con, ()):
        held.verify()


def statements(con: duckdb.DuckDBPyConnection, sql: str) -> list[str]:
    """The statements of ``sql``, in order; raises :class:`QueryError` unless every one only
    reads (a clear message first; the connection itself cannot write whatever passes)."""
    _readable(sql)
    try:
        parsed = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL syntax error: {_message(exc)}", sql=sql) from exc
    if not parsed:
        raise QueryError("empty SQL statement", sql=sql)
    for st in parsed:
        kind = kind_of(st)
        if kind == "EXPLAIN":  # EXPLAIN ANALYZE runs what it explains: that must only read too
            inner = explained(st.query)
            kinds = [kind_of(s) for s in con.extract_statements(inner)] if inner.strip() else []
            if any(k not in READ_ONLY_STATEMENTS or k == "EXPLAIN" for k in kinds):
                kind = f"EXPLAIN of {kinds[0]}"
        if kind == "MULTI":  # DuckDB's one statement for a PIVOT that reads its values
            raise QueryError(_PIVOT_VALUES, sql=st.query)
        if kind not in READ_ONLY_STATEMENTS:
            kind = "LOAD or INSTALL" if kind == "LOAD" else kind  # DuckDB's one type for both
            raise QueryError(
                f"only read-only statements are allowed (SELECT, WITH ... SELECT, DESCRIBE, "
                f"SHOW, EXPLAIN); got {kind}",
                sql=st.query,
            )
    return [st.query for st in parsed]


_PIVOT_VALUES = (
    "a PIVOT that takes its values from the data runs as several statements, not all "
    "read-only (it first creates a type of them); name the values: "
    "PIVOT conversations ON split IN ('train', 'test') USING count(*) GROUP BY dataset"
)
"""What :func:`statements` says of DuckDB's ``MULTI`` statement (before: ``got MULTI``, a
kind the SQL never named)."""


def is_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`QueryError` unless every statement of ``sql`` only reads."""
    statements(con, sql)


def _readable(sql: str) -> None:
    """One line for text DuckDB cannot take: not a string, or a lone surrogate."""
    if not isinstance(sql, str):
        raise QueryError(f"the SQL cannot be read: it is {article(type(sql).__name__)}, not text", sql=sql)
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError(
            f"the SQL cannot be read: character {exc.start + 1} is not valid Unicode "
            f"({exc.object[exc.start]!a}, a lone surrogate)",
            sql=sql,
        ) from None


def _message(exc: BaseException) -> str:
    """DuckDB's whole message (its hints and the ``LINE 1: ... ^`` caret), trailing space cut."""
    return str(exc).rstrip()


def _bind(con: duckdb.DuckDBPyConnection, text: str) -> duckdb.DuckDBPyRelation | None:
    """``con.sql(text)`` (bound, not yet run), its catalog and binder errors with DuckDB's
    ``LINE n: ... ^`` caret: the relational API leaves it out of those, so the statement is
    bound once more as a ``PREPARE`` (which runs nothing) on a line of its own, whose error
    keeps it (its line number one more than the statement's)."""
    try:
        return con.sql(text)
    except (duckdb.CatalogException, duckdb.BinderException) as exc:
        if "\nLINE " in str(exc):
            raise
        try:
            con.execute("PREPARE _convbank_bind AS\n" + text)
        except type(exc) as full:
            caret = line_up(str(full))
            if caret.startswith(str(exc).rstrip()) and caret != str(full):
                raise type(exc)(caret) from None
        except duckdb.Error:
            pass
        else:
            con.execute("DEALLOCATE _convbank_bind")
        raise


def line_up(message: str) -> str:
    """``message`` with its ``LINE n:`` one line up (the caret under it moved along when
    the number loses a digit: ``LINE 10:`` becomes ``LINE 9:``)."""
    lines = message.split("\n")
    for i, line in enumerate(lines):
        match = re.match(r"LINE (\d+):", line)
        if match and int(match.group(1)) > 1:
            number = str(int(match.group(1)) - 1)
            lines[i] = f"LINE {number}:" + line[match.end() :]
            cut = len(match.group(1)) - len(number)
            if cut and i + 1 < len(lines) and lines[i + 1].startswith(" " * cut):
                lines[i + 1] = lines[i + 1][cut:]
    return "\n".join(lines)


@dataclass
class Begin:
    """In the stream of :func:`results`: the next statement's result starts (its schema);
    its batches follow."""

    schema: pa.Schema
    index: int
    count: int
    types: list[str] = field(default_factory=list)
    """Its columns' DuckDB types (``INTEGER``, ``STRUCT(a VARCHAR)``), as sent to Arrow."""


@contextmanager
def deadline(con: duckdb.DuckDBPyConnection, seconds: float | None) -> Iterator[threading.Event]:
    """Interrupt whatever ``con`` runs once ``seconds`` have passed (no limit for None);
    yields an event that is set when the limit struck. A limit longer than a thread can wait
    (``threading.TIMEOUT_MAX``, 292 years) is waited that long: the timer's thread never
    dies of it (``export(..., timeout=1e10)``)."""
    struck = threading.Event()

    def strike() -> None:
        struck.set()
        con.interrupt()

    timer = threading.Timer(min(seconds, threading.TIMEOUT_MAX), strike) if seconds else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        yield struck
    finally:
        if timer is not None:
            timer.cancel()


def results(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    *,
    timeout: float | None = None,
    batch_rows: int = BATCH_ROWS,
    last_only: bool = False,
) -> Iterator[Begin | pa.RecordBatch]:
    """Run read-only ``sql`` on ``con``, streaming: for each statement in order a
    :class:`Begin`, then its result in batches of ``batch_rows`` rows (only the last
    statement's result with ``last_only``). ``timeout`` (seconds) covers the whole stream.
    DuckDB errors become :class:`QueryError` with DuckDB's whole message. On the main
    thread DuckDB runs on a helper thread, so that Ctrl-C interrupts it at once."""
    texts = statements(con, sql)
    items = _results(con, texts, timeout, batch_rows, last_only)
    if threading.current_thread() is not threading.main_thread():
        return items
    return pumped(con, items)


def _results(
    con: duckdb.DuckDBPyConnection, texts: list[str], timeout: float | None, batch_rows: int, last_only: bool
) -> Iterator[Begin | pa.RecordBatch]:
    with deadline(con, timeout) as struck, ctrl_c_said():
        try:
            for index, text in enumerate(texts):
                if last_only and index < len(texts) - 1:
                    _bind(con, text)  # bound (its errors said), not run: its result is not wanted
                    continue
                relation = _bind(con, text)
                if relation is None:
                    yield Begin(pa.schema([]), index, len(texts))
                    continue
                relation = exact_relation(relation)  # Arrow holds every value as DuckDB has it
                names_kept(relation, text)  # and every name, or the query is refused
                try:  # Arrow's errors, from its reader's schema on, are the query's
                    reader = relation.to_arrow_reader(batch_rows)
                    schema = _mark_json(reader.schema, [str(t) for t in relation.types])
                    yield Begin(schema, index, len(texts), [str(t) for t in relation.types])
                    for batch in reader:
                        verify(con)  # what it was made of is what the connection checked
                        yield pa.RecordBatch.from_arrays(batch.columns, schema=schema)
                    verify(con)  # an empty result too
                except (OSError, pa.ArrowException) as exc:  # DuckDB's error, through Arrow's stream
                    carried = _carried(exc)
                    if carried is not None:  # said below as if DuckDB had raised it
                        raise carried from exc
                    raise _batch_error(exc, batch_rows, text) from exc
        except duckdb.Error as exc:
            if isinstance(exc, duckdb.InterruptException) and con in _SIGNALLED:
                _SIGNALLED.discard(con)
                raise KeyboardInterrupt from None
            verify(con)  # a file written in place under the scan is named as such
            damage = damage_of(_PINNED.get(con), exc)
            if damage is not None:
                raise damage from exc
            raise _query_error(exc, struck.is_set(), timeout, text) from exc


def fetched(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[Any]:
    """``con.execute(sql, params).fetchall()``, run as :func:`results` runs a query: on the
    main thread DuckDB runs on a helper thread, so that Ctrl-C stops it at once (DuckDB on
    the main thread never saw it: ``stats()`` of 480,000 turns went on 4-8 s after Ctrl-C)."""
    rows = (con.execute(sql, params).fetchall() for _ in (0,))  # run where it is consumed
    if threading.current_thread() is not threading.main_thread():
        return next(rows)
    with ctrl_c_said():
        return next(pumped(con, rows))


def run(con: duckdb.DuckDBPyConnection, sql: str, *, timeout: float | None = None) -> pa.Table:
    """Run read-only ``sql`` (one or more statements; the last one's result) on ``con``
    within ``timeout`` seconds; DuckDB errors become :class:`QueryError`."""
    return collect(results(con, sql, timeout=timeout, last_only=True))


def collect(stream: Iterator[Begin | pa.RecordBatch]) -> pa.Table:
    """The last result of a :func:`results` stream as one table."""
    schema = pa.schema([])
    batches: list[pa.RecordBatch] = []
    for item in stream:
        if isinstance(item, Begin):
            schema, batches = item.schema, []
        else:
            batches.append(item)
    return pa.Table.from_batches(batches, schema=schema)


@contextmanager
def bank_queries(snapshot: Snapshot, con: duckdb.DuckDBPyConnection | None = None) -> Iterator[None]:
    """Around convbank's own queries over a bank (statistics, checks): those are valid SQL,
    so a DuckDB error there means a file the size check could not catch (same size,
    corrupt bytes) and becomes a one-line :class:`DamagedBankError`; DuckDB out of memory is a
    :class:`MemoryError` (the command says it in one line, exit 5). With ``con``, the
    connection they ran on, what they read is vouched for as the block ends (:func:`verify`:
    a file written in place under them is named, never an answer; before, ``stats`` of a
    train file written with the test split's rows counted them as train's)."""
    try:
        with ctrl_c_said():
            yield
        if con is not None:
            verify(con)
    except duckdb.Error as exc:
        if con is not None:
            verify(con)  # a file written in place under the queries, as such
        if isinstance(exc, duckdb.OutOfMemoryException):  # a want of memory, no damage: said as one
            raise MemoryError(str(exc).splitlines()[0]) from exc
        damage = damage_of(snapshot, exc)
        if damage is not None:
            raise damage from exc
        raise DamagedBankError(
            f"the bank at {snapshot.bank.root} cannot be read ({str(exc).splitlines()[0]}); run "
            "`convbank doctor` to find the damaged file, then rebuild its dataset",
            path=snapshot.bank.root,
        ) from exc


def damage_of(snapshot: Snapshot | None, exc: duckdb.Error) -> DamagedBankError | None:
    """The damaged file behind a failed scan of the bank's files (a page whose checksum
    fails, bytes that cannot be decoded), found by its sha256; None for other errors."""
    if snapshot is None or "reading the stream registered as" not in str(exc):
        return None
    seen = snapshot.damage_in(str(exc))  # a file written in place under the scan
    if seen is not None:
        return seen
    ref = snapshot.locate_damage()
    if ref is None:
        return None
    return DamagedBankError(damaged(ref, f"corrupt ({_arrow_cause(exc)})"), path=ref.path)


def _arrow_cause(exc: duckdb.Error) -> str:
    """What Arrow said when a scan failed (after DuckDB's own prefix)."""
    line = str(exc).splitlines()[0]
    return line.split(" failed: ", 1)[-1]


def _mark_json(schema: pa.Schema, types: list[str]) -> pa.Schema:
    """Mark the columns DuckDB typed ``JSON`` (Arrow sees plain strings) with the field
    metadata the unified schemas use, so that readers can decode them."""
    fields = [
        f.with_metadata({**(f.metadata or {}), **JSON_FIELD}) if t in ("JSON", "JSON[]") else f
        for f, t in zip(schema, types, strict=True)
    ]
    return pa.schema(fields, metadata=schema.metadata)


_CARRIED: dict[str, type[duckdb.Error]] = {
    "INTERRUPT Error": duckdb.InterruptException,
    "Out of Memory Error": duckdb.OutOfMemoryException,
}
"""DuckDB's errors that Arrow's stream of a result passes on as its own, by the prefix of
their text: a time limit, Ctrl-C or a memory limit that struck between two batches."""


def _carried(exc: Exception) -> duckdb.Error | None:
    """The DuckDB error behind an error of Arrow's stream of a result when it is one that
    :func:`_results` says as DuckDB's own (the time limit, Ctrl-C, out of memory), else None.

    >>> type(_carried(OSError("INTERRUPT Error: Interrupted!"))).__name__
    'InterruptException'
    """
    first = (str(exc).splitlines() or [""])[0]
    kind = _CARRIED.get(first.split(": ", 1)[0])
    return None if kind is None else kind(str(exc))


def _batch_error(exc: Exception, batch_rows: int, sql: str) -> QueryError:
    """The error of a result that DuckDB could not hand over as Arrow batches: a batch whose
    text is over Arrow's 2 GiB for one string column said so, anything else with DuckDB's
    whole message (as :func:`_query_error` gives it).

    >>> _batch_error(OSError("Invalid Input Error: Arrow Appender: The maximum total string "
    ...     "size for regular string buffers is 2147483647 but ..."), 1024, "SELECT 1").args[0][:60]
    'a batch of 1,024 rows of the result holds over 2 GiB of text'
    """
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    if "Recursion level in ArrowSchema" in first:
        return QueryError(
            "a column of the result is nested deeper than Arrow takes (62 levels of lists "
            "or structs); select fewer levels (unnest, or cast the column to VARCHAR)",
            sql=sql,
        )
    if "maximum total string size" in first:
        return QueryError(
            f"a batch of {counted(batch_rows, 'row')} of the result holds over 2 GiB of text in one column "
            "(Arrow's limit for a string column); select shorter text (substr), fewer rows, "
            "or fewer rows a batch (batch_rows)",
            sql=sql,
        )
    return QueryError(f"SQL error: {_message(exc)}", sql=sql)


def _query_error(exc: duckdb.Error, timed_out: bool, timeout: float | None, sql: str) -> QueryError:
    if (timed_out or isinstance(exc, duckdb.InterruptException)) and timeout:
        return QueryError(
            f"the query ran past its time limit of {timeout:g} s and was stopped", sql=sql, limit=timeout
        )
    if isinstance(exc, duckdb.InterruptException):
        return QueryError("the query was interrupted", sql=sql)
    if isinstance(exc, duckdb.OutOfMemoryException):
        return QueryError(
            f"the query needs more memory than its limit allows ({str(exc).splitlines()[0]}); "
            "select fewer rows or columns, or aggregate",
            sql=sql,
        )
    return QueryError(f"SQL error: {_message(exc)}", sql=sql)
