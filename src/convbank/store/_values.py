"""A query result's values as Python gives them, for every value DuckDB can return: a date, a
timestamp or a time Python cannot hold (DuckDB's ``infinity``, a year past 9999 or before 1,
the time ``24:00:00``) is its text as DuckDB writes it, wherever it is (a column, a struct's
field, a list's item), so that ``query`` prints it in every format rather than fail on it
(before: an ``OverflowError`` traceback, or the process aborted, "terminate called without an
active exception"), or write ``24:00:00`` as ``00:00:00``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from convbank._lazy import lazy
from convbank._wording import article

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")

__all__ = ["dataset_rows", "python_rows", "python_values"]

_DATE_INFINITY = (1 << 31) - 1
_TIMESTAMP_INFINITY = (1 << 63) - 1
_PER_DAY = {"s": 86_400, "ms": 86_400_000, "us": 86_400_000_000, "ns": 86_400_000_000_000}
_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def python_values(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """``column.to_pylist()``, but a date or timestamp Python cannot hold is DuckDB's text.

    >>> import pyarrow as pa
    >>> python_values(pa.array([0, 2**31 - 1, 106751991, -2914598], pa.date32()))
    [datetime.date(1970, 1, 1), 'infinity', '294247-01-10', '6011-02-07 (BC)']
    >>> python_values(pa.array([{"t": 2**63 - 1}], pa.struct([("t", pa.timestamp("us"))])))
    [{'t': 'infinity'}]
    >>> python_values(pa.array([[86_400_000_000, 1_000_000, None]], pa.list_(pa.time64("us"))))
    [['24:00:00', datetime.time(0, 0, 1), None]]
    """
    if _holds_time(column.type):  # pyarrow makes DuckDB's 24:00:00 a 00:00:00 without a word
        return [_value(column[i]) for i in range(len(column))]
    try:
        values: list[Any] = column.to_pylist()
    except (OverflowError, ValueError):  # only then, value by value
        return [_value(column[i]) for i in range(len(column))]
    return values


def python_rows(batch: pa.RecordBatch | pa.Table) -> Iterator[dict[str, Any]]:
    """The rows of ``batch`` as dicts of :func:`python_values` (a table read by an importer:
    a value Python cannot hold is DuckDB's text, never an ``OverflowError``).

    >>> import pyarrow as pa
    >>> list(python_rows(pa.table({"d": pa.array([2**31 - 1], pa.int32()).cast(pa.date32())})))
    [{'d': 'infinity'}]
    """
    names = batch.schema.names
    for values in zip(*(python_values(c) for c in batch.columns), strict=True):
        yield dict(zip(names, values, strict=True))


def dataset_rows(part: Any) -> Iterator[dict[str, Any]]:
    """A Hugging Face ``Dataset``'s rows read through Arrow, as :func:`python_rows` (before:
    ``datasets``' own rows, an ``OverflowError`` traceback for the date ``infinity``)."""
    for batch in part.with_format("arrow").iter(batch_size=1000):
        yield from python_rows(batch)


def _holds_time(kind: pa.DataType) -> bool:
    """Whether a time of day is among the values of this type (a column, a field, an item)."""
    if pa.types.is_time(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_holds_time(kind.field(i).type) for i in range(kind.num_fields))
    if pa.types.is_map(kind):
        return _holds_time(kind.key_type) or _holds_time(kind.item_type)
    if pa.types.is_dictionary(kind):
        return _holds_time(kind.value_type)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return _holds_time(kind.value_type)
    return False


def _value(scalar: pa.Scalar) -> Any:
    kind = scalar.type
    if not _holds_time(kind):  # a time inside: the parts one by one, below
        try:
            return scalar.as_py()
        except (OverflowError, ValueError):
            pass
    if not scalar.is_valid:
        return None
    if pa.types.is_struct(kind):
        return {kind.field(i).name: _value(scalar[i]) for i in range(kind.num_fields)}
    if pa.types.is_map(kind):
        return [(_value(item["key"]), _value(item["value"])) for item in scalar.values]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [_value(item) for item in scalar.values]
    return _time(scalar) if pa.types.is_time(kind) else _temporal(scalar)


def _time(scalar: pa.Scalar) -> Any:
    """A time of day: DuckDB's end of a day, which ``datetime.time`` cannot hold (pyarrow
    makes it ``00:00:00``), as DuckDB writes it; a ``time32`` of a Parquet file too (its
    ticks read as they are: Arrow casts no ``time32`` to ``int64``)."""
    ticks = scalar.value
    return "24:00:00" if ticks >= _PER_DAY[scalar.type.unit] else scalar.as_py()


def _temporal(scalar: pa.Scalar) -> Any:
    """A date or a timestamp Python cannot hold, as DuckDB writes it."""
    kind = scalar.type
    if pa.types.is_dictionary(kind):  # a Parquet file's, not DuckDB's
        return _value(scalar.value)
    if pa.types.is_date32(kind):
        days = scalar.cast(pa.int32()).as_py()
        return _infinite(days, _DATE_INFINITY) or _date(days)
    if pa.types.is_date64(kind):
        return _date(scalar.cast(pa.int64()).as_py() // 86_400_000)
    if pa.types.is_timestamp(kind):
        return _timestamp(scalar.cast(pa.int64()).as_py(), kind.unit, kind.tz is not None)
    if pa.types.is_duration(kind):  # longer than timedelta holds (a Parquet file's, not DuckDB's)
        return f"{scalar.cast(pa.int64()).as_py()} {kind.unit}"
    raise TypeError(f"{article(str(kind))} value Python cannot hold")  # pragma: no cover - none known


def _infinite(value: int, infinity: int) -> str:
    return "infinity" if value == infinity else "-infinity" if value == -infinity else ""


def _date(days: int) -> str:
    """A day counted from 1970-01-01 as DuckDB writes it: ``294247-01-10``, ``0044-03-15 (BC)``
    (the proleptic Gregorian calendar; year 0 is 1 BC)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1_460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day, month = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    return f"{year:04d}-{month:02d}-{day:02d}" if year > 0 else f"{1 - year:04d}-{month:02d}-{day:02d} (BC)"


def _timestamp(value: int, unit: str, zoned: bool) -> str:
    """A timestamp as DuckDB writes it: ``294247-01-10 04:00:54.775807``, ``+00`` when zoned."""
    infinite = _infinite(value, _TIMESTAMP_INFINITY)
    if infinite:
        return infinite
    days, rest = divmod(value, _PER_DAY[unit])
    seconds, fraction = divmod(rest, _PER_DAY[unit] // 86_400)
    digits = f"{fraction:0{_DIGITS[unit]}d}".rstrip("0") if fraction else ""
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" + (
        f".{digits}" if digits else ""
    )
    return f"{_date(days)} {clock}" + ("+00" if zoned else "")  # 0044-03-15 (BC) 12:00:00
