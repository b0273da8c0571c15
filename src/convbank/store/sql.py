"""DuckDB over the bank: one view per table, read-only statements only, no file access
outside the bank."""

from __future__ import annotations

import duckdb

from convbank.errors import NotBuiltError, QueryError
from convbank.model.schema import PARTITION_COLUMNS, UNIFIED_TABLES
from convbank.store.bank import PART, Bank

__all__ = ["READ_ONLY_STATEMENTS", "connect", "is_read_only"]

READ_ONLY_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(bank: Bank, *, threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with a view per bank table (``meta`` columns as JSON),
    then locked down: no file access outside the bank, configuration frozen."""
    tables = bank.tables()
    if not tables:
        raise NotBuiltError(f"the bank at {bank.root} is empty; run `convbank build` first")
    con = duckdb.connect(":memory:")
    if threads:
        con.execute(f"SET threads={int(threads)}")
    hive_types = "{" + ", ".join(f"'{c}': VARCHAR" for c in PARTITION_COLUMNS) + "}"
    keys = ", ".join(PARTITION_COLUMNS)
    for table in tables:
        pattern = _literal(str(bank.root / table / "*" / "*" / "*" / PART))
        replace = " REPLACE (meta::JSON AS meta)" if table in UNIFIED_TABLES else ""
        con.execute(
            f"CREATE VIEW {_quote(table)} AS SELECT {keys}, * EXCLUDE ({keys}){replace} "
            f"FROM read_parquet({pattern}, hive_partitioning=true, hive_types={hive_types}, "
            "union_by_name=true)"
        )
    root = str(bank.root.resolve()).rstrip("/") + "/"
    con.execute(f"SET allowed_directories=[{_literal(root)}]")
    con.execute("SET enable_external_access=false")
    con.execute("SET lock_configuration=true")
    return con


def is_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`QueryError` unless every statement of ``sql`` only reads."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL syntax error: {str(exc).splitlines()[0]}") from exc
    if not statements:
        raise QueryError("empty SQL statement")
    for st in statements:
        kind = st.type.name
        if kind not in READ_ONLY_STATEMENTS:
            raise QueryError(
                f"only read-only statements are allowed (SELECT, WITH ... SELECT, DESCRIBE, "
                f"SHOW, EXPLAIN); got {kind}"
            )
