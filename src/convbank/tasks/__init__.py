"""Benchmark tasks below the datasets: what a task is (:class:`Task`: examples, folds, scorer,
reference figures), what a model is (:class:`Model`, :class:`Ranker`), and the metrics,
features and baselines the datasets' tasks share. Nothing here reads the bank: a task reads
any :class:`CorpusLike`. The runner, the predictions files and the saved results are in
:mod:`convbank.bench`, above the datasets.
"""

from convbank.tasks._base import (
    NOT_FOUND,
    CorpusLike,
    Example,
    Figure,
    Fold,
    Kind,
    Model,
    Ranker,
    Task,
    TaskData,
    cross_validation,
    data_kind,
    folds,
    references,
    too_small,
)

__all__ = [
    "NOT_FOUND",
    "CorpusLike",
    "Example",
    "Figure",
    "Fold",
    "Kind",
    "Model",
    "Ranker",
    "Task",
    "TaskData",
    "cross_validation",
    "data_kind",
    "folds",
    "references",
    "too_small",
]
