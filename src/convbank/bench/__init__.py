"""Benchmark runs: any model on the tasks of the datasets' papers, scored by each task's own
metric, with the published figures beside it.

``run("casino-strategy")`` runs the task's strongest built-in model; ``run(task, model=obj)``
runs any object with ``predict`` (``rank`` for ranking tasks) and, if it learns, ``fit``;
``score(task, "predictions.jsonl")`` scores a file of ``{example_id, prediction}``. Each returns
a :class:`Result`. :func:`export_task` writes a task's examples and gold answers per fold;
:func:`save` and :func:`leaderboard` keep runs and compare them. The tasks themselves, the
model protocol and the metrics are in :mod:`convbank.tasks`, below the datasets; ``TASKS`` is
the registry of tasks. Built-in baselines need the ``bench`` extra (scikit-learn); the
sentence-embedding models the ``embed`` extra.
"""

from convbank.bench._core import Interrupted, Result, load_model, predict, run, score, task_named
from convbank.bench.files import export_task, read_predictions, write_predictions
from convbank.bench.results import leaderboard, save
from convbank.errors import BenchError
from convbank.registry import tasks as TASKS  # noqa: N812 - the registry, by its old name
from convbank.tasks import NOT_FOUND, Example, Figure, Model, Ranker, Task, TaskData

__all__ = [
    "NOT_FOUND",
    "TASKS",
    "BenchError",
    "Example",
    "Figure",
    "Interrupted",
    "Model",
    "Ranker",
    "Result",
    "Task",
    "TaskData",
    "export_task",
    "leaderboard",
    "load_model",
    "predict",
    "read_predictions",
    "run",
    "save",
    "score",
    "task_named",
    "write_predictions",
]
