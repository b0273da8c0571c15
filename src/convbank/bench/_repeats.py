"""What a predictions file cannot say as it was meant: a line that names a key twice, found
before it is scored (a JSON decoder keeps one of the two values, unsaid which), a
prediction to write holding a number JSON has no value for, and an example id that is not
text (:func:`id_text`)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank.errors import BenchError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "by_id",
    "id_text",
    "ids_text",
    "refuse_not_finite",
    "refuse_repeated_field",
    "refuse_repeated_key",
]


def refuse_repeated_key(path: Path, number: int, line: bytes, value: Any) -> None:
    """Refuse (:class:`BenchError`) a line whose object names a key twice (``{"example_id":
    "a", "prediction": 1, "prediction": 5}``): a decoder keeps one of them, unsaid which, as a
    Parquet file's repeated column would. Each key takes a ``:`` of the line, so a line of
    no more ``:`` than ``value`` has keys repeats none; only another is read again, by a
    reader that sees each pair."""
    if line.count(b":") <= _key_count(value):
        return

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, item in items:
            if key in seen:
                raise BenchError(
                    f"{path}: line {number:,} names the key {key!r} twice; "
                    'each line is {"example_id": ..., "prediction": ...}, each key once',
                    path=path,
                    line=number,
                )
            seen[key] = item
        return seen

    zero = lambda _: 0  # noqa: E731 - numbers are not read again (Python reads at most 4,300 digits)
    try:
        json.loads(line, object_pairs_hook=pairs, parse_int=zero, parse_float=zero)
    except ValueError:  # what the standard library reads otherwise than msgspec: no verdict here
        return


def _key_count(value: Any) -> int:
    """The keys of every object in a decoded JSON value (a line nests at most 64 deep)."""
    if isinstance(value, dict):
        return len(value) + sum(_key_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(_key_count(v) for v in value if isinstance(v, (dict, list)))
    return 0


def refuse_not_finite(path: Path, predictions: Mapping[str, Any]) -> None:
    """Refuse (:class:`BenchError`, before anything is written) a prediction holding a float
    that is not finite (``nan``, ``inf``, in a list or an object too): a predictions file
    would hold ``null`` in its place (JSON has no such number; a Parquet file holding one is
    written as JSON text too), read back as another prediction than the one written."""
    for example_id, prediction in predictions.items():
        found = _not_finite(prediction)
        if found is not None:
            raise BenchError(
                f"{path}: the prediction of {example_id!r} holds {found}, which a predictions "
                "file cannot hold (JSON has no such number); give a finite number or null",
                path=path,
            )


def _not_finite(value: Any, depth: int = 0) -> float | None:
    """The first float in ``value`` that is not finite, or None (at most 64 deep)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else value
    if depth < 64 and isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        return next((f for v in items if (f := _not_finite(v, depth + 1)) is not None), None)
    return None


def refuse_repeated_field(path: Path, schema: pa.Schema) -> None:
    """Refuse (:class:`BenchError`) a Parquet predictions file whose columns hold a struct
    naming a field twice (spans of two ``start`` fields), at any depth: each value read
    keeps one of the two, unsaid which, as a line naming a key twice would."""
    for field in schema:
        name = _repeated_field(field.type)
        if name is not None:
            raise BenchError(
                f"{path}: the column {field.name!r} holds a struct naming the field {name!r} twice; "
                "each of a prediction's keys once",
                path=path,
            )


def _repeated_field(kind: pa.DataType) -> str | None:
    """The first field name a struct within ``kind`` repeats (lists, maps and dictionaries
    looked into), or None."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        names = [kind.field(i).name for i in range(kind.num_fields)]
        twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
        inner = (_repeated_field(kind.field(i).type) for i in range(kind.num_fields))
        return twice if twice is not None else next((n for n in inner if n is not None), None)
    if pa.types.is_map(kind):
        return _repeated_field(kind.key_type) or _repeated_field(kind.item_type)
    if pa.types.is_dictionary(kind):
        return _repeated_field(kind.value_type)
    value = getattr(kind, "value_type", None)  # a list of any kind
    return _repeated_field(value) if isinstance(value, pa.DataType) else None


def id_text(value: object) -> str | None:
    """An example id as text: text as it is, a whole number (never a bool) as its digits
    (``5`` is ``"5"``), anything else None, for the caller to refuse: a null id is no id,
    never the text ``'None'`` (which is another example's id, or no example's), nor is a
    float, a list or an object.

    >>> [id_text(v) for v in ("543/0", 7, None, True, 1.5, ["a"])]
    ['543/0', '7', None, None, None, None]
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < _DIGITS:
        return str(value)
    return None


def shown_id(value: object) -> str:
    """An id that is not text, for a message: ``null`` for None (as the file says it), else
    its kind (``a float``), never its whole value."""
    from convbank._wording import article, shown

    return "null" if value is None else f"{article(type(value).__name__)} ({shown(value, 40)})"


def ids_text(what: str, ids: Iterable[object], *, task: str | None = None) -> list[str]:
    """``ids`` as text (:func:`id_text`); the first that is not text is refused
    (:class:`BenchError`, one line), said as ``what`` (``the predictions``, a task's examples),
    and so are two that are one text (``5`` and ``"5"``)."""
    out = []
    for value in ids:
        text = id_text(value)
        if text is None:
            raise BenchError(
                f"{what}: an example id is {shown_id(value)}, not text; each example id is text "
                "(or a whole number)",
                task=task,
            )
        out.append(text)
    seen: set[str] = set()
    for text in out:
        if text in seen:
            raise BenchError(f"{what}: two example ids are {text!r} as text; each example once", task=task)
        seen.add(text)
    return out


_DIGITS = 10**4000
"""A whole number id is at most 4,000 digits (Python writes at most 4,300 as text)."""


def by_id(path: Path, rows: list[tuple[int, Any]]) -> dict[str, Any]:
    """``{example_id: prediction}`` of the numbered ``rows``; a row without either field, an
    id that is not text (:func:`id_text`: null is no id, never
    ``'None'``) or an id given twice is a :class:`BenchError` naming the first few."""
    out: dict[str, Any] = {}
    malformed, not_text, duplicates = [], [], []
    for number, row in rows:
        if not isinstance(row, Mapping) or "example_id" not in row or "prediction" not in row:
            malformed.append(number)
            continue
        key = id_text(row["example_id"])
        if key is None:  # null is no id, never the text 'None'
            not_text.append((number, row["example_id"]))
            continue
        if key in out:
            duplicates.append(key)
        out[key] = row["prediction"]
    problems = []
    if malformed:
        where = ", ".join(map(str, malformed[:3])) + (", ..." if len(malformed) > 3 else "")
        problems.append(f"{len(malformed):,} row(s) without example_id and prediction (row {where})")
    if not_text:
        where = ", ".join(f"{n} ({shown_id(v)})" for n, v in not_text[:3]) + (
            ", ..." if len(not_text) > 3 else ""
        )
        problems.append(f"{len(not_text):,} row(s) whose example_id is not text (row {where})")
        malformed += [n for n, _ in not_text[:1]]
    if duplicates:
        shown = ", ".join(repr(d) for d in duplicates[:3]) + (", ..." if len(duplicates) > 3 else "")
        problems.append(f"{len(duplicates):,} duplicate example id(s) ({shown})")
    if problems:
        raise BenchError(
            f"{path}: {'; '.join(problems)}", path=path, line=malformed[0] if malformed else None
        )
    return out
