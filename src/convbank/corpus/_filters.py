"""What :meth:`convbank.Corpus.filter` checks and selects by: labels, layers and ``meta`` keys
(checked against the whole dataset, so that a typo is an error listing the known names, never
a silent empty corpus) and the positions a label, meta values or a SQL condition select."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from convbank._lazy import lazy
from convbank._wording import article
from convbank.errors import QueryError, UnknownFieldError, did_you_mean

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from convbank.corpus._source import Source
    from convbank.datasets import Dataset
    from convbank.store import Snapshot
else:
    np = lazy("numpy")

__all__ = ["Filters", "unknown_label"]

_META_KEY = re.compile(
    r"""\bmeta\s*->>?\s*'\$?\.?([^'.\[]+)|\bjson_extract(?:_string)?\s*\(\s*meta\s*,\s*'\$\.([^'.\[]+)""",
    re.IGNORECASE,
)


def unknown_label(dataset: str, label: str, known: Mapping[str, Sequence[str]]) -> str | None:
    """What is wrong with a ``layer:label`` filter of ``dataset`` whose layers and labels are
    ``known`` (None: nothing), the closest known labels named. The API, the CLI and the viewer
    say the same. Example: ``unknown_label("casino", "uv-part", {"strategy": ["uv-part"]})``
    is ``"casino has no annotation layer 'uv-part' (a label is layer:label); did you mean
    strategy:uv-part? layers: strategy"``."""
    layer, sep, name = label.partition(":")
    if not sep or layer not in known:
        pairs = [f"{ly}:{lb}" for ly, names in known.items() for lb in names]
        hint = did_you_mean(label, pairs, cutoff=0.5) or did_you_mean(
            label, [p for p in pairs if p.split(":", 1)[1] == label], cutoff=0
        )
        return (
            f"{dataset} has no annotation layer {layer!r} (a label is layer:label); "
            + hint
            + f"layers: {', '.join(known) or 'none'}"
        )
    if name not in known[layer]:
        close = did_you_mean(name, known[layer], cutoff=0.5, prefix=f"{layer}:")
        return f"{dataset} has no label {name!r} in layer {layer!r}; {close}labels: {', '.join(known[layer])}"
    return None


class Filters:
    """The selection helpers of a :class:`~convbank.Corpus` (a mixin: see there)."""

    _source: Source
    dataset: Dataset

    if TYPE_CHECKING:

        @property
        def snapshot(self) -> Snapshot: ...

        def sql(self, query: str, *, timeout: float | None = None, hard: bool = False) -> pa.Table: ...

    def _label_positions(self, label: str) -> np.ndarray:
        layer, _, name = label.partition(":")
        known = self._dataset_labels()
        problem = unknown_label(self.dataset.name, label, known)
        if problem:
            raise UnknownFieldError(
                problem, name=label, known=[f"{a}:{b}" for a, bs in known.items() for b in bs]
            )
        ids = set()
        for part in self._source.parts:
            for ref in self._source.files("annotations", part):
                table = self.snapshot.read_table(
                    ref, columns=["conversation_id"], filters=[("layer", "=", layer), ("label", "=", name)]
                )
                ids.update(table.column(0).to_pylist())
        return np.fromiter(self._source.positions(ids).values(), dtype=np.int64)

    def _dataset_labels(self) -> dict[str, list[str]]:
        """The layers and labels of the whole dataset in the bank (what a label filter is
        checked against: a label absent from this corpus's splits is no typo)."""
        return _labels_of(
            self.snapshot.read_table(r, columns=["layer", "label"])
            for r in self.snapshot.refs("annotations", self.dataset.name)
        )

    def labels(self) -> dict[str, list[str]]:
        """The annotation layers of this corpus's dataset and parts, with their labels.

        >>> convbank.load("casino").labels()["strategy"][:3]
        ['elicit-pref', 'no-need', 'non-strategic']
        """
        return _labels_of(
            self.snapshot.read_table(ref, columns=["layer", "label"])
            for part in self._source.parts
            for ref in self._source.files("annotations", part)
        )

    def meta_keys(self) -> list[str]:
        """The keys of conversation ``meta`` in this corpus's dataset and parts (top level).

        >>> "eval_score" in convbank.load("convai2", "volunteers").meta_keys()
        True
        """
        keys: set[str] = set()
        for values in self._meta_column():
            for text in set(values):
                keys.update(_decode_meta(text))
        return sorted(keys)

    def _meta_column(self) -> Iterator[list[str]]:
        for batch in range(len(self._source.batches)):
            yield self._source.read(batch, "conversations", ["meta"]).column(0).to_pylist()

    def _meta_positions(self, meta: Mapping[str, Any]) -> np.ndarray:
        known = self.meta_keys()
        for key in meta:
            self._check_meta_key(key if key in known else key.split(".", 1)[0], known)
        out = []
        kinds: dict[str, set[str]] = {key: set() for key in meta}
        inside: dict[str, set[str]] = {key: set() for key in meta}
        for batch, values in enumerate(self._meta_column()):
            start = self._source.starts[batch]
            for row, text in enumerate(values):
                data = _decode_meta(text)
                found = {key: _held(data, key) for key in meta}
                for key, (held, stored) in found.items():
                    kinds[key].update([_kind(stored), "held"] if held else [])
                    inside[key].update([] if held else inside_of(data, key))
                if all(found[key][1] == value for key, value in meta.items()):
                    out.append(start + row)
        for key in meta:
            if "held" not in kinds[key]:  # a dotted key none holds: never a silent empty corpus
                raise unheld_meta_key(self.dataset.name, key, inside[key])
            kinds[key] -= {"held"}
        for key, value in meta.items():
            problem = _type_problem(self.dataset.name, key, value, kinds[key] - {"null"})
            if problem:
                raise UnknownFieldError(problem, name=key)
        return np.asarray(out, dtype=np.int64)

    def _check_meta_key(self, key: str, known: list[str]) -> None:
        if key not in known:
            raise UnknownFieldError(
                f"{self.dataset.name} conversations have no meta key {key!r}; "
                + did_you_mean(key, known)
                + f"keys: {', '.join(known) or 'none'}",
                name=key,
                known=known,
            )

    def _where_positions(self, where: str, timeout: float | None = None, hard: bool = False) -> np.ndarray:
        one_condition(where)
        named = {m.group(1) or m.group(2) for m in _META_KEY.finditer(where)}
        if named:
            known = self.meta_keys()
            for key in sorted(named):
                self._check_meta_key(key, known)
        parts = " OR ".join(
            f"(config = {_literal(p.config)} AND split = {_literal(p.split)})" for p in self._source.parts
        )
        # the condition filters rows already of this corpus's parts (a subquery), so that one
        # whose own parentheses close early (``1=0) OR (dataset = 'other'``) cannot reach
        # beyond them (before: another dataset's ids selected this one's conversations); on
        # lines of its own: DuckDB's caret shows it alone
        query = (
            f"SELECT c.conversation_id FROM (SELECT * FROM conversations WHERE dataset = "
            f"{_literal(self.dataset.name)} AND ({parts})) AS c WHERE (\n{where}\n)"
        )
        try:
            ids = self.sql(query, timeout=timeout, hard=hard).column(0).to_pylist()
        except QueryError as exc:  # its LINE n: counted from the condition's first line
            from convbank.store.sql import line_up

            raise QueryError(line_up(str(exc)), sql=exc.sql, limit=exc.limit) from exc
        return np.fromiter(self._source.positions(ids).values(), dtype=np.int64)


def check_filter(where: Any, label: Any, layer: Any, meta: Any) -> None:
    """A ``TypeError`` naming the first of :meth:`Corpus.filter`'s arguments given as what it
    never is: a condition that is neither a SQL text nor a function, a label or a layer that
    is not a text, meta that is not a mapping (before, each failed inside, as Python's
    ``AttributeError: 'int' object has no attribute 'partition'``)."""
    if where is not None and not (isinstance(where, str) or callable(where)):
        raise TypeError(f"where is a SQL condition (a str) or a function of a Conversation, not {where!r}")
    for name, value, example in (("label", label, "strategy:uv-part"), ("layer", layer, "strategy")):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} is a text such as {example!r}, not {value!r}")
    if meta is not None and not isinstance(meta, Mapping):
        raise TypeError(
            f"meta is a mapping of meta keys to values, such as {{'eval_score': 5}}, not {meta!r}"
        )


def one_condition(where: str) -> None:
    """Raise :class:`QueryError` unless ``where`` is one condition as DuckDB reads its tokens:
    each parenthesis it closes one it opened, none left open, no ``;``. Put between
    parentheses after ``WHERE``, it is then that clause and nothing more (before: ``1=0)
    UNION SELECT ... (`` added rows of its own, another dataset's ids selecting this one's
    conversations, and ``1=0); SELECT ...; SELECT (1`` made the answer another statement's).

    >>> one_condition("f(x) = ')' -- )")
    >>> one_condition("1=0) UNION SELECT ('c1'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    convbank.errors.QueryError: not one condition: the ')' at character 4 closes a parenthesis ...
    """
    import duckdb

    from convbank.store.sql import statements

    try:
        tokens = duckdb.tokenize(where)
    except duckdb.Error:  # what DuckDB cannot tokenize it cannot run either: said as it says it
        statements(duckdb.connect(), where)
        raise
    data = where.encode("utf-8")
    ends = [at for at, _ in tokens[1:]] + [len(data)]
    depth = 0
    for (at, kind), end in zip(tokens, ends, strict=True):
        if kind != duckdb.token_type.operator:
            continue
        for offset, byte in enumerate(data[at:end]):
            place = len(data[: at + offset].decode("utf-8", "replace")) + 1
            if byte == ord(")"):
                depth -= 1
                if depth < 0:
                    raise QueryError(
                        f"not one condition: the ')' at character {place} closes a parenthesis "
                        "the condition did not open",
                        sql=where,
                    )
            elif byte == ord("("):
                depth += 1
            elif byte == ord(";"):
                raise QueryError(
                    f"not one condition: the ';' at character {place} ends a statement", sql=where
                )
    if depth:
        raise QueryError("not one condition: a parenthesis it opens is not closed", sql=where)


def _literal(text: str) -> str:
    """``text`` as an SQL string literal (a config imported as ``x'y`` is a name like any).

    >>> _literal("x'y")
    "'x''y'"
    """
    return "'" + text.replace("'", "''") + "'"


def _labels_of(tables: Iterable[pa.Table]) -> dict[str, list[str]]:
    """``{layer: sorted labels}`` of (layer, label) tables."""
    found: dict[str, set[str]] = {}
    for table in tables:
        for layer, name in set(zip(*(c.to_pylist() for c in table.columns), strict=True)):
            found.setdefault(layer, set()).add(name)
    return {layer: sorted(names) for layer, names in sorted(found.items())}


_decode_any = msgspec.json.Decoder().decode


def _decode_meta(text: str) -> dict[str, Any]:
    data = {} if text == "{}" else _decode_any(text)
    return data if isinstance(data, dict) else {}


def _held(data: Any, key: str) -> tuple[bool, Any]:
    """Whether a conversation's meta holds ``key``, and its value there: the key itself
    where the meta has one of that name (``"a.b"``, literally), else the place its dots
    lead to (``a``, then ``b`` inside it)."""
    if isinstance(data, dict) and key in data:
        return True, data[key]
    for step in key.split("."):
        if not isinstance(data, dict) or step not in data:
            return False, None
        data = data[step]
    return True, data


def unheld_meta_key(dataset: str, key: str, inside: set[str]) -> UnknownFieldError:
    """The error for a dotted meta key no conversation's meta holds (``"a.zzz"``), naming the
    keys found where it points inside (``inside``: those of ``a``)."""
    parent = key.rsplit(".", 1)[0]
    known = [f"{parent}.{k}" for k in sorted(inside)]
    return UnknownFieldError(
        f"{dataset} conversations have no meta key {key!r}; "
        + did_you_mean(key, known)
        + f"keys in {parent!r}: {', '.join(known) or 'none'}",
        name=key,
        known=known,
    )


def inside_of(data: Any, key: str) -> list[str]:
    """The keys of the object where dotted ``key`` points inside, if there is one."""
    found, value = _held(data, key.rsplit(".", 1)[0]) if "." in key else (False, None)
    return list(value) if found and isinstance(value, dict) else []


_KINDS = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}


def _kind(value: Any) -> str:
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


def _type_problem(dataset: str, key: str, value: Any, stored: set[str]) -> str | None:
    """What is wrong with a meta filter value whose type no stored value of ``key`` has (an
    equality that can hold for none: ``'5'`` against integers); None when a type matches."""
    numbers = {"integer", "number"}
    kind = _kind(value)
    if value is None or not stored or kind in stored or (kind in numbers and stored & numbers):
        return None
    hint = ""
    if isinstance(value, str):
        try:
            decoded = _decode_any(value)
        except msgspec.DecodeError:
            decoded = None
        if decoded is not None and _kind(decoded) in stored | (numbers if stored & numbers else set()):
            hint = f"; did you mean meta={{{key!r}: {decoded!r}}}?"
    holds = " and ".join(f"{k}s" for k in sorted(stored))
    return f"{key} holds {holds} in {dataset}; {value!r} is {article(kind)} and matches none{hint}"
