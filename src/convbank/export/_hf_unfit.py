"""How a row of a dataset's Hugging Face export is read back into its raw record: the inverse
of the export's shaping (:func:`convbank.export.hf._fit`), guided by the raw record's type."""

from __future__ import annotations

from typing import Any

__all__ = ["unfit"]


def _member(info: Any, key: str | None = None) -> Any:
    """The type inside ``info`` (its non-null member; a list's item or a field's type)."""
    import msgspec.inspect as mi

    if isinstance(info, mi.UnionType):
        info = next((t for t in info.types if not isinstance(t, mi.NoneType)), mi.AnyType())
    if key is None:
        return info
    if isinstance(info, mi.StructType):
        return next((f.type for f in info.fields if f.encode_name == key), mi.AnyType())
    return info.value_type if isinstance(info, mi.DictType) else mi.AnyType()


def _restored(info: Any, key: str, value: Any) -> tuple[bool, Any]:
    """Whether a key of a row stays in the raw record, and its value there: not a key the raw
    type lacks (one the presentation added), nor a null the raw type cannot hold (a key the
    export filled in where the record had none: a required text's null was its empty text);
    a number where the raw type holds text, that text."""
    import msgspec.inspect as mi

    fields = {f.encode_name: f for f in info.fields} if isinstance(info, mi.StructType) else {}
    if isinstance(info, mi.StructType) and key not in fields:
        return False, None
    held = _member(info, key) if isinstance(info, (mi.StructType, mi.DictType)) else info
    if value is not None:
        return True, str(value) if isinstance(held, mi.StrType) and isinstance(value, int) else value
    types = held.types if isinstance(held, mi.UnionType) else (held,)
    if any(isinstance(t, (mi.NoneType, mi.AnyType)) for t in types):
        return True, None
    required = key in fields and fields[key].required
    texts = any(
        isinstance(t, mi.StrType) or (isinstance(t, mi.LiteralType) and "" in t.values) for t in types
    )
    return (True, "") if required and texts else (False, None)


def _record(info: Any, out: dict[str, Any]) -> dict[str, Any]:
    kept = {k: _restored(info, k, v) for k, v in out.items()}
    return {k: v for k, (keep, v) in kept.items() if keep}


def unfit(feature: Any, value: Any, info: Any) -> Any:
    """The inverse of :func:`convbank.export.hf._fit`, guided by the raw record's type: class ids become their
    names, and a dict of lists where the raw type holds a list of records becomes that list."""
    import msgspec.inspect as mi
    from datasets import ClassLabel, List

    info = _member(info)
    if value is None:
        return None
    if isinstance(feature, ClassLabel):
        return feature.int2str(value)
    listed = isinstance(info, (mi.ListType, mi.VarTupleType))
    if isinstance(feature, dict) and isinstance(value, dict) and listed:
        item, keys = _member(info.item_type), list(feature)
        count = len(value[keys[0]]) if keys else 0
        return [
            _record(item, {k: unfit(feature[k].feature, value[k][i], _member(item, k)) for k in keys})
            for i in range(count)
        ]
    if isinstance(feature, dict):
        return _record(info, {k: unfit(f, value.get(k), _member(info, k)) for k, f in feature.items()})
    if isinstance(feature, List):
        item = info.item_type if listed else mi.AnyType()
        return [unfit(feature.feature, v, item) for v in value]
    return value
