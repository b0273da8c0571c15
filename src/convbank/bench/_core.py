"""Tasks, results and the runner: ``run("casino-strategy", model="embed")``."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from convbank.errors import ConvbankError, UnknownDatasetError
from convbank.query import Corpus

__all__ = ["TASKS", "BenchError", "Result", "Task", "data_kind", "folds", "register", "run"]


class BenchError(ConvbankError):
    """A benchmark cannot run as asked (unknown model, too little data, missing table)."""

    exit_code = 2


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
    """A benchmark task defined by a dataset's paper: data, protocol, metric, references."""

    name: ClassVar[str]
    dataset: ClassVar[str]
    description: ClassVar[str]
    protocol: ClassVar[str]
    models: ClassVar[tuple[str, ...]]
    """Baselines first, strongest last (the default)."""
    reference: ClassVar[dict[str, Any]]
    """Published figures for the same metric, by system; empty when none are published."""

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


TASKS: dict[str, Task] = {}


def register(cls: type[Task]) -> type[Task]:
    """Class decorator adding a task to :data:`TASKS`."""
    TASKS[cls.name] = cls()
    return cls


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


def data_kind(corpus: Corpus) -> str:
    """``real`` when every (config, split) has its published number of conversations."""
    for config, split in corpus.parts():
        expected = corpus.dataset.config(config).splits.get(split)
        if (
            expected is None
            or corpus.snapshot.split_info(corpus.dataset.name, config, split)["conversations"] != expected
        ):
            return "fixture"
    return "real"


def run(
    name: str,
    model: str | None = None,
    config: str | None = None,
    seed: int = 0,
    *,
    load: Callable[..., Corpus] | None = None,
) -> Result:
    """Run one task; ``model`` defaults to the task's strongest."""
    from convbank.query import load as default_load

    try:
        task = TASKS[name]
    except KeyError:
        raise UnknownDatasetError(f"unknown task {name!r}; known tasks: {', '.join(TASKS)}") from None
    model = model or task.models[-1]
    if model not in task.models:
        raise BenchError(f"{name} has no model {model!r}; one of {', '.join(task.models)}")
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
