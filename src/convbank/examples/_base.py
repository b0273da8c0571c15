"""The :class:`Examples` sequence: what every example view is (a corpus's turns, responses,
chats or conversations, a mapped or tokenised view, a concatenation), lazy, indexable,
picklable, and what it can be turned into."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from convbank._arguments import a_flag, a_verdict, an_index
from convbank._wording import counted
from convbank.errors import UnknownFieldError, did_you_mean, printable, whole_number
from convbank.examples._fingerprint import UnhashableError, fingerprint
from convbank.examples._rows import (
    Example,
    chosen_positions,
    columns_of,
    forwarded,
    names_of,
    sorted_positions,
    split_size,
    stratified_test,
    stratum,
)
from convbank.examples._tables import Tables
from convbank.examples._tokenize import Encoder

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["Columns", "Derived", "Examples", "Selected", "TableExamples", "Tokenized"]

_CHUNK = 1024
"""Examples fetched together when iterating."""


class Examples(Tables, ABC):
    """A lazy sequence of examples (dicts), like a Hugging Face ``Dataset``: ``len``,
    ``view[i]`` (an example), ``view[a:b]`` and :meth:`select` (a view), ``view["text"]`` (a
    column, as a list), iteration, :meth:`map` (cached), :meth:`filter`, :meth:`sort`,
    :meth:`shuffle`, :meth:`train_test_split` (stratified on request), :meth:`tokenize`, and
    Arrow, pandas, polars and Hugging Face tables. A view holds how to make its examples, not
    the examples: it pickles small and goes to ``DataLoader`` workers as it is.

    Subclasses implement :meth:`__len__`, :meth:`_fetch` and :meth:`_key`.
    """

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def _fetch(self, indices: np.ndarray) -> list[Example]:
        """The examples at these positions (in range, non-negative, may repeat), in order."""

    @abstractmethod
    def _key(self) -> tuple[Any, ...]:
        """What makes this view's examples what they are (for equality and the map cache):
        where they come from, how they are made. Raises ``TypeError`` when that cannot be
        said (a view over unhashable data)."""

    def _describe(self) -> str:
        """A few words for ``repr``."""
        return type(self).__name__

    def cache_home(self) -> Any:
        """The folder :meth:`map` caches results in (a ``Path``), and the generation tag the
        entries belong to (None: not tied to a bank generation)."""
        from convbank.settings import home

        return home() / "cache" / "map", None

    # ------------------------------------------------------------------ access
    @property
    def column_names(self) -> list[str]:
        """The keys of the examples (of the first one; every example has the same).

        >>> convbank.load("casino").examples("turns").column_names[:3]
        ['dataset', 'config', 'split']
        """
        shape = self._shape_rows(1)
        return list(shape[0]) if shape else []

    def _positions(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        total = len(self)
        of, refused = (
            f"this view of {counted(total, 'example')}",
            "examples are selected by integer positions, not",
        )
        return chosen_positions(indices, total, of=of, refused=refused)

    def __getitem__(self, key: int | slice | str) -> Any:
        """An example by position (``view[0]``, ``view[-1]``), a view by slice
        (``view[:100]``), or a column as a list (``view["text"]``)."""
        if isinstance(key, str):
            return self.column(key)
        if isinstance(key, slice):
            return self.select(np.arange(len(self))[key])
        if (index := an_index(key)) is not None:
            return self._fetch(self._positions([index]))[0]
        raise TypeError(
            f"examples are indexed by position (an int), slice or column name (a str), "
            f"not by {type(key).__name__}; use select() for a list of positions"
        )

    def __getitems__(self, indices: Sequence[int]) -> list[Example]:
        """Several examples at once (what a ``DataLoader`` asks for): fetched together."""
        return self._fetch(self._positions(list(indices)))

    def __iter__(self) -> Iterator[Example]:
        for start in range(0, len(self), _CHUNK):
            yield from self._fetch(np.arange(start, min(start + _CHUNK, len(self)), dtype=np.int64))

    def iter(self, batch_size: int) -> Iterator[dict[str, list[Any]]]:
        """Batches of at most ``batch_size`` examples as dicts of lists (columns).

        >>> next(convbank.load("casino").examples("turns").iter(4))["turn_index"]
        [0, 1, 2, 3]
        """
        batch_size = whole_number(batch_size, "batch_size", least=1)
        for start in range(0, len(self), batch_size):
            rows = self._fetch(np.arange(start, min(start + batch_size, len(self)), dtype=np.int64))
            yield columns_of(rows)

    def column(self, name: str) -> list[Any]:
        """One key of every example, in order (``view["text"]`` says the same).

        >>> convbank.load("casino", split="valid").examples("turns")["text"][1]
        "Hi friend! I'm very excited to go to the trip"
        """
        self._check_column(name)
        return [row.get(name) for row in self]

    def _check_column(self, name: str) -> None:
        known = self.column_names
        if name not in known:
            raise UnknownFieldError(
                f"these examples have no column {name!r}; "
                + did_you_mean(name, known, n=1)
                + f"columns: {', '.join(known)}",
                name=name,
                known=known,
            )

    def __repr__(self) -> str:
        shown = printable(self._describe())  # names given: a newline, an ESC
        return f"<{shown}: {counted(len(self), 'example')}>"

    def __eq__(self, other: object) -> bool:
        """Equal: the same examples made the same way from the same data (compares how they
        are made, reads nothing)."""
        if not isinstance(other, Examples):
            return NotImplemented
        if self is other:
            return True
        try:
            return self._key() == other._key()
        except TypeError:
            return False

    def __hash__(self) -> int:
        return hash(self._key())

    # ------------------------------------------------------------------ derived views
    def select(self, indices: Sequence[int] | np.ndarray) -> Selected:
        """The examples at these positions, in this order (a position may repeat; negative
        ones count from the end), as a view.

        >>> len(convbank.load("casino").examples("turns").select([0, 5, 5]))
        3
        """
        return Selected(self, self._positions(indices))

    def select_columns(self, columns: Sequence[str]) -> Columns:
        """These examples with only these keys, in this order (Hugging Face's
        ``select_columns``): what a trainer takes, without the rest.

        >>> convbank.load("casino").examples("turns").select_columns(["text", "kind"])[0]
        {'text': 'Hello!, how are you doing?', 'kind': 'message'}
        """
        for name in (columns := names_of(columns)):
            self._check_column(name)
        return Columns(self, tuple(columns))

    def remove_columns(self, columns: Sequence[str]) -> Columns:
        """These examples without these keys (Hugging Face's ``remove_columns``; one name or
        a list of names, as for :meth:`select_columns`)."""
        for name in (columns := names_of(columns)):
            self._check_column(name)
        return Columns(self, tuple(c for c in self.column_names if c not in set(columns)))

    def shuffle(self, seed: int | None = None) -> Selected:
        """These examples in a random order (drawn with NumPy from ``seed``), as a view."""
        seed = None if seed is None else whole_number(seed)
        return Selected(self, np.random.default_rng(seed).permutation(len(self)).astype(np.int64))

    def shard(self, num_shards: int, index: int, *, contiguous: bool = True) -> Selected:
        """One of ``num_shards`` disjoint shards that together hold every example once."""
        num_shards = whole_number(num_shards, "num_shards", least=1)
        index = whole_number(index, "index")
        if index >= num_shards:
            raise ValueError(f"shard {index} of {num_shards}: need 0 <= index < num_shards")
        every = np.arange(len(self), dtype=np.int64)
        if not a_flag(contiguous, "contiguous"):
            return Selected(self, every[index::num_shards])
        return Selected(self, np.array_split(every, num_shards)[index])

    def filter(self, function: Callable[[Example], bool]) -> Selected:
        """The examples for which ``function(example)`` is True (a bool: another answer is a
        ``TypeError`` naming it), in order, as a view (each example is made once to test it).

        >>> turns = convbank.load("casino", split="valid").examples("turns")
        >>> len(turns.filter(lambda t: t["kind"] == "action"))
        64
        """
        verdicts = (a_verdict(function(x), f"example {i}") for i, x in enumerate(self))
        keep = np.fromiter(verdicts, dtype=bool, count=len(self))
        return Selected(self, np.flatnonzero(keep).astype(np.int64))

    def sort(self, column: str, *, reverse: bool = False) -> Selected:
        """These examples ordered by one column (a stable sort: ties keep their order; None
        last, with ``reverse=True`` too, as Hugging Face's ``sort``).

        >>> turns = convbank.load("casino", split="valid").examples("turns")
        >>> turns.sort("turn_index", reverse=True)[0]["turn_index"]
        18
        """
        order = sorted_positions(self.column(column), reverse, f"column {column!r}")  # None last
        return Selected(self, np.asarray(order, dtype=np.int64))

    def train_test_split(
        self,
        test_size: float | int = 0.25,
        *,
        seed: int | None = 0,
        shuffle: bool = True,
        stratify: str | None = None,
    ) -> dict[str, Selected]:
        """``{"train": ..., "test": ...}`` views, as Hugging Face's ``train_test_split``;
        ``stratify`` names a column whose values keep their shares in both parts (a list
        value, such as a turn's labels, counts as the set of its items).

        >>> parts = convbank.load("casino").examples("turns", layer="strategy", annotated=True)\\
        ...     .train_test_split(0.2, stratify="labels")
        >>> len(parts["train"]), len(parts["test"])
        (3692, 923)
        """
        seed = None if seed is None else whole_number(seed)
        shuffle = a_flag(shuffle, "shuffle")
        total = len(self)
        n_test = split_size(test_size, total, "examples")
        if stratify is None:
            order = np.arange(total, dtype=np.int64)
            if shuffle:
                order = np.random.default_rng(seed).permutation(total).astype(np.int64)
            return {"train": Selected(self, order[n_test:]), "test": Selected(self, order[:n_test])}
        strata = [stratum(v) for v in self.column(stratify)]
        test = stratified_test(strata, n_test, seed if shuffle else None)
        mask = np.zeros(total, dtype=bool)
        mask[test] = True
        return {
            "train": Selected(self, np.flatnonzero(~mask).astype(np.int64)),
            "test": Selected(self, np.flatnonzero(mask).astype(np.int64)),
        }

    # ------------------------------------------------------------------ computed views
    def map(
        self,
        function: Callable[..., Any],
        *,
        batched: bool = False,
        batch_size: int = 1000,
        num_proc: int | None = None,
        remove_columns: Sequence[str] | None = None,
        cache: bool = True,
    ) -> TableExamples:
        """``function`` over every example, as Hugging Face's ``Dataset.map``: it returns a
        dict whose keys update (or add to) the example's; with ``batched=True`` it gets and
        returns dicts of lists (``batch_size`` examples at a time; it may return a different
        number of rows if ``remove_columns`` removes every input column). ``num_proc``
        processes share the work. The result is an Arrow table, cached on disk under the
        fingerprint of the function and of this view (for a corpus's views, its bank
        generation: a rebuild makes a new entry), so the same call in another run or process
        reads it back instead of computing it; ``cache=False`` always computes.

        >>> turns = convbank.load("casino", split="valid").examples("turns")
        >>> turns.map(lambda t: {"words": len(t["text"].split())})["words"][:3]
        [19, 10, 19]
        """
        from convbank.examples._map import run_map

        table, key = run_map(
            self,
            function,
            batched=batched,
            batch_size=batch_size,
            num_proc=num_proc,
            remove_columns=remove_columns,
            cache=cache,
        )
        return TableExamples(table, key, name=getattr(self, "name", None))

    def tokenize(
        self,
        tokenizer: Any,
        *,
        max_length: int | None = None,
        truncation_side: str | None = None,
        template: bool | None = None,
        train_on: str = "response",
    ) -> Tokenized:
        """These examples with ``input_ids`` and ``attention_mask`` (and, for views with a
        response, ``labels``: the response's tokens, -100 on the context), made by
        ``tokenizer``: a Hugging Face tokenizer object or a callable from text to token ids.
        See :class:`~convbank.examples.Tokenized` for what is tokenised in each view."""
        encoder = Encoder(
            tokenizer,
            max_length=max_length,
            truncation_side=truncation_side,
            template=template,
            train_on=train_on,
        )
        return Tokenized(self, encoder)


class Derived(Examples):
    """A view made from another (``parent``): as long as it unless it says otherwise, cached
    where it is, knowing what :data:`~convbank.examples._rows.FORWARDED` names of it."""

    parent: Examples

    def __len__(self) -> int:
        return len(self.parent)

    def cache_home(self) -> Any:
        """Where the view it is made from caches :meth:`map` results."""
        return self.parent.cache_home()

    def __getattr__(self, name: str) -> Any:
        return forwarded(self, name)

    def _made_from(self, rows: list[Example]) -> list[Example]:
        """This view's examples made of the parent's ``rows`` (the same, unless it says)."""
        return rows

    def _shape_rows(self, most: int = 64) -> list[Example]:
        if len(self):
            return super()._shape_rows(most)
        return self._made_from(self.parent._shape_rows(most))


class Selected(Derived):
    """Some examples of another view, at given positions (a slice, a selection, a shuffle,
    a filter's result): made by the view they come from."""

    def __init__(self, parent: Examples, positions: np.ndarray) -> None:
        if isinstance(parent, Selected):  # one level: positions of the underlying view
            positions, parent = parent.positions[positions], parent.parent
        self.parent: Examples = parent
        self.positions: np.ndarray = np.ascontiguousarray(positions, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.positions)

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        return self.parent._fetch(self.positions[indices])

    def _key(self) -> tuple[Any, ...]:
        return ("selected", self.parent._key(), self.positions.tobytes())

    def _describe(self) -> str:
        return f"{self.parent._describe()}, {len(self):,} of {len(self.parent):,} selected"


class TableExamples(Examples):
    """Examples held in an Arrow table, one row each (a :meth:`Examples.map` result, read
    from the map cache, read into memory). ``key`` says what the table is (the fingerprint of the
    computation that made it); None makes it the hash of the table's content.

    >>> import pyarrow as pa
    >>> view = TableExamples(pa.table({"text": ["hi", "there"], "n": [1, 2]}))
    >>> view[1], view["n"]
    ({'text': 'there', 'n': 2}, [1, 2])
    """

    def __init__(self, table: pa.Table, key: str | None = None, *, name: str | None = None) -> None:
        self.table = table
        self.key = key
        self.name = name

    def __len__(self) -> int:
        return int(self.table.num_rows)

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        import pyarrow as pa

        rows: list[Example] = self.table.take(pa.array(indices, pa.int64())).to_pylist()
        return rows

    def _key(self) -> tuple[Any, ...]:
        if self.key is None:
            self.key = fingerprint(self.table.schema.to_string(), _table_bytes(self.table))
        return ("table", self.key)

    def _describe(self) -> str:
        return f"TableExamples ({', '.join(self.table.column_names)})"

    @property
    def column_names(self) -> list[str]:
        """The table's columns."""
        return list(self.table.column_names)

    def column(self, name: str) -> list[Any]:
        """One column of the table, as a list (read from Arrow, no example made)."""
        self._check_column(name)
        values: list[Any] = self.table.column(name).to_pylist()
        return values

    def to_arrow(self) -> pa.Table:
        """The table itself (read into memory when it comes from the map cache)."""
        return self.table

    def __reduce__(self) -> tuple[Any, ...]:
        return (TableExamples, (self.table, self.key), {"name": self.name})


class Columns(Derived):
    """Some keys of another view's examples (:meth:`Examples.select_columns`)."""

    def __init__(self, parent: Examples, columns: tuple[str, ...]) -> None:
        self.parent = parent
        self.columns = columns

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        return self._made_from(self.parent._fetch(indices))

    def _made_from(self, rows: list[Example]) -> list[Example]:
        return [{c: row[c] for c in self.columns} for row in rows]

    def _key(self) -> tuple[Any, ...]:
        return ("columns", self.parent._key(), self.columns)

    def _describe(self) -> str:
        return f"{self.parent._describe()}, columns {', '.join(self.columns)}"

    @property
    def column_names(self) -> list[str]:
        """The keys kept, in order."""
        return list(self.columns)


class Tokenized(Derived):
    """The examples of ``parent`` with ``input_ids``, ``attention_mask`` and, for chats,
    ``labels``, made by an :class:`~convbank.examples._tokenize.Encoder` (what
    :meth:`Examples.tokenize` makes; its module doc says what is tokenised). ``tokenizer`` is
    a Hugging Face tokenizer (anything with ``__call__`` returning ``input_ids``, and
    ``apply_chat_template`` for chat templates) or a plain callable from a text to a list of
    token ids. ``template``: True requires the tokenizer's chat template, False joins messages
    as ``role: content`` lines, None (the default) uses the template where the tokenizer has
    one.

    >>> words = lambda text: [len(w) for w in text.split()]   # a toy tokenizer
    >>> convbank.load("casino").examples("turns").tokenize(words)[0]["input_ids"]
    [7, 3, 3, 3, 6]
    """

    def __init__(self, parent: Examples, encoder: Encoder) -> None:
        self.parent = parent
        self.encoder = encoder
        self._made_by: str | None = None

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        return self._made_from(self.parent._fetch(indices))

    def _made_from(self, rows: list[Example]) -> list[Example]:
        return self.encoder.encode_rows(rows)

    def _key(self) -> tuple[Any, ...]:
        if self._made_by is None:
            try:
                self._made_by = fingerprint(self.encoder.tokenizer)
            except UnhashableError as exc:
                raise TypeError(str(exc)) from None
        return ("tokenized", self.parent._key(), self._made_by, self.encoder.settings())

    def _describe(self) -> str:
        return f"{self.parent._describe()}, tokenised"


def _table_bytes(table: pa.Table) -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())
