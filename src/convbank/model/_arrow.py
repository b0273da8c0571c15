"""Arrow types derived from msgspec Struct types: the ``<dataset>_raw`` table is typed like the
source (:func:`arrow_type`), and the unified tables like the model (:mod:`convbank.model.schema`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec
import msgspec.inspect

from convbank._lazy import lazy
from convbank.errors import FormatError

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


__all__ = ["arrow_column", "arrow_of", "arrow_type"]

_NONE = msgspec.inspect.NoneType


def arrow_type(typ: Any) -> list[pa.Field]:
    """The Arrow fields of a msgspec Struct type, derived from its annotations.

    Optional and omittable fields become nullable; a union of ``int`` with the literal
    ``""`` (ConvAI2's ``profile_match``) becomes a nullable int64 whose null stands for ``""``.
    """
    info = msgspec.inspect.type_info(typ)
    if not isinstance(info, msgspec.inspect.StructType):
        raise TypeError(f"{typ!r} is not a msgspec Struct")
    return _fields(info)


def _fields(info: msgspec.inspect.StructType) -> list[pa.Field]:
    return [
        pa.field(f.encode_name, _arrow(f.type), nullable=not f.required or _nullable(f.type))
        for f in info.fields
    ]


def _nullable(info: msgspec.inspect.Type) -> bool:
    if isinstance(info, msgspec.inspect.UnionType):  # None, or "" stored as null
        return any(
            isinstance(t, _NONE) or (isinstance(t, msgspec.inspect.LiteralType) and "" in t.values)
            for t in info.types
        )
    return isinstance(info, (msgspec.inspect.AnyType, _NONE))


def arrow_of(info: msgspec.inspect.Type) -> pa.DataType:
    """The Arrow type of one inspected msgspec type (``msgspec.inspect.type_info``): an
    ``int`` whose bounds (``msgspec.Meta(ge=..., le=...)``) fit 32 bits is an int32, any other
    an int64."""
    return _arrow(info)


def _fits_int32(info: msgspec.inspect.IntType) -> bool:
    low = info.ge if info.ge is not None else (info.gt + 1 if info.gt is not None else None)
    high = info.le if info.le is not None else (info.lt - 1 if info.lt is not None else None)
    return low is not None and high is not None and low >= -(2**31) and high < 2**31


def _arrow(info: msgspec.inspect.Type) -> pa.DataType:  # noqa: PLR0911 - one case per type
    mi = msgspec.inspect
    if isinstance(info, mi.UnionType):
        types = [t for t in info.types if not isinstance(t, _NONE)]
        if len(types) == 1:
            return _arrow(types[0])
        kinds = {type(t) for t in types}
        if kinds == {mi.IntType, mi.LiteralType}:
            return pa.int64()
        raise TypeError(f"no Arrow type for the union {info!r}")
    if isinstance(info, mi.BoolType):
        return pa.bool_()
    if isinstance(info, mi.IntType):
        return pa.int32() if _fits_int32(info) else pa.int64()
    if isinstance(info, mi.FloatType):
        return pa.float64()
    if isinstance(info, mi.StrType):
        return pa.string()
    if isinstance(info, mi.LiteralType):
        return pa.int64() if all(isinstance(v, int) for v in info.values) else pa.string()
    if isinstance(info, (mi.ListType, mi.VarTupleType)):
        return pa.list_(_arrow(info.item_type))
    if isinstance(info, mi.TupleType):
        item = {str(_arrow(t)) for t in info.item_types}
        if len(item) != 1:
            raise TypeError(f"no Arrow type for the mixed tuple {info!r}")
        return pa.list_(_arrow(info.item_types[0]))
    if isinstance(info, mi.DictType):
        return pa.map_(_arrow(info.key_type), _arrow(info.value_type))
    if isinstance(info, mi.StructType):
        return pa.struct(_fields(info))
    raise TypeError(f"no Arrow type for {info!r}")


def arrow_column(table: str, values: list[Any], field: pa.Field, ids: list[str]) -> pa.Array:
    """One column of a unified table; a value not of its type is a FormatError naming it and
    the ``record``: the conversation id (``ids``, the table's first column) of its row."""
    try:
        return pa.array(values, field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        bad = next((ids[i] for i, v in enumerate(values) if not _holds(v, field.type)), None)
        said = f"conversation {bad}: {table}.{field.name}: a value that is not {field.type} ({exc})"
        raise FormatError(said, record=bad) from exc


def _holds(value: Any, kind: pa.DataType) -> bool:
    try:
        pa.array([value], kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return False
    return True
