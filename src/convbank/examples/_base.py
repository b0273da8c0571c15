"""The :class:`Examples` sequence: what every example view is (a corpus's turns, responses,
chats or conversations, a mapped or tokenised view, a concatenation), lazy, indexable,
picklable, and what it can be turned into."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from difflib import get_close_matches
from typing import TYPE_CHECKING, Any

import numpy as np

from convbank.errors import UnknownFieldError, require

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from convbank.examples._tables import TableExamples
    from convbank.examples._tokenize import Tokenized

__all__ = ["Examples", "Selected"]

Example = dict[str, Any]

_CHUNK = 1024
"""Examples fetched together when iterating."""


class Examples(ABC):
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
        return list(self[0]) if len(self) else []

    def _positions(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        chosen = np.asarray(indices)
        if chosen.size and not np.issubdtype(chosen.dtype, np.integer):
            raise TypeError(f"examples are selected by integer positions, not {chosen.dtype}")
        chosen = chosen.astype(np.int64, copy=False).reshape(-1)
        total = len(self)
        bad = chosen[(chosen >= total) | (chosen < -total)]
        if bad.size:
            raise IndexError(
                f"position {int(bad[0])} is outside this view of {total:,} examples "
                f"({bad.size:,} such positions)"
            )
        return np.where(chosen < 0, chosen + total, chosen)

    def __getitem__(self, key: int | slice | str) -> Any:
        """An example by position (``view[0]``, ``view[-1]``), a view by slice
        (``view[:100]``), or a column as a list (``view["text"]``)."""
        if isinstance(key, str):
            return self.column(key)
        if isinstance(key, slice):
            return self.select(np.arange(len(self))[key])
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            return self._fetch(self._positions([int(key)]))[0]
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
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        for start in range(0, len(self), batch_size):
            rows = self._fetch(np.arange(start, min(start + batch_size, len(self)), dtype=np.int64))
            yield columns_of(rows)

    def column(self, name: str) -> list[Any]:
        """One key of every example, in order (``view["text"]`` says the same).

        >>> convbank.load("casino", split="valid").examples("turns")["text"][0]
        'Hello there!'
        """
        self._check_column(name)
        return [row[name] for row in self]

    def _check_column(self, name: str) -> None:
        known = self.column_names
        if name not in known:
            close = get_close_matches(name, known, n=1, cutoff=0.6)
            raise UnknownFieldError(
                f"these examples have no column {name!r}; "
                + (f"did you mean {close[0]}? " if close else "")
                + f"columns: {', '.join(known)}"
            )

    def to_list(self) -> list[Example]:
        """Every example, as a list of dicts."""
        return list(self)

    def __repr__(self) -> str:
        return f"<{self._describe()}: {len(self):,} examples>"

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

    def shuffle(self, seed: int | None = None) -> Selected:
        """These examples in a random order (drawn with NumPy from ``seed``), as a view."""
        return Selected(self, np.random.default_rng(seed).permutation(len(self)).astype(np.int64))

    def shard(self, num_shards: int, index: int, *, contiguous: bool = True) -> Selected:
        """One of ``num_shards`` disjoint shards that together hold every example once."""
        if num_shards < 1 or not 0 <= index < num_shards:
            raise ValueError(f"shard {index} of {num_shards}: need 0 <= index < num_shards")
        every = np.arange(len(self), dtype=np.int64)
        if not contiguous:
            return Selected(self, every[index::num_shards])
        return Selected(self, np.array_split(every, num_shards)[index])

    def filter(self, function: Callable[[Example], bool]) -> Selected:
        """The examples for which ``function(example)`` is true, in order, as a view (each
        example is made once to test it).

        >>> turns = convbank.load("casino", split="valid").examples("turns")
        >>> len(turns.filter(lambda t: t["kind"] == "action"))
        63
        """
        keep = np.fromiter((bool(function(x)) for x in self), dtype=bool, count=len(self))
        return Selected(self, np.flatnonzero(keep).astype(np.int64))

    def sort(self, column: str, *, reverse: bool = False) -> Selected:
        """These examples ordered by one column (a stable sort: ties keep their order).

        >>> turns = convbank.load("casino", split="valid").examples("turns")
        >>> turns.sort("turn_index", reverse=True)[0]["turn_index"]
        18
        """
        values = self.column(column)
        # sorted() is stable both ways: ties keep their order with reverse=True too
        order = sorted(range(len(values)), key=lambda i: _sort_key(values[i]), reverse=reverse)
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
        value, such as a turn's labels, counts as the tuple of its items).

        >>> parts = convbank.load("casino").examples("turns", layer="strategy", annotated=True)\\
        ...     .train_test_split(0.2, stratify="labels")
        >>> len(parts["train"]), len(parts["test"])
        (3692, 923)
        """
        total = len(self)
        n_test = _test_count(test_size, total)
        if stratify is None:
            order = np.arange(total, dtype=np.int64)
            if shuffle:
                order = np.random.default_rng(seed).permutation(total).astype(np.int64)
            return {"train": Selected(self, order[n_test:]), "test": Selected(self, order[:n_test])}
        strata = [_stratum(v) for v in self.column(stratify)]
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
        [2, 15, 8]
        """
        from convbank.examples._map import run_map

        return run_map(
            self,
            function,
            batched=batched,
            batch_size=batch_size,
            num_proc=num_proc,
            remove_columns=remove_columns,
            cache=cache,
        )

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
        from convbank.examples._tokenize import Tokenized

        return Tokenized(
            self,
            tokenizer,
            max_length=max_length,
            truncation_side=truncation_side,
            template=template,
            train_on=train_on,
        )

    # ------------------------------------------------------------------ tables
    def to_arrow(self) -> pa.Table:
        """Every example as an Arrow table (one column per key).

        >>> convbank.load("casino", split="valid").examples("turns").to_arrow().num_rows
        402
        """
        import pyarrow as pa

        rows = self.to_list()
        if not rows:
            return pa.table({})
        return pa.Table.from_pylist(rows)

    def to_pandas(self) -> pd.DataFrame:
        """Every example as a pandas DataFrame (needs ``convbank[pandas]``)."""
        require("pandas", "pandas", "to_pandas()")
        frame: pd.DataFrame = self.to_arrow().to_pandas()
        return frame

    def to_polars(self) -> pl.DataFrame:
        """Every example as a polars DataFrame (needs ``convbank[polars]``)."""
        require("polars", "polars", "to_polars()")
        import polars as pl

        frame = pl.from_arrow(self.to_arrow())
        assert isinstance(frame, pl.DataFrame)
        return frame

    def to_hf(self) -> Any:
        """These examples as a Hugging Face ``datasets.Dataset`` (needs ``convbank[hf]``).

        >>> convbank.load("casino", split="valid").examples("chat").to_hf().num_rows
        30
        """
        require("datasets", "hf", "to_hf()")
        import datasets

        return datasets.Dataset(self.to_arrow())


class Selected(Examples):
    """Some examples of another view, at given positions (a slice, a selection, a shuffle,
    a filter's result): made by the view they come from."""

    def __init__(self, parent: Examples, positions: np.ndarray) -> None:
        if isinstance(parent, Selected):  # one level: positions of the underlying view
            positions, parent = parent.positions[positions], parent.parent
        self.parent = parent
        self.positions = np.ascontiguousarray(positions, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.positions)

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        return self.parent._fetch(self.positions[indices])

    def _key(self) -> tuple[Any, ...]:
        return ("selected", self.parent._key(), self.positions.tobytes())

    def _describe(self) -> str:
        return f"{self.parent._describe()}, {len(self):,} of {len(self.parent):,} selected"

    def cache_home(self) -> Any:
        return self.parent.cache_home()

    def __getattr__(self, name: str) -> Any:
        # what the view it selects from knows (label_names, the corpus...): asked there
        if name.startswith("_") or name in ("parent", "positions"):
            raise AttributeError(name)
        return getattr(self.parent, name)


def columns_of(rows: Sequence[Example]) -> dict[str, list[Any]]:
    """Examples (dicts) as a dict of lists, keys in the first example's order."""
    if not rows:
        return {}
    return {key: [row[key] for row in rows] for key in rows[0]}


def _sort_key(value: Any) -> tuple[int, Any]:
    return (1, 0) if value is None else (0, value)


def _stratum(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_stratum(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _stratum(v)) for k, v in value.items()))
    return value


def _test_count(test_size: float | int, total: int) -> int:
    if isinstance(test_size, float):
        if not 0.0 < test_size < 1.0:
            raise ValueError(f"test_size {test_size} must be a fraction between 0 and 1, or a count")
        n_test = math.ceil(test_size * total)
    else:
        n_test = int(test_size)
    if not 0 < n_test < total:
        raise ValueError(f"test_size {test_size} leaves no train or no test among {total:,} items")
    return n_test


def stratified_test(strata: Sequence[Any], n_test: int, seed: int | None) -> np.ndarray:
    """Positions of a test part of ``n_test`` items whose strata keep their shares: each
    stratum gives its share rounded down, the remaining places go to the strata with the
    largest remainders (ties to the larger stratum), as scikit-learn's stratified splits
    allocate; within a stratum the items are drawn with ``seed`` (None: the first ones)."""
    groups: dict[Any, list[int]] = {}
    for i, s in enumerate(strata):
        groups.setdefault(s, []).append(i)
    total = len(strata)
    keys = list(groups)
    exact = np.asarray([len(groups[k]) * n_test / total for k in keys])
    counts = np.floor(exact).astype(int)
    left = n_test - int(counts.sum())
    if left:
        order = sorted(range(len(keys)), key=lambda k: (-(exact[k] - counts[k]), -len(groups[keys[k]]), k))
        for k in order[:left]:
            counts[k] += 1
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for k, key in enumerate(keys):
        members = np.asarray(groups[key], dtype=np.int64)
        if seed is not None:
            members = members[rng.permutation(len(members))]
        chosen.extend(members[: counts[k]].tolist())
    return np.sort(np.asarray(chosen, dtype=np.int64))
