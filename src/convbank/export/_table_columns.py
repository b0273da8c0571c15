"""Which of a ``table``'s columns is which (:mod:`convbank.export.table`): the names ``--map``
takes, each one's column, and what is wrong with a table whose columns cannot be read so."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convbank._lazy import lazy
from convbank._wording import counted
from convbank.export._format import Rejected
from convbank.export.tables import CSV_COLUMNS
from convbank.model import schema

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")

__all__ = ["DEFAULTS", "MAPPED", "BadTableError", "Columns", "repeated", "repeated_field", "roles"]

MAPPED = ("conversation_id", "speaker", "text", "turn", "timestamp")
"""The names ``--map`` takes (the first three required)."""

DEFAULTS = {"conversation_id": schema.KEY, "speaker": "participant_id", "text": "text", "turn": "turn_index"}
"""The columns of convbank's CSV export, the mapping when none is given."""


class Columns:
    """Which of a table's columns is which: the mapped ones, and the rest (the turn's meta)."""

    def __init__(self, names: Sequence[str], mapping: Mapping[str, str], where: Path) -> None:
        twice = repeated(names)
        if twice is not None:
            raise BadTableError(where, "file", twice)
        unknown = [k for k in mapping if k not in MAPPED]
        if unknown:
            raise BadTableError(
                where, "file", f"expected --map names among {', '.join(MAPPED)}, not {unknown[0]!r}"
            )
        self.ours = not mapping and tuple(names) == CSV_COLUMNS
        given = roles(mapping)
        shared = next((c for c, k in Counter(given.values()).items() if k > 1), None)
        if shared is not None:  # one column read as two things: its values would fail as one
            named = [k for k, v in given.items() if v == shared]
            both = f"{', '.join(named[:-1])} and {named[-1]}"
            raise BadTableError(
                where, "file", f"expected a column for each --map name; {both} name one, {shared!r}"
            )
        self.map = {k: v for k, v in given.items() if v in names}
        for key in (*MAPPED[:3], *mapping):
            column = given.get(key)
            if column not in names:
                raise BadTableError(
                    where,
                    "file",
                    f"expected a column {column!r} ({key}; name it with --map "
                    f"{key}=COLUMN), the file's columns: {', '.join(names)}{_hint(names)}",
                )
        own = {*schema.PARTITION_COLUMNS, "role", "kind", "meta"} if self.ours else set()
        self.rest = [n for n in names if n not in self.map.values() and n not in own]
        if "timestamp" in self.map and "timestamp" in self.rest:  # both would be meta "timestamp"
            raise BadTableError(
                where,
                "file",
                f"expected no column 'timestamp' beside the timestamp column {self.map['timestamp']!r} "
                "(--map timestamp=...), whose values the turns keep as their meta 'timestamp'; rename one",
            )


def _hint(names: Sequence[str]) -> str:
    """What the header of a file that begins with a spreadsheet's separator line is.

    >>> _hint(["sep=", ""]), _hint(["c", "s", "t"])
    ("; its first line is a spreadsheet's separator line ('sep=' and a separator): delete it", '')
    """
    if not names or not str(names[0]).startswith("sep="):
        return ""
    return "; its first line is a spreadsheet's separator line ('sep=' and a separator): delete it"


def roles(mapping: Mapping[str, str]) -> dict[str, str]:
    """Each mapped name's column: ``mapping``'s, else convbank's own where no name of
    ``mapping`` takes that column (``--map text=turn_index`` reads no turn from it).

    >>> roles({"text": "turn_index"})
    {'conversation_id': 'conversation_id', 'speaker': 'participant_id', 'text': 'turn_index'}
    """
    taken = set(mapping.values())
    given = {k: v for k, v in DEFAULTS.items() if k in MAPPED[:3] or v not in taken}
    return {**given, **mapping}


def repeated(names: Sequence[Any]) -> str | None:
    """What is wrong with a table whose columns repeat a name (a row holds one value by
    name, so all but one would be lost), or None.

    >>> repeated(["c", "x", "x"])
    "expected each column named once; 'x' names 2 columns (rename all but one)"
    """
    name, count = next(((n, k) for n, k in Counter(names).items() if k > 1), (None, 1))
    named = f"{str(name)!r} names {counted(count, 'column')}"
    return None if count == 1 else f"expected each column named once; {named} (rename all but one)"


def repeated_field(schema: pa.Schema) -> str | None:
    """What is wrong with a table whose struct column (or a struct inside a column's lists or
    maps) repeats a field's name, as :func:`repeated` says of columns: a value holds one per
    name, so all but the last would be lost without a word; None if none does."""
    stack = [(f.name, f.type) for f in schema]
    while stack:
        column, kind = stack.pop()
        if pa.types.is_struct(kind):
            fields = [kind.field(i) for i in range(kind.num_fields)]
            name, count = next(
                ((n, k) for n, k in Counter(f.name for f in fields).items() if k > 1), (None, 1)
            )
            if count > 1:
                return f"expected each field of column {column!r} named once; {name!r} names {count} fields"
            stack.extend((column, f.type) for f in fields)
        elif pa.types.is_map(kind):
            stack.extend([(column, kind.key_type), (column, kind.item_type)])
        elif hasattr(kind, "value_type"):  # a list of any kind, a dictionary
            stack.append((column, kind.value_type))
    return None


class BadTableError(Exception):
    def __init__(self, path: Path, where: str, expected: str) -> None:
        self.rejected = Rejected(path, where, expected)
