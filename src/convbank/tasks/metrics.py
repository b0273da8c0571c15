"""Metrics of the benchmark tasks: scikit-learn and SciPy compute what they compute the
same way (F1, accuracy, MAE, Spearman); what no library does exactly as the papers' protocols
need stays here, with every edge case decided on purpose: exact-match span counts that add
up over folds, and ranks in which ties count against the true candidate.

F1 is ``2PR / (P + R)`` and 0 when ``P + R`` is 0, never divided by ``max(P + R, 1)``; a
constant prediction has no Spearman correlation (None), not 0.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Sequence, Sized
from dataclasses import dataclass

from convbank._wording import counted

__all__ = [
    "PRF",
    "accuracy",
    "binary_f1",
    "mean",
    "mean_absolute_error",
    "micro_prf",
    "mrr",
    "rank_of",
    "rank_of_first",
    "recall_at",
    "span_prf",
    "spearman",
]


@dataclass(frozen=True)
class PRF:
    """Precision, recall and F1 from true positives, false positives and false negatives."""

    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        """tp / (tp + fp), 0 when nothing was predicted."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        """tp / (tp + fn), 0 when nothing was to be found."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        """2PR / (P + R), 0 when P + R is 0."""
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: PRF) -> PRF:
        return PRF(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)


def binary_f1(gold: Sequence[bool], predicted: Sequence[bool]) -> float:
    """F1 of the positive class (scikit-learn's, 0 when P + R is 0)."""
    from sklearn.metrics import f1_score

    _same_length(gold, predicted)
    return float(f1_score(list(gold), list(predicted), zero_division=0.0))


def micro_prf(gold: Sequence[Collection[Hashable]], predicted: Sequence[Collection[Hashable]]) -> PRF:
    """Micro-averaged counts over multi-label items (each item a set of labels)."""
    _same_length(gold, predicted)
    total = PRF(0, 0, 0)
    for g, p in zip(gold, predicted, strict=True):
        gs, ps = set(g), set(p)
        total += PRF(len(gs & ps), len(ps - gs), len(gs - ps))
    return total


def span_prf(gold: Iterable[Hashable], predicted: Iterable[Hashable]) -> PRF:
    """Exact-match counts over spans (e.g. ``(item, start, end, type)`` tuples)."""
    gs, ps = set(gold), set(predicted)
    return PRF(len(gs & ps), len(ps - gs), len(gs - ps))


def accuracy(gold: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """The share of exact matches (scikit-learn's)."""
    from sklearn.metrics import accuracy_score

    _same_length(gold, predicted)
    if not gold:
        raise ValueError("accuracy of no items")
    return float(accuracy_score(list(gold), list(predicted)))


def rank_of(scores: Sequence[float], true_index: int) -> int:
    """1-based rank of the true candidate; ties count against it (pessimistic), so a
    constant scorer cannot look good."""
    true = scores[true_index]
    return 1 + sum(bool(s >= true) for i, s in enumerate(scores) if i != true_index)


def rank_of_first(scores: Sequence[float], relevant: Collection[int]) -> int:
    """1-based rank of the best-scored of the ``relevant`` candidates: ties with another
    candidate count against it (pessimistic), ties among the relevant ones do not (one of
    them comes first whatever the order); :func:`rank_of` for one relevant candidate.

    >>> rank_of_first([0.9, 0.9, 0.1], {0, 1}), rank_of_first([0.5, 0.5, 0.5], {0, 2})
    (1, 2)
    """
    best = max(scores[i] for i in relevant)
    return 1 + sum(bool(s >= best) for i, s in enumerate(scores) if i not in relevant)


def mrr(ranks: Sequence[int]) -> float:
    """Mean reciprocal rank."""
    if not ranks:
        raise ValueError("MRR of no rankings")
    return sum(1 / r for r in ranks) / len(ranks)


def recall_at(ranks: Sequence[int], k: int) -> float:
    """The share of rankings with the true candidate in the top k."""
    if not ranks:
        raise ValueError("recall of no rankings")
    return sum(r <= k for r in ranks) / len(ranks)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (SciPy's: ties averaged); None when either side is constant or there
    are fewer than 2 items (SciPy would warn and give NaN). The values are ranked as they
    are, so ints a float cannot tell apart (``2**60`` and ``2**60 + 1``) keep their order."""
    from scipy.stats import spearmanr

    _same_length(x, y)
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return float(spearmanr(_ranks(x), _ranks(y)).statistic)


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their mean rank (as SciPy's ``rankdata``), from Python's
    exact comparison of the values (an int and a float compare exactly).

    >>> _ranks([2**60 + 1, 2**60, 3.5, 3.5])
    [4.0, 3.0, 1.5, 1.5]
    """
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for i in order[start : end + 1]:
            ranks[i] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def mean_absolute_error(gold: Sequence[float], predicted: Sequence[float]) -> float:
    """Mean absolute difference (scikit-learn's)."""
    from sklearn.metrics import mean_absolute_error as mae

    _same_length(gold, predicted)
    if not gold:
        raise ValueError("MAE of no items")
    return float(mae(list(gold), list(predicted)))


def mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None (None if there are none)."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _same_length(a: Sized, b: Sized) -> None:
    if len(a) != len(b):
        raise ValueError(f"{counted(len(a), 'gold item')} but {counted(len(b), 'prediction')}")
