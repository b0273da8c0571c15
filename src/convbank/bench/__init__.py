"""Benchmark tasks of the datasets' papers, with honest metrics and CPU baselines.

``run("casino-strategy")`` returns a :class:`Result`; ``TASKS`` (the registry of tasks) lists
every task. A task is defined in its dataset's package (``convbank.datasets.<name>.tasks``)
against this module's :class:`Task`, :class:`Figure`, :func:`folds` and :func:`too_small`,
with the features and metrics of :mod:`convbank.bench.features` and
:mod:`convbank.bench.metrics`. Baselines need the ``bench`` extra (scikit-learn); the
sentence-embedding models the ``embed`` extra (sentence-transformers with a packaged
all-MiniLM-L6-v2).
"""

from convbank.bench._core import (
    NOT_FOUND,
    BenchError,
    Figure,
    Result,
    Task,
    data_kind,
    folds,
    references,
    run,
    too_small,
)
from convbank.registry import tasks as TASKS  # noqa: N812 - the registry, by its old name

__all__ = [
    "NOT_FOUND",
    "TASKS",
    "BenchError",
    "Figure",
    "Result",
    "Task",
    "data_kind",
    "folds",
    "references",
    "run",
    "too_small",
]
