"""Tasks, results and the runner: ``run("casino-strategy", model="embed")``."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from convbank.errors import ConvbankError, require
from convbank.query import Corpus

__all__ = [
    "NOT_FOUND",
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

NOT_FOUND = "not found"


class BenchError(ConvbankError):
    """A benchmark cannot run as asked (unknown model, too little data, missing table)."""

    exit_code = 2


@dataclass(frozen=True)
class Figure:
    """A reference figure: a system's value of a metric and where it comes from. A figure
    of the dataset's authors whose value could not be found has ``value`` None and says so
    in ``source``; nothing fills the cell in its place."""

    system: str
    metric: str
    value: float | None
    source: str

    def to_dict(self) -> dict[str, Any]:
        """``{"system", "metric", "value", "source"}``."""
        return {"system": self.system, "metric": self.metric, "value": self.value, "source": self.source}


def references(published: tuple[Figure, ...], measured: tuple[Figure, ...]) -> dict[str, Any]:
    """The reference block of a task: the authors' figures, then those measured here."""
    return {
        "published": [f.to_dict() for f in published],
        "measured_here": [f.to_dict() for f in measured],
    }


@dataclass
class Result:
    """One run of one task with one model."""

    task: str
    model: str
    dataset: str
    config: str
    data: str
    """``real`` when every split used has the publisher's counts, else ``fixture``."""
    seed: int
    metrics: dict[str, Any]
    reference: dict[str, Any]
    """``{"published": [...], "measured_here": [...]}``: the dataset authors' figures with
    their source (paper and table), and figures measured by this project, never mixed."""
    protocol: str
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"task", "model", "metrics", "reference", "seconds", ...}``."""
        return {
            "task": self.task,
            "model": self.model,
            "metrics": self.metrics,
            "reference": self.reference,
            "seconds": round(self.seconds, 3),
            "dataset": self.dataset,
            "config": self.config,
            "data": self.data,
            "seed": self.seed,
            "protocol": self.protocol,
            **self.details,
        }


class Task(ABC):
    """A benchmark task defined by a dataset's paper: data, protocol, metric, references.
    Tasks live in their dataset's package and are found through :meth:`Dataset.tasks`
    (:data:`convbank.registry.tasks`)."""

    name: ClassVar[str]
    dataset: ClassVar[str]
    description: ClassVar[str]
    protocol: ClassVar[str]
    models: ClassVar[tuple[str, ...]]
    """Baselines first (the first is the fastest), strongest last (the default)."""
    published: ClassVar[tuple[Figure, ...]]
    """The dataset authors' own figures for this task, each with its source (paper and
    table); a figure that could not be found has value None and source "not found"."""
    measured: ClassVar[tuple[Figure, ...]] = ()
    """Figures measured by this project with this protocol on the real data."""

    @property
    def reference(self) -> dict[str, Any]:
        """The authors' figures and those measured here, apart (see :class:`Result`)."""
        return references(self.published, self.measured)

    @abstractmethod
    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Metrics and details (counts of items) of ``model`` on ``corpus``."""

    def describe(self) -> dict[str, Any]:
        """The task as JSON-ready data."""
        return {
            "task": self.name,
            "dataset": self.dataset,
            "description": self.description,
            "protocol": self.protocol,
            "models": list(self.models),
            "default_model": self.models[-1],
            "reference": self.reference,
        }


def folds(groups: list[str], k: int, seed: int) -> list[np.ndarray]:
    """Test-item indices of ``k`` folds that keep each group (dialogue) in one fold; fewer
    folds when there are fewer than ``k`` groups (fixture data)."""
    unique = sorted(set(groups))
    if len(unique) < 2:
        raise BenchError(f"{len(unique)} dialogue(s) cannot be cross-validated; at least 2 are needed")
    k = min(k, len(unique))
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[i]: n % k for n, i in enumerate(order)}
    return [np.array([i for i, g in enumerate(groups) if fold_of[g] == f]) for f in range(k)]


def too_small(corpus: Corpus, have: int, what: str, need: int, protocol: str) -> BenchError:
    """The one-line error of a task whose data is too small for its protocol; it says when
    the bank holds an excerpt (splits smaller than the publisher's)."""
    message = f"{have} {what}; {protocol} needs at least {need}"
    short = [problem for _, problem in _counts(corpus) if problem]
    if short:
        message += f" (the bank holds an excerpt of {corpus.dataset.name}: {', '.join(short)})"
    return BenchError(message)


def data_kind(corpus: Corpus) -> str:
    """``real`` when every (config, split) has its published number of conversations."""
    real = all(published is not None and problem is None for published, problem in _counts(corpus))
    return "real" if real else "fixture"


def _counts(corpus: Corpus) -> list[tuple[int | None, str | None]]:
    """Per part of the corpus: the published count and how the bank's differs from it."""
    ds = corpus.dataset
    return [
        (
            ds.published_count(config, split),
            ds.count_problem(config, split, corpus.snapshot.split_info(ds.name, config, split).conversations),
        )
        for config, split in corpus.parts()
    ]


def run(
    name: str,
    model: str | None = None,
    config: str | None = None,
    seed: int = 0,
    *,
    load: Callable[..., Corpus] | None = None,
) -> Result:
    """Run one task; ``model`` defaults to the task's strongest."""
    from convbank import registry
    from convbank.query import load as default_load

    task = registry.tasks.get(name)
    model = model or task.models[-1]
    if model not in task.models:
        raise BenchError(f"{name} has no model {model!r}; one of {', '.join(task.models)}")
    for module in ("sklearn", "scipy"):  # every task's metrics and baselines, random ones too
        require(module, "bench", "Running a benchmark task")
    corpus = (load or default_load)(task.dataset, config)
    start = time.perf_counter()
    metrics, details = task.evaluate(corpus, model, seed)
    seconds = time.perf_counter() - start
    metrics, details = _plain(metrics), _plain(details)
    used = sorted({c for c, _ in corpus.parts()})
    return Result(
        task=name,
        model=model,
        dataset=task.dataset,
        config=",".join(used),
        data=data_kind(corpus),
        seed=seed,
        metrics=metrics,
        reference=task.reference,
        protocol=task.protocol,
        seconds=seconds,
        details=details,
    )


def _plain(value: Any) -> Any:
    """Numpy scalars to Python numbers, recursively (results are JSON)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value
