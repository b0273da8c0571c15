"""Mixtures of example views (:func:`mix`): several views, drawn from with given probabilities,
in a plan that a seed and an epoch fix on every machine, as Hugging Face's
``interleave_datasets``."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from convbank._arguments import a_flag
from convbank._wording import article, counted
from convbank.errors import whole_number
from convbank.examples._base import Examples
from convbank.examples._rows import Example

__all__ = ["Mixture", "mix"]

Stopping = Literal["first_exhausted", "all_exhausted"]
STOPPINGS = ("first_exhausted", "all_exhausted")

_FALLBACK = re.compile(r"source\d+")

_BLOCK = 1 << 16
"""Source draws made at a time (a fixed size: the plan does not depend on how it is drawn)."""

MOST_DRAWS = 1 << 28
"""The most draws a plan may be expected to take (268,435,456: a plan of about 2.4 GB while
it is drawn); ``stopping="all_exhausted"`` with a view so unlikely that all its examples
would take more is refused up front, never drawn without end."""


def mix(
    sources: Mapping[Examples, float] | Sequence[Examples],
    *,
    weights: Sequence[float] | Literal["size"] = "size",
    seed: int = 0,
    stopping: Stopping = "first_exhausted",
    shuffle: bool = True,
    names: Sequence[str] | None = None,
) -> Mixture:
    """A mixture of example views: at each step a view is drawn with its probability and its
    next example is taken (each view is read in its own order, drawn from the seed, or in
    order with ``shuffle=False``).

    ``sources`` is ``{view: weight}`` (positive numbers, normalised to probabilities) or a
    sequence of views, weighted by ``weights``: ``"size"`` (the default: in proportion to
    their numbers of examples) or one positive number per view (for views that cannot be
    dict keys, such as two equal views).

    ``stopping="first_exhausted"`` (the default, as ``interleave_datasets``) ends the mixture
    with the draw that takes the last example of a view: every example is drawn at most once.
    ``"all_exhausted"`` goes on until every view has given all its examples at least once; a
    view that runs out starts again in a new order (oversampling).

    At epoch 0 the views are drawn exactly as ``interleave_datasets(..., probabilities,
    seed=seed)`` draws them; with ``shuffle=False`` the mixture is then its examples, in its
    order (a test checks it). Later epochs draw anew.

    Each example is its view's example with a ``source`` key (replaced if it has one): the
    view's name, from ``names``, else the view's ``name`` attribute if it has a string one,
    else ``source0``, ``source1``... A mixture is an :class:`Examples`: ``len``, indexing,
    slicing, pickling; :meth:`Mixture.set_epoch` draws a new plan (the same on every machine
    for a seed and an epoch), which ``convbank.torch``'s datasets call each epoch.

    >>> casino = convbank.load("casino").examples("turns")
    >>> convai2 = convbank.load("convai2", config="volunteers").examples("turns")
    >>> both = mix({casino: 0.7, convai2: 0.3}, seed=0, names=["casino", "convai2"])
    >>> both[0]["source"] in ("casino", "convai2")
    True
    >>> by_size = mix([casino, convai2])  # probabilities in proportion to their sizes
    """
    if isinstance(sources, Mapping):
        if not isinstance(weights, str):
            raise TypeError("give the weights as the mapping's values or as weights=, not both")
        views = list(sources)
        given: Sequence[float] | Literal["size"] = [sources[v] for v in views]
    else:
        views = list(sources)
        given = weights
    return Mixture(views, given, seed=seed, stopping=stopping, shuffle=shuffle, names=names)


class Mixture(Examples):
    """Examples drawn from several views with given probabilities (see :func:`mix`, which
    makes them). The plan is two arrays, drawn with NumPy from ``(seed, epoch)``: for each
    example, the view it comes from (:attr:`plan_sources`) and its position in that view
    (:attr:`plan_positions`). It is drawn when first needed and again after
    :meth:`set_epoch`; the number of examples may differ from one epoch to the next.

    >>> a = convbank.load("casino", split="valid").examples("turns")
    >>> b = convbank.load("casino", split="test").examples("turns")
    >>> m = mix({a: 1, b: 1}, names=["valid", "test"])
    >>> m.counts()  # examples of each view in this epoch's plan: valid ran out first
    {'valid': 402, 'test': 432}
    """

    def __init__(
        self,
        sources: Sequence[Examples],
        weights: Sequence[float] | Literal["size"] = "size",
        *,
        seed: int = 0,
        stopping: Stopping = "first_exhausted",
        shuffle: bool = True,
        names: Sequence[str] | None = None,
    ) -> None:
        views = list(sources)
        if not views:
            raise ValueError("mix() needs at least one view")
        for i, view in enumerate(views):
            if not isinstance(view, Examples):
                raise TypeError(f"source {i} is {article(type(view).__name__)}, not an Examples view")
        if stopping not in STOPPINGS:
            raise ValueError(f"stopping must be 'first_exhausted' or 'all_exhausted', not {stopping!r}")
        self.sources: tuple[Examples, ...] = tuple(views)
        self.names: tuple[str, ...] = _names(views, names)
        self.sizes: tuple[int, ...] = tuple(len(v) for v in views)
        for name, size in zip(self.names, self.sizes, strict=True):
            if size == 0:
                raise ValueError(f"source {name!r} has no examples: a mixture cannot draw from it")
        self.weights: tuple[float, ...] = _probabilities(weights, self.sizes)
        if stopping == "all_exhausted":
            _check_reachable(self.names, self.sizes, self.weights)
        self.seed = whole_number(seed)
        self.stopping: Stopping = stopping
        self.shuffled = a_flag(shuffle, "shuffle")
        self.epoch = 0
        self._plan: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ the plan
    def set_epoch(self, epoch: int) -> None:
        """Draw the plan of this epoch: a new order of each view and new draws (the same for
        a seed and an epoch on every machine)."""
        epoch = whole_number(epoch, "epoch")
        if epoch != self.epoch:
            self.epoch = epoch
            self._plan = None

    @property
    def plan_sources(self) -> np.ndarray:
        """For each example, the index of the view it comes from (read-only)."""
        return self._drawn()[0]

    @property
    def plan_positions(self) -> np.ndarray:
        """For each example, its position in its view (read-only)."""
        return self._drawn()[1]

    def counts(self) -> dict[str, int]:
        """The number of examples of each view in this epoch's plan, by name."""
        found = np.bincount(self.plan_sources, minlength=len(self.sources))
        return dict(zip(self.names, (int(c) for c in found), strict=True))

    def _drawn(self) -> tuple[np.ndarray, np.ndarray]:
        if self._plan is None:
            src, pos = draw_plan(
                self.sizes, self.weights, seed=self.seed, epoch=self.epoch,
                stopping=self.stopping, shuffle=self.shuffled,
            )  # fmt: skip
            src.flags.writeable = False
            pos.flags.writeable = False
            self._plan = (src, pos)
        return self._plan

    # ------------------------------------------------------------------ Examples
    def __len__(self) -> int:
        return len(self._drawn()[0])

    def _fetch(self, indices: np.ndarray) -> list[Example]:
        src_all, pos_all = self._drawn()
        src = src_all[indices]
        pos = pos_all[indices]
        out: list[Example | None] = [None] * len(indices)
        for s in np.unique(src).tolist():
            where = np.flatnonzero(src == s)
            name = self.names[s]
            rows = self.sources[s]._fetch(pos[where])
            for i, row in zip(where.tolist(), rows, strict=True):
                out[i] = {**row, "source": name}
        return out  # type: ignore[return-value]  # every place was filled

    def _key(self) -> tuple[Any, ...]:
        return (
            "mix",
            tuple(v._key() for v in self.sources),
            self.weights,
            self.names,
            self.seed,
            self.epoch,
            self.stopping,
            self.shuffled,
        )

    @property
    def column_names(self) -> list[str]:
        """Every view's keys, in the order they are first met, and ``source``."""
        return list(dict.fromkeys([*(n for view in self.sources for n in view.column_names), "source"]))

    def _describe(self) -> str:
        parts = ", ".join(f"{n} {w:.2f}" for n, w in zip(self.names, self.weights, strict=True))
        return f"Mixture of {parts} ({self.stopping}, seed {self.seed}, epoch {self.epoch})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_plan"] = None  # drawn again where it is needed: the same for the same epoch
        return state


def draw_plan(
    sizes: Sequence[int],
    weights: Sequence[float],
    *,
    seed: int,
    epoch: int,
    stopping: Stopping,
    shuffle: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """The plan of a mixture: (view of each example, position in that view).

    Views are drawn in blocks of 65,536 uniform numbers from ``default_rng([seed, epoch, 0])``
    against the cumulative probabilities, as ``Generator.choice(p=...)`` draws; at epoch 0
    that generator is ``default_rng(seed)`` (NumPy's seed sequences pad with zeros), the one
    ``interleave_datasets`` draws from, so the draws are its draws. The order of view ``s``
    comes from ``default_rng([seed, epoch, 1, s])`` (one permutation per pass over it)."""
    lengths = np.asarray(sizes, dtype=np.int64)
    cdf = np.cumsum(np.asarray(weights, dtype=np.float64))
    cdf /= cdf[-1]
    rng = np.random.default_rng([seed, epoch, 0])
    k = len(lengths)
    blocks: list[np.ndarray] = []
    counts = np.zeros(k, dtype=np.int64)
    while True:
        block = np.minimum(np.searchsorted(cdf, rng.random(_BLOCK), side="right"), k - 1)
        blocks.append(block)
        counts += np.bincount(block, minlength=k)
        reached = counts >= lengths
        if reached.all() if stopping == "all_exhausted" else reached.any():
            break
    draws = np.concatenate(blocks)
    # the draw that takes a view's last example (its sizes[s]-th draw) ends the plan: the
    # first such draw under first_exhausted, the last one under all_exhausted
    ends = [int(np.flatnonzero(draws == s)[lengths[s] - 1]) if reached[s] else -1 for s in range(k)]
    stop = min(e for e in ends if e >= 0) if stopping == "first_exhausted" else max(ends)
    chosen = draws[: stop + 1]
    src = chosen.astype(np.int32 if k > 127 else np.int8)
    pos = np.empty(len(chosen), dtype=np.int64)
    for s in range(k):
        where = np.flatnonzero(chosen == s)
        n = int(lengths[s])
        taken = len(where)
        if not taken:
            continue
        if shuffle:
            passes = math.ceil(taken / n)
            order = np.random.default_rng([seed, epoch, 1, s])
            keys = order.random((passes, n))
            pos[where] = np.argsort(keys, axis=1, kind="stable").reshape(-1)[:taken]
        else:
            pos[where] = np.arange(taken, dtype=np.int64) % n
    return src, pos


def _probabilities(
    weights: Sequence[float] | Literal["size"] | Any, sizes: tuple[int, ...]
) -> tuple[float, ...]:
    if isinstance(weights, str):
        if weights != "size":
            raise ValueError(f"weights must be 'size' or one positive number per source, not {weights!r}")
        return tuple(s / math.fsum(sizes) for s in sizes)
    else:
        values = list(weights)
        if len(values) != len(sizes):
            given = f"{counted(len(values), 'weight')} for {counted(len(sizes), 'source')}"
            raise ValueError(f"{given}: give one weight per source")
        exact = [_weight(i, w) for i, w in enumerate(values)]
        try:
            values = [float(w) for w in exact]
            total = math.fsum(values)
        except OverflowError:  # beyond a float (2**1100), or summing past one (1e308 twice)
            whole = sum(exact, Fraction(0))
            return tuple(float(w / whole) for w in exact)
        return tuple(v / total for v in values)


def _weight(i: int, w: Any) -> Fraction:
    """Weight ``i`` as the exact positive number it is: an int of any size, a float, NumPy's,
    a ``Fraction``, a ``Decimal`` or a 0-d tensor or array of one of them; anything else, and
    a weight that is not positive and finite, one line naming it."""
    value: Any = w.item() if not isinstance(w, np.generic) and getattr(w, "ndim", None) == 0 else w
    if isinstance(value, np.generic) and not isinstance(value, np.bool_):
        value = value.item()  # NumPy's int or float as Python's
    if isinstance(value, bool) or not isinstance(value, (numbers.Rational, float, Decimal)):
        raise TypeError(f"weight {i} is {w!r}: weights are positive numbers")
    finite = (
        value.is_finite()
        if isinstance(value, Decimal)
        else not isinstance(value, float) or math.isfinite(value)
    )
    if not finite or (exact := Fraction(value)) <= 0:
        raise ValueError(f"weight {i} is {w!r}: weights are positive finite numbers")
    return exact


def _check_reachable(names: tuple[str, ...], sizes: tuple[int, ...], weights: tuple[float, ...]) -> None:
    """Refuse an ``all_exhausted`` mixture whose views cannot all be drawn in
    :data:`MOST_DRAWS` expected draws: a view of probability ``p`` and ``n`` examples takes
    about ``n / p`` draws to give them all (a weight of ``1e-12``, or one that rounds to a
    probability of 0, would draw without end).

    >>> try:
    ...     _check_reachable(("a", "b"), (10, 10), (1e-12, 1.0))
    ... except ValueError as e:
    ...     print(str(e)[:75])
    source 'a' has probability 1e-12: drawing its 10 examples takes about 1e+13
    """
    for name, size, p in zip(names, sizes, weights, strict=True):
        expected = size / p if p > 0 else math.inf
        if expected > MOST_DRAWS:
            raise ValueError(
                f"source {name!r} has probability {p:.3g}: drawing its {counted(size, 'example')} takes "
                f"about {expected:.3g} draws under stopping='all_exhausted', more than "
                f"{MOST_DRAWS:,}; give it a larger weight or use stopping='first_exhausted'"
            )


def _names(views: list[Examples], names: Sequence[str] | None) -> tuple[str, ...]:
    if names is not None:
        chosen = list(names)
        if len(chosen) != len(views):
            raise ValueError(f"{len(chosen)} names for {len(views)} sources: give one name per source")
        if any(not isinstance(n, str) for n in chosen):
            raise TypeError("names are strings")
        repeated = sorted({n for n in chosen if chosen.count(n) > 1})
        if repeated:
            raise ValueError(f"source names must differ; repeated: {', '.join(repeated)}")
        return tuple(chosen)
    offered: list[str | None] = []
    for view in views:
        try:
            name = getattr(view, "name", None)
        except Exception:  # a view whose name cannot be said has none
            name = None
        offered.append(name if isinstance(name, str) and name else None)
    # an offered name is kept when no other view offers it and it is not a fallback's
    return tuple(
        n if n is not None and offered.count(n) == 1 and not _FALLBACK.fullmatch(n) else f"source{i}"
        for i, n in enumerate(offered)
    )
