"""A query's result as Arrow holds it exactly: the columns whose DuckDB type Arrow cannot hold
(or holds as bytes of DuckDB's own) are DuckDB's text of their values.

DuckDB hands a result over as Arrow, and for some types that is not the value: a ``UHUGEINT``
over 2**127 becomes a negative ``decimal128`` (``2**128 - 1`` is ``-1``), a ``BIT`` the bytes
DuckDB keeps it in (``'101'`` is ``b'\\x05\\xfd'``), a ``TIME WITH TIME ZONE`` a time without
its offset, a ``TIME_NS`` a time Python cuts to microseconds, a ``BIGNUM`` (``VARINT``) or a
``VARIANT`` opaque bytes, an ``INTERVAL`` a ``MonthDayNano`` that no writer prints as DuckDB
does (``1 month 03:00:00``). By construction, not by a list of the bad ones: a type is passed to
Arrow as it is only when it is one of those known to arrive exact (:data:`EXACT`); any other
(those, and whatever type a later DuckDB adds) is cast to ``VARCHAR`` by DuckDB, wherever it
is (a column, a struct's field, a list's or an array's item, a map's key or value, a union's
member)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from convbank._wording import shown
from convbank.errors import QueryError

if TYPE_CHECKING:
    import duckdb
    from duckdb.sqltypes import DuckDBPyType

__all__ = ["EXACT", "exact_relation", "exact_type", "name_with_nul", "names_kept"]

EXACT = frozenset(
    {
        "boolean",
        *("tinyint", "smallint", "integer", "bigint", "hugeint"),
        *("utinyint", "usmallint", "uinteger", "ubigint"),
        *("float", "double", "decimal"),
        *("varchar", "blob", "uuid", "enum"),
        *("date", "time", "timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns"),
        "timestamp with time zone",
    }
)
"""DuckDB's type ids whose Arrow form holds every value as DuckDB has it (``JSON`` is a
``varchar``)."""


def _name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def exact_type(kind: DuckDBPyType) -> str | None:
    """The type to cast a value of ``kind`` to so that Arrow holds it exactly, or None when
    it already does.

    >>> import duckdb
    >>> types = duckdb.sql("SELECT 1::UHUGEINT, [{'a': '1'::BIT, 'b': 2}], 3, 'x'::JSON").types
    >>> [exact_type(t) for t in types]
    ['VARCHAR', 'STRUCT("a" VARCHAR, "b" INTEGER)[]', None, None]
    """
    kind_id = kind.id
    if kind_id in EXACT:
        return None
    if kind_id in ("list", "array"):
        item: Any = kind.children[0][1]
        inner = exact_type(item)
        size = "" if kind_id == "list" else kind.children[1][1]
        return None if inner is None else f"{inner}[{size}]"
    if kind_id in ("struct", "union", "map"):
        return _exact_members(kind_id, kind.children)
    return "VARCHAR"


def _exact_members(kind_id: str, children: list[tuple[str, Any]]) -> str | None:
    """A struct's, a union's or a map's type with its members made exact, or None."""
    members = [(n, t) for n, t in children if not (kind_id == "union" and n == "")]
    changed = [exact_type(t) for _, t in members]
    if all(c is None for c in changed):
        return None
    parts = [c if c is not None else str(t) for c, (_, t) in zip(changed, members, strict=True)]
    if kind_id == "map":
        return f"MAP({parts[0]}, {parts[1]})"
    fields = ", ".join(f"{_name(n)} {p}" for (n, _), p in zip(members, parts, strict=True))
    return f"{kind_id.upper()}({fields})"


def exact_relation(relation: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """``relation``, its columns that Arrow would not hold exactly cast (:func:`exact_type`),
    each by its position, so that a repeated name stays as DuckDB names it; the relation itself
    when none is."""
    casts = [exact_type(t) for t in relation.types]
    if all(c is None for c in casts):
        return relation
    columns = [f"#{i}" if cast is None else f"CAST(#{i} AS {cast})" for i, cast in enumerate(casts, start=1)]
    names = relation.columns
    return relation.project(", ".join(f"{c} AS {_name(n)}" for c, n in zip(columns, names, strict=True)))


def name_with_nul(relation: duckdb.DuckDBPyRelation) -> str | None:
    """The first name of ``relation``'s result, a column's or a member's at any depth (a
    struct's field, a union's member), that holds a NUL character, or None: Arrow, which
    carries the result, cuts a name at its NUL (``SELECT 1 AS "a\\0b"`` arrived as column
    ``a``, two such columns under one name).

    >>> import duckdb
    >>> name_with_nul(duckdb.sql(f'SELECT 1 AS "a", [{{"b{chr(0)}c": 2}}] AS d'))
    'b\\x00c'
    >>> name_with_nul(duckdb.sql("SELECT 1")) is None
    True
    """
    pending: list[tuple[str, Any]] = list(zip(relation.columns, relation.types, strict=True))
    while pending:
        name, kind = pending.pop(0)
        if "\0" in name:
            return name
        kind_id = kind.id
        if kind_id in ("list", "array"):
            pending.append(("", kind.children[0][1]))
        elif kind_id in ("struct", "union", "map"):
            pending.extend((n if kind_id != "map" else "", t) for n, t in kind.children)
    return None


def names_kept(relation: duckdb.DuckDBPyRelation, sql: str) -> None:
    """Raise :class:`QueryError` (one line) when a name of ``relation``'s result holds a NUL
    (:func:`name_with_nul`): the result is refused, never answered under a name cut short."""
    name = name_with_nul(relation)
    if name is not None:
        cut = name.partition("\0")[0]
        raise QueryError(
            f"the result's name {shown(name)} holds a NUL character, at which Arrow, the "
            f"result's carrier, would cut it to {shown(cut)}; name it without one",
            sql=sql,
        )
