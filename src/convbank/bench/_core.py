"""The runner: any model on a task's folds, scored by the task's own metric.

``run("casino-strategy", model="tfidf")`` runs a built-in model; ``run(task, model=obj)`` runs
any object with ``predict`` (or ``rank``) and, if it learns, ``fit``; ``score(task,
predictions)`` scores a file or mapping of ``{example_id: prediction}``. All three go through
one path: the model's predictions, checked, then :meth:`Task.score`.
"""

from __future__ import annotations

import importlib
import math
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from convbank._forksafe import this_process_only
from convbank._wording import article
from convbank.bench._guarded import answers_of, call, method_of, plain, what
from convbank.bench._kept import kept
from convbank.bench._repeats import ids_text
from convbank.errors import BenchError, ConvbankError, did_you_mean, require
from convbank.query import Corpus
from convbank.tasks import Model, Ranker, Task, TaskData, data_kind
from convbank.tasks.progress import progress

__all__ = ["Interrupted", "Result", "finite_metrics", "load_model", "predict", "run", "score", "task_named"]

T = TypeVar("T")


@dataclass
class Result:
    """One run of one task with one model (or one scored predictions file)."""

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
    predictions: dict[str, Any] = field(default_factory=dict, repr=False)
    """``{example_id: prediction}`` of every test example (what ``--write-predictions`` saves)."""
    folds_done: list[str] | None = None
    """None for a whole run; for a partial one (stopped by Ctrl-C), the folds it scored: its
    metrics are those folds' only, not the protocol's figure, and it cannot be saved."""
    folds: int = 0
    """How many folds the protocol has (with :attr:`folds_done`, how far a partial run got)."""
    notes: list[str] = field(default_factory=list)
    """What the metrics do not say themselves: a metric that was not a finite number (an
    overflow) and is reported as null (:func:`finite_metrics`)."""

    @property
    def partial(self) -> bool:
        """Whether this is a partial run: some folds only (see :attr:`folds_done`)."""
        return self.folds_done is not None

    def to_dict(self) -> dict[str, Any]:
        """``{"task", "model", "metrics", "reference", "seconds", ...}`` (no predictions); a
        partial run adds ``"partial": {"folds_done": [...], "folds": 5}``."""
        marked = {"partial": {"folds_done": self.folds_done, "folds": self.folds}} if self.partial else {}
        return {
            **marked,
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
            **({"notes": self.notes} if self.notes else {}),
            **self.details,
        }


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (a :class:`KeyboardInterrupt`) during a run's folds: ``result`` is the partial
    :class:`Result` of the folds finished before it (None when none was), ``predictions``
    and ``folds_done`` what it holds. Catch it as ``KeyboardInterrupt`` to stop as usual::

        try:
            result = run("casino-strategy", model="finetune")
        except Interrupted as stop:
            result = stop.result  # result.partial: metrics of result.folds_done only
    """

    def __init__(
        self,
        predictions: dict[str, Any],
        folds_done: list[str],
        result: Result | None = None,
        signum: int = signal.SIGINT,
    ):
        super().__init__(f"interrupted after {len(folds_done)} folds")
        self.predictions = predictions
        self.folds_done = folds_done
        self.result = result
        self.signum = signum
        """The signal that stopped the run: SIGINT (Ctrl-C), or SIGTERM or SIGHUP
        (:class:`convbank.cli._signals.Terminated`), for its line and exit code."""


def task_named(name: str | Task) -> Task:
    """A task by name (or the task itself)."""
    if isinstance(name, Task):
        return name
    from convbank import registry

    return registry.tasks.get(name)


def load_model(spec: str) -> Any:
    """A model from ``module:Class`` (or ``module:factory``): the class is called with no
    arguments. The module is imported as Python imports any (the current folder is on
    the path for the command line).

    >>> from pathlib import Path
    >>> _ = Path("my_models.py").write_text(
    ...     "class Silent:\\n    def predict(self, examples):\\n        return [[] for _ in examples]\\n"
    ... )
    >>> import sys; sys.path.insert(0, "")  # the current folder, as the command line has it
    >>> load_model("my_models:Silent")
    <my_models.Silent object at 0x...>
    """
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise BenchError(
            f"--model {spec!r}: a built-in model's name, or module:Class for your own", model=spec
        )
    try:  # whatever the module raises at import (sys.exit() too) is one line, as in predict()
        with this_process_only(), kept():  # a process it forks never goes on; prints to stderr
            module = importlib.import_module(module_name)
    except (ConvbankError, KeyboardInterrupt):
        raise
    except BaseException as exc:
        why = str(exc) if isinstance(exc, ImportError) else what(exc)
        raise BenchError(f"--model {spec!r}: cannot import {module_name!r} ({why})", model=spec) from exc
    try:
        factory = getattr(module, attribute)
    except AttributeError:
        raise BenchError(f"--model {spec!r}: {module_name} has no {attribute!r}", model=spec) from None
    try:
        with this_process_only(), kept():
            return factory()
    except (ConvbankError, KeyboardInterrupt):
        raise
    except BaseException as exc:
        raise BenchError(f"--model {spec!r}: {attribute}() failed: {what(exc)}", model=spec) from exc


def predict(task: Task, data: TaskData, model: Model | Ranker, *, label: str = "") -> dict[str, Any]:
    """Run ``model`` on every fold of ``data``: ``setup`` once with every example (if it has
    one), then per fold ``fit`` on the training examples and their gold (if it learns) and
    ``predict`` (``rank`` for a ranking task) on the test examples. Returns ``{example_id:
    prediction}``, each checked against the task's form. Each call is given copies of the
    examples and gold answers (:func:`_given`), so that what a model does to them (an
    example's ``inputs`` cleared, its ``config`` changed, its ``id`` set) never reaches the
    scoring, which reads ``data`` as the task made it."""
    method = "rank" if task.kind == "ranking" else "predict"
    name = label or type(model).__name__
    if method_of(task.name, name, "", model, method) is None:
        raise BenchError(
            f"{task.name} is {article(task.kind)} task: the model needs {article(method)}(examples) method",
            task=task.name,
        )
    if method_of(task.name, name, "", model, "setup") is not None:
        call(task.name, name, "", model, "setup", _given(data.examples))
    out: dict[str, Any] = {}
    done: list[str] = []
    try:
        for fold in progress(data.folds, f"{name}: folds"):
            if method_of(task.name, name, fold.name, model, "fit") is not None:
                train = _given([data.examples[i] for i in fold.train])
                call(
                    task.name,
                    name,
                    fold.name,
                    model,
                    "fit",
                    train,
                    _given([data.gold[i] for i in fold.train]),
                )
            ids = [data.examples[i].id for i in fold.test]
            returned = call(
                task.name, name, fold.name, model, method, _given([data.examples[i] for i in fold.test])
            )
            answers = answers_of(task.name, name, fold.name, method, returned, ids=ids)
            out.update(zip(ids, answers, strict=True))
            done.append(fold.name)
    except KeyboardInterrupt as exc:  # Ctrl-C: the folds finished so far, for a partial result
        if isinstance(exc, Interrupted):
            raise
        kept = {data.examples[i].id for f in data.folds if f.name in done for i in f.test}
        signum = getattr(exc, "signum", signal.SIGINT)  # SIGTERM and SIGHUP are said as themselves
        raise Interrupted({k: v for k, v in out.items() if k in kept}, done, signum=signum) from None
    _check(task, data, out, "the model")
    return out


def _given(values: list[T]) -> list[T]:
    """A deep copy of ``values`` (examples, gold answers) for a model's call: the model may
    do what it likes with it, the task's own objects stay as they were."""
    import copy

    return copy.deepcopy(values)


def score(
    task: str | Task,
    predictions: Mapping[str, Any] | str | Path,
    *,
    config: str | None = None,
    seed: int = 0,
    model: str = "predictions",
    load: Callable[..., Corpus] | None = None,
) -> Result:
    """Score predictions with the task's own metric: a mapping ``{example_id: prediction}``
    or a JSONL or Parquet file of ``{example_id, prediction}`` rows covering every test
    example of every fold (as ``convbank bench TASK --export`` lists them). A file with
    missing, extra, duplicate or malformed entries is a :class:`BenchError` naming the first
    few and their count, never a partial score.

    >>> from pathlib import Path
    >>> from convbank.bench import write_predictions
    >>> data = task_named("casino-strategy").data(convbank.load("casino"))
    >>> gold = {e.id: g for e, g in zip(data.examples, data.gold)}
    >>> path = write_predictions(Path("predictions.jsonl"), {i: gold[i] for i in data.test_ids()})
    >>> score("casino-strategy", path).metrics["mean_f1"]  # the gold itself scores 1
    1.0
    """
    chosen = task_named(task)
    _check_seed(chosen.name, seed)
    corpus = _corpus(chosen, config, load)
    start = time.perf_counter()
    data = _data(chosen, corpus, seed)
    if not isinstance(predictions, Mapping):
        from convbank.bench.files import read_predictions

        predictions = read_predictions(Path(predictions), examples=len(data.test_ids()))
    keys = ids_text("the predictions", predictions, task=chosen.name)  # null is no id, never 'None'
    table = {k: plain(v) for k, v in zip(keys, predictions.values(), strict=True)}
    _check(chosen, data, table, "the predictions")
    return _result(
        chosen,
        corpus=corpus,
        data=data,
        predictions=table,
        model=model,
        seed=seed,
        seconds=time.perf_counter() - start,
    )


def run(
    name: str | Task,
    model: str | Model | Ranker | None = None,
    config: str | None = None,
    seed: int = 0,
    *,
    load: Callable[..., Corpus] | None = None,
) -> Result:
    """Run a task with a built-in model (by name; the task's strongest by default), a model
    from ``module:Class``, or any model object (see :class:`convbank.tasks.Model`), on every
    fold of the task's protocol. Ctrl-C raises :class:`Interrupted`, a
    :class:`KeyboardInterrupt` holding the partial result of the folds done.

    >>> run("casino-strategy", model="tfidf").metrics["mean_f1"]
    0.5695
    >>> class Silent:  # any object with predict (and fit, if it learns)
    ...     def predict(self, examples):
    ...         return [[] for _ in examples]
    >>> run("casino-strategy", model=Silent()).metrics["mean_f1"]
    0.0
    """
    task = task_named(name)
    _check_seed(task.name, seed)
    builtin = model is None or (isinstance(model, str) and ":" not in model)
    label = (model or task.models[-1]) if isinstance(model, str) or model is None else type(model).__name__
    if builtin and label not in task.models:
        raise BenchError(
            f"{task.name} has no model {label!r}; {did_you_mean(label, task.models)}"
            f"one of {', '.join(task.models)}, or module:Class",
            task=task.name,
            model=label,
        )
    if builtin:
        for module in ("sklearn", "scipy"):  # the built-in models' features and metrics
            require(module, "bench", "Running a benchmark task")
    corpus = _corpus(task, config, load)
    start = time.perf_counter()
    data = _data(task, corpus, seed)
    if builtin:
        instance: Model | Ranker = task.builtin(label, data, seed)
    elif isinstance(model, str):
        instance = load_model(model)
    else:
        instance = model  # type: ignore[assignment]
    try:
        predictions = predict(task, data, instance, label=label)
    except Interrupted as stop:
        if stop.folds_done:  # scored on the folds done, marked partial
            part = replace(data, folds=[f for f in data.folds if f.name in stop.folds_done])
            partial = _result(
                task,
                corpus=corpus,
                data=part,
                predictions=stop.predictions,
                model=label,
                seed=seed,
                seconds=time.perf_counter() - start,
            )
            partial.folds_done, partial.folds = list(stop.folds_done), len(data.folds)
            stop.result = partial
        raise
    return _result(
        task,
        corpus=corpus,
        data=data,
        predictions=predictions,
        model=label,
        seed=seed,
        seconds=time.perf_counter() - start,
    )


def _data(task: Task, corpus: Corpus, seed: int) -> TaskData:
    """The task's data for ``corpus``; an example id that is not text (a task's own, None)
    is refused in one line (:func:`ids_text`), never scored as the text ``'None'``."""
    data = task.data(corpus, seed)
    ids_text(f"{task.name}'s examples", (e.id for e in data.examples), task=task.name)
    return data


def _check_seed(task: str, seed: object) -> None:
    """A seed is a whole number from 0 (what numpy's generators take): anything else is a
    :class:`BenchError`, before any work."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise BenchError(f"{task}: the seed is a whole number from 0, not {seed!r}", task=task)


def _corpus(task: Task, config: str | None, load: Callable[..., Corpus] | None) -> Corpus:
    from convbank.query import load as default_load

    return (load or default_load)(task.dataset, config)


def _result(
    task: Task,
    *,
    corpus: Corpus,
    data: TaskData,
    predictions: dict[str, Any],
    model: str,
    seed: int,
    seconds: float,
) -> Result:
    with np.errstate(all="ignore"):  # an overflow is a metric of null, with a note
        metrics, notes = finite_metrics(plain(task.score(data, predictions)))
    used = sorted({c for c, _ in corpus.parts()})
    return Result(
        task=task.name,
        model=model,
        dataset=task.dataset,
        config=",".join(used),
        data=data_kind(corpus),
        seed=seed,
        metrics=metrics,
        reference=task.reference,
        protocol=task.protocol,
        seconds=seconds,
        details=plain(data.details),
        predictions=predictions,
        notes=notes,
    )


def finite_metrics(metrics: dict[str, Any], prefix: str = "metrics") -> tuple[dict[str, Any], list[str]]:
    """``metrics`` with every number that is not finite (NaN, an overflow to ``Infinity``)
    replaced by None, and a note for each: what :func:`save` writes and a run reports.

    >>> finite_metrics({"spearman": 0.3, "mae": float("inf")})
    ({'spearman': 0.3, 'mae': None},
     ['metrics.mae was inf (not a finite number): reported and saved as null'])
    """
    clean: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in metrics.items():
        where = f"{prefix}.{key}"
        if isinstance(value, dict):
            clean[key], more = finite_metrics(value, where)
            notes += more
        elif isinstance(value, float) and not math.isfinite(value):
            clean[key] = None
            notes.append(f"{where} was {value} (not a finite number): reported and saved as null")
        else:
            clean[key] = value
    return clean, notes


def _check(task: Task, data: TaskData, predictions: Mapping[str, Any], what: str) -> None:
    """Every test example once, nothing else, each prediction of the task's form; else one
    line naming the first few problems of each kind and their count."""
    expected = data.test_ids()
    wanted = set(expected)
    missing = [i for i in expected if i not in predictions]
    extra = [i for i in predictions if i not in wanted]
    by_id = {data.examples[i].id: data.examples[i] for f in data.folds for i in f.test}
    bad: list[str] = []
    form = ""
    for example_id, value in predictions.items():
        example = by_id.get(example_id)
        if example is not None:
            problem = task.check(example, value)
            if problem:
                bad.append(example_id)
                form = form or problem
    problems = []
    if missing:
        problems.append(f"{len(missing):,} example(s) missing ({_first(missing)})")
    if extra:
        problems.append(f"{len(extra):,} unknown example id(s) ({_first(extra)})")
    if bad:
        problems.append(f"{len(bad):,} malformed prediction(s) ({_first(bad)}: expected {form})")
    if problems:
        raise BenchError(f"{task.name}: {what} cannot be scored: {'; '.join(problems)}", task=task.name)


def _first(ids: Sequence[str], n: int = 3) -> str:
    return ", ".join(repr(i) for i in ids[:n]) + (", ..." if len(ids) > n else "")
