"""What a SQL statement is, as the bank's read-only check names it: its kind, and the
statement an ``EXPLAIN`` explains."""

from __future__ import annotations

import duckdb

__all__ = ["explained", "kind_of"]


def kind_of(statement: duckdb.Statement) -> str:
    """The kind of a statement DuckDB parsed (``SELECT``, ``COPY``...); one of a kind this
    DuckDB's Python enum does not name (``UPDATE EXTENSIONS``: ``29 is not a valid
    StatementType``) is named by the statement's first word (comments skipped), never a
    ``ValueError``.

    >>> kind_of(duckdb.connect().extract_statements("/* why */ UPDATE EXTENSIONS")[0])
    'UPDATE'
    """
    try:
        return str(statement.type.name)
    except ValueError:
        words = _words(statement.query)[1]
        return words[0].decode("utf-8").upper() if words else "an unnamed statement"


def _words(sql: str) -> tuple[list[tuple[int, int]], list[bytes]]:
    """The byte bounds of ``sql``'s tokens, comments skipped, and each token's text in capitals
    (DuckDB's tokens start at byte offsets)."""
    data = sql.encode("utf-8")
    starts = [at for at, kind in duckdb.tokenize(sql) if kind != duckdb.token_type.comment]
    bounds = [(at, end) for at, end in zip(starts, [*starts[1:], len(data)], strict=True)]
    return bounds, [data[at:end].split(b"/*")[0].split(b"--")[0].strip().upper() for at, end in bounds]


def explained(sql: str) -> str:
    """The statement an ``EXPLAIN`` statement ``sql`` explains (and, with ``ANALYZE``, runs):
    its text after ``EXPLAIN``, ``ANALYZE`` and a list of options, comments skipped.

    Example: ``explained("EXPLAIN (ANALYZE, FORMAT json) SELECT 1") == "SELECT 1"``."""
    bounds, words = _words(sql)
    i = 1  # past EXPLAIN
    if i < len(words) and words[i] in (b"ANALYZE", b"ANALYSE"):
        i += 1
    if i < len(words) and words[i] == b"(":
        depth = 0
        while i < len(words):
            depth += words[i].count(b"(") - words[i].count(b")")
            i += 1
            if depth <= 0:
                break
    return sql.encode("utf-8")[bounds[i][0] :].decode("utf-8") if i < len(bounds) else ""
