"""The structure of a ``meta`` column: the one type that holds every JSON value in it, as
DuckDB's ``json_group_structure`` gives it, found in Python while the build writes the
column, so that a reader types ``meta`` (``Corpus.to_arrow``, ``to_polars``, the schema of
``Corpus.scan``) without reading the column again nor importing DuckDB.

A :class:`Structure` is what was seen, kept so that two of them merge into the structure of
both columns (a file's, then a dataset's files'): for each place in the values, the kinds of
JSON value found there (``bool``, ``uint`` a non-negative integer below 2**63, ``ubig`` one
from 2**63 to 2**64 - 1, ``int`` a negative one,
``real``, ``str``, ``arr`` with the structure of its items, ``obj`` with that of each key in
the order the keys were first seen). ``null`` is no kind: a place where only nulls were seen
has none. :meth:`Structure.text` gives DuckDB's structure of the same values (the rules,
checked against DuckDB's own on every real dataset and on generated values in the tests):

- no kind: ``"NULL"``; one kind: ``"BOOLEAN"``, ``"VARCHAR"``, ``"UBIGINT"`` (``uint`` and
  ``ubig`` are one kind to DuckDB),
  ``"BIGINT"`` (``int``), ``"DOUBLE"`` (``real``), ``[item]``, ``{key: ...}`` (an object that
  never held a key: ``"JSON"``);
- numbers alone: ``"DOUBLE"`` with a ``real`` among them, else ``"HUGEINT"`` for integers of
  both signs;
- any other mix: ``"JSON"`` (the text as it is);
- an object holding an empty key, two keys that differ only in the case of ASCII
  letters, or a key holding NUL, also ``"JSON"``: DuckDB cannot name such a struct's fields
  (``json_transform`` refuses the first two: "Empty key", "Duplicate keys in object"; it
  cuts a name at its NUL, so ``{"a\\u0000b": 1}`` came back as ``{"a": 1}`` and
  ``{"a\\u0000": 1, "a": 2}`` as ``{"a": 2}``), so the object stays text where DuckDB's own
  structure would stop every typed read or type it otherwise.

Integers beyond 64 bits are ``real``, as DuckDB's parser reads them. Values that are exactly
``{}`` are left out, as convbank's readers leave them out (an empty ``meta``).

>>> s = Structure.of(['{"a": 1}', '{"a": 2.5, "b": ["x"]}', '{}'])
>>> s.text()
'{"a":"DOUBLE","b":["VARCHAR"]}'
>>> Structure.loads(s.dumps()).merged(Structure.of(['{"c": null}'])).text()
'{"a":"DOUBLE","b":["VARCHAR"],"c":"NULL"}'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from convbank._wording import article

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Structure", "nameable"]

_SCALARS = ("bool", "uint", "ubig", "int", "real", "str")
_SIGNED = 1 << 63
_LIMIT = 1 << 64
_NUMBERS = frozenset(("uint", "int", "real"))
TYPED_DEPTH = 32
"""The deepest place (the meta object itself 1) typed as a list or a struct; deeper lists
and objects are their JSON text (an import refuses such meta; Arrow's readers stop at 64
levels with their tables' own)."""
_LEAF = {"bool": "BOOLEAN", "uint": "BIGINT", "int": "BIGINT", "real": "DOUBLE", "str": "VARCHAR"}


def _kind(value: Any) -> str:
    """The kind of a decoded JSON scalar (not None, a list or a dict)."""
    if value is True or value is False:
        return "bool"
    if isinstance(value, int):
        if value >= 0:
            return "uint" if value < _SIGNED else "ubig" if value < _LIMIT else "real"
        return "int" if value >= -(1 << 63) else "real"
    return "real" if isinstance(value, float) else "str"


class Structure:
    """The kinds seen at one place of JSON values (see the module doc); made with
    :meth:`of`, merged with :meth:`merged`, kept as text with :meth:`dumps`."""

    __slots__ = ("items", "keys", "scalars")

    def __init__(self) -> None:
        self.scalars: set[str] = set()
        self.items: Structure | None = None
        """The structure of the items of the arrays seen here (None: no array)."""
        self.keys: dict[str, Structure] | None = None
        """The structure of each key of the objects seen here (None: no object)."""

    @classmethod
    def of(cls, values: Iterable[str | bytes]) -> Structure:
        """The structure of these JSON texts (``{}`` and None left out). A
        ``msgspec.DecodeError`` for a text that is not JSON."""
        found = cls()
        decode = msgspec.json.decode
        for value in values:
            if value is not None and value not in ("{}", b"{}"):
                found.add(decode(value))
        return found

    def add(self, value: Any) -> None:
        """Take in one decoded JSON value (scalars under an object or an array are taken in
        place: a call a leaf would make CaSiNo's participants three times slower)."""
        if isinstance(value, dict):
            keys = self.keys
            if keys is None:
                keys = self.keys = {}
            for key, item in value.items():
                child = keys.get(key)
                if child is None:
                    child = keys[key] = Structure()
                kind = type(item)
                if kind is str:
                    child.scalars.add("str")
                elif kind is dict or kind is list:
                    child.add(item)
                elif item is not None:
                    child.scalars.add(_kind(item))
        elif isinstance(value, list):
            items = self.items
            if items is None:
                items = self.items = Structure()
            seen = items.scalars
            for item in value:
                kind = type(item)
                if kind is str:
                    seen.add("str")
                elif kind is dict or kind is list:
                    items.add(item)
                elif item is not None:
                    seen.add(_kind(item))
        elif value is not None:
            self.scalars.add(_kind(value))

    def merged(self, other: Structure) -> Structure:
        """A new structure of the values of both (this one's keys first)."""
        out = Structure()
        out.scalars = self.scalars | other.scalars
        if self.items is not None or other.items is not None:
            out.items = (self.items or Structure()).merged(other.items or Structure())
        if self.keys is not None or other.keys is not None:
            mine, theirs = self.keys or {}, other.keys or {}
            out.keys = {
                key: (mine.get(key) or Structure()).merged(theirs.get(key) or Structure())
                for key in [*mine, *(k for k in theirs if k not in mine)]
            }
        return out

    def empty(self) -> bool:
        """Whether nothing but nulls (or nothing) was seen."""
        return not self.scalars and self.items is None and self.keys is None

    def _kinds(self) -> list[str]:
        """The kinds seen here as DuckDB tells them (``ubig`` is a ``uint``)."""
        arrays = ["arr"] if self.items is not None else []
        scalars = {"uint" if kind == "ubig" else kind for kind in self.scalars}
        return [*sorted(scalars), *arrays, *(["obj"] if self.keys is not None else [])]

    def duck(self, *, typed: bool = False, depth: int = 1) -> Any:
        """DuckDB's structure of these values, as JSON-ready Python (``"UBIGINT"``, a list, a
        dict); ``typed``: the structure the readers type them with, where non-negative
        integers are ``"BIGINT"`` unless one of them does not fit it (from 2**63), so that
        ``json_transform`` keeps every value (a ``BIGINT`` place made 2**63 null). A list or
        an object nested more than :data:`TYPED_DEPTH` deep (``depth`` is this place's) is
        ``"JSON"``, its text: Arrow types no deeper (a plugin's build may store deeper meta)."""
        kinds = self._kinds()
        if not kinds:
            return "NULL"
        deep = depth > TYPED_DEPTH and ("arr" in kinds or "obj" in kinds)
        if deep or len(kinds) > 1:
            if deep or not _NUMBERS.issuperset(kinds):
                return "JSON"
            return "DOUBLE" if "real" in kinds else "HUGEINT"
        kind = kinds[0]
        if kind == "arr":
            assert self.items is not None
            return [self.items.duck(typed=typed, depth=depth + 1)]
        if kind == "obj":
            assert self.keys is not None
            inner = depth + 1
            return nameable({key: child.duck(typed=typed, depth=inner) for key, child in self.keys.items()})
        unsigned = kind == "uint" and (not typed or "ubig" in self.scalars)
        return "UBIGINT" if unsigned else _LEAF[kind]

    def text(self) -> str | None:
        """DuckDB's structure as text, ``UBIGINT`` read as ``BIGINT`` where every value fits
        it (non-negative numbers are signed numbers all the same), or None when nothing was
        seen: what ``json_transform`` types ``meta`` with (``duck(typed=True)``)."""
        if self.empty():
            return None
        return msgspec.json.encode(self.duck(typed=True)).decode()

    def arrow_type(self) -> pa.DataType:
        """The Arrow type DuckDB's ``json_transform`` gives values of :meth:`text`
        (``struct<>`` when nothing was seen, as the readers type an empty ``meta``).

        >>> Structure.of(['{"a": [1], "b": {"c": "x"}}']).arrow_type()
        StructType(struct<a: list<l: int64>, b: struct<c: string>>)
        """
        import pyarrow as pa

        if self.empty():
            return pa.struct([])
        return _arrow(self.duck(typed=True))

    def dumps(self) -> str:
        """This structure as compact JSON text, exactly as :meth:`loads` reads it back (the
        kinds seen, not only DuckDB's type: two files' structures merge as their values
        would)."""
        return msgspec.json.encode(self._plain()).decode()

    def _plain(self) -> list[Any]:
        out: list[Any] = sorted(self.scalars)
        if self.items is not None:
            out.append(["arr", self.items._plain()])
        if self.keys is not None:
            out.append(["obj", [[key, child._plain()] for key, child in self.keys.items()]])
        return out

    @classmethod
    def loads(cls, text: str | bytes) -> Structure:
        """A structure from :meth:`dumps`'s text; a ``ValueError`` for text that is not one."""
        try:
            return cls._from(msgspec.json.decode(text))
        except (msgspec.DecodeError, TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"not a meta structure ({exc})") from exc

    @classmethod
    def _from(cls, plain: Any) -> Structure:
        if not isinstance(plain, list):
            raise ValueError(f"{article(type(plain).__name__)} where a list of kinds was expected")
        out = cls()
        for kind in plain:
            if isinstance(kind, str) and kind in _SCALARS:
                out.scalars.add(kind)
            elif isinstance(kind, list) and len(kind) == 2 and kind[0] == "arr":
                out.items = cls._from(kind[1])
            elif isinstance(kind, list) and len(kind) == 2 and kind[0] == "obj" and isinstance(kind[1], list):
                out.keys = {}
                for pair in kind[1]:
                    if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)):
                        raise ValueError(f"{pair!r} where a [key, kinds] pair was expected")
                    out.keys[pair[0]] = cls._from(pair[1])
            else:
                raise ValueError(f"{kind!r} is no kind")
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Structure) and self._plain() == other._plain()

    __hash__ = None  # type: ignore[assignment]  # mutable: made by add()

    def __repr__(self) -> str:
        return f"Structure({self.dumps()})"


_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def nameable(duck: Any) -> Any:
    """A DuckDB structure (JSON-ready Python) with ``"JSON"`` in the place of each object
    DuckDB cannot make a struct of: one of no key, one holding an empty key, two keys that
    differ only in the case of ASCII letters (DuckDB's names are not case-sensitive) or a
    key holding NUL (DuckDB ends a name there).

    >>> nameable({"a": {"": "BIGINT"}, "b": [{"X": "VARCHAR", "x": "VARCHAR"}], "c": "DOUBLE"})
    {'a': 'JSON', 'b': ['JSON'], 'c': 'DOUBLE'}
    >>> nameable({"a": {"k\\x00": "BIGINT"}, "b": "VARCHAR"})
    {'a': 'JSON', 'b': 'VARCHAR'}
    """
    if isinstance(duck, list):
        return [nameable(item) for item in duck]
    if not isinstance(duck, dict):
        return duck
    folded = {key.translate(_FOLD) for key in duck}
    if not duck or "" in folded or len(folded) < len(duck) or any("\x00" in key for key in duck):
        return "JSON"
    return {key: nameable(value) for key, value in duck.items()}


def _arrow(duck: Any) -> pa.DataType:
    """The Arrow type of one of DuckDB's structure types under ``json_transform``."""
    import pyarrow as pa

    if isinstance(duck, list):
        return pa.list_(pa.field("l", _arrow(duck[0])))
    if isinstance(duck, dict):
        return pa.struct([pa.field(key, _arrow(value)) for key, value in duck.items()])
    return {
        "NULL": pa.null(),
        "BOOLEAN": pa.bool_(),
        "UBIGINT": pa.uint64(),
        "BIGINT": pa.int64(),
        "HUGEINT": pa.decimal128(38, 0),
        "DOUBLE": pa.float64(),
        "VARCHAR": pa.string(),
        "JSON": pa.string(),
    }[duck]
