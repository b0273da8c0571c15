"""What a benchmark task is, below the datasets: its examples, folds and scorer, and the small
protocol any model implements to run on it (after lm-evaluation-harness and MTEB: a task
registry and a model interface, so every model runs on every task with the task's protocol).

A task turns a corpus into :class:`TaskData`: the examples a model sees (an id, the group
that folds keep together, the inputs), their gold answers kept apart, and the folds (the
paper's cross-validation, or its official train and test splits). A model is any object with
``predict(examples)`` (``rank(examples)`` for ranking tasks) and, if it learns, ``fit(examples,
gold)``; the runner (:mod:`convbank.bench`) calls them fold by fold and scores what comes back
with the task's own metric.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np

from convbank.errors import BenchError
from convbank.model import Conversation, Part

if TYPE_CHECKING:
    import pyarrow as pa

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

NOT_FOUND = "not found"

Kind = Literal["labels", "label", "score", "ranking", "spans"]
"""What a prediction is: a list of labels (multi-label), one label (a string or a boolean), a
number, a score per candidate, or a list of spans."""


class CorpusLike(Protocol):
    """What a task reads of a corpus (:class:`convbank.Corpus` is one)."""

    @property
    def dataset(self) -> Any:
        """The dataset (its ``name``, ``published_count`` and ``count_problem``)."""

    def __iter__(self) -> Iterator[Conversation]: ...

    def __len__(self) -> int: ...

    def parts(self) -> list[Part]:
        """The (config, split) parts it covers."""

    def stored_count(self, config: str, split: str) -> int:
        """How many conversations the bank holds for a part."""

    def side_table(
        self, table: str, *, columns: list[str] | None = None, filters: Any = None
    ) -> pa.Table | None:
        """Rows of one of the dataset's side tables."""


@dataclass(frozen=True)
class Figure:
    """A reference figure: a system's value of a metric and where it comes from. A figure
    of the dataset's authors whose value could not be found has ``value`` None and says so
    in ``source``; nothing fills the cell in its place. ``split`` names the evaluation split
    where the source gives several (Curiosity's validation and test columns)."""

    system: str
    metric: str
    value: float | None
    source: str
    split: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"system", "metric", "value", "source", "split"}``."""
        return {
            "system": self.system,
            "metric": self.metric,
            "value": self.value,
            "source": self.source,
            "split": self.split,
        }


def references(published: tuple[Figure, ...], measured: tuple[Figure, ...]) -> dict[str, Any]:
    """The reference block of a task: the authors' figures, then those measured here."""
    return {
        "published": [f.to_dict() for f in published],
        "measured_here": [f.to_dict() for f in measured],
    }


@dataclass(frozen=True)
class Example:
    """What a model sees of one item: a stable ``id``, the ``group`` that folds keep together
    (a dialogue) and the ``inputs`` the protocol gives (``example["text"]`` reads one). The
    gold answer is not here: :class:`TaskData` keeps it apart, and a model gets it only in
    ``fit``."""

    id: str
    group: str
    inputs: Mapping[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.inputs[key]

    def to_dict(self) -> dict[str, Any]:
        """``{"example_id", "group", **inputs}``: one line of an exported inputs file."""
        return {"example_id": self.id, "group": self.group, **self.inputs}


@dataclass(frozen=True)
class Fold:
    """One round of the protocol: a name (``fold1``.. ``fold5`` of a cross-validation, or the
    test split's name) and the positions of its train and test examples."""

    name: str
    train: tuple[int, ...]
    test: tuple[int, ...]


@dataclass
class TaskData:
    """A task's examples, their gold answers (same order) and its folds, for one corpus."""

    examples: list[Example]
    gold: list[Any]
    folds: list[Fold]
    details: dict[str, Any] = field(default_factory=dict)
    """Counts that describe the data (dialogues, items, label frequencies)."""
    context: dict[str, Any] = field(default_factory=dict)
    """Anything the task's own models share across folds (not inputs, never gold)."""

    def fold(self, name: str) -> Fold:
        """The fold of this name (:class:`KeyError` listing the names if there is none)."""
        for f in self.folds:
            if f.name == name:
                return f
        raise KeyError(f"no fold {name!r}; the folds are {', '.join(f.name for f in self.folds)}")

    def test_ids(self) -> list[str]:
        """The ids a predictions file must hold: every test example of every fold, once."""
        return [self.examples[i].id for f in self.folds for i in f.test]


@runtime_checkable
class Model(Protocol):
    """A model for a task whose predictions are labels, numbers or spans: ``predict`` returns
    one prediction per example, in order (see :attr:`Task.prediction`). A model that learns
    also has ``fit(examples, gold)``, called with each fold's training examples before
    ``predict`` sees its test examples; one that needs every input first (to embed all texts
    once, say) may have ``setup(examples)``, called once with every example, without gold.

    >>> class Majority:
    ...     def fit(self, examples, gold):
    ...         self.top = max(set(gold), key=gold.count)
    ...     def predict(self, examples):
    ...         return [self.top] * len(examples)
    >>> isinstance(Majority(), Model)
    True
    """

    def predict(self, examples: Sequence[Example]) -> Sequence[Any]:
        """One prediction per example, in the examples' order."""
        ...


@runtime_checkable
class Ranker(Protocol):
    """A model for a ranking task: ``rank`` returns, per example, one score per candidate
    (``example["candidates"]``, same order; higher is better). ``fit`` and ``setup`` as for
    :class:`Model`."""

    def rank(self, examples: Sequence[Example]) -> Sequence[Sequence[float]]:
        """Per example, one score per candidate, in the candidates' order (higher is better)."""
        ...


class Task(ABC):
    """A benchmark task defined by a dataset's paper: its examples and folds (:meth:`data`),
    the form of a prediction (:attr:`kind`, :attr:`prediction`), its scorer (:meth:`score`),
    its built-in models (:meth:`builtin`) and the reference figures. Tasks live in their
    dataset's package and are found through :meth:`Presentation.tasks`
    (:data:`convbank.registry.tasks`)."""

    name: ClassVar[str]
    dataset: ClassVar[str]
    description: ClassVar[str]
    protocol: ClassVar[str]
    kind: ClassVar[Kind]
    prediction: ClassVar[str]
    """What one prediction is, in words (the predictions file's ``prediction`` field)."""
    metric: ClassVar[str]
    """The headline metric (a key of the metrics), which the leaderboard ranks by."""
    models: ClassVar[tuple[str, ...]]
    """Built-in models: baselines first (the first is the fastest), strongest last (the default)."""
    published: ClassVar[tuple[Figure, ...]]
    """The dataset authors' own figures for this task, each with its source (paper and
    table); a figure that could not be found has value None and source "not found"."""
    measured: ClassVar[tuple[Figure, ...]] = ()
    """Figures measured by this project with this protocol on the real data."""
    labels: ClassVar[tuple[str, ...]] = ()
    """The label vocabulary of a ``labels`` or ``spans`` task (what a prediction may hold)."""
    cpu_seconds: ClassVar[Mapping[str, float]] = {}
    """CPU seconds (user and system) a whole run of a built-in model took here on the real
    data, where measured: what :meth:`time_note` says up front."""

    @property
    def reference(self) -> dict[str, Any]:
        """The authors' figures and those measured here, apart."""
        return references(self.published, self.measured)

    @abstractmethod
    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """The examples, gold answers and folds of this task on ``corpus`` (``seed`` draws
        the cross-validation folds and any sampled negatives)."""

    @abstractmethod
    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """The task's metrics of ``predictions`` (``{example_id: prediction}``, every test
        example of every fold), aggregated over the folds as the protocol says."""

    @abstractmethod
    def builtin(self, model: str, data: TaskData, seed: int) -> Model | Ranker:
        """A built-in model by name (one of :attr:`models`), ready for the folds of ``data``."""

    def examples(
        self, corpus: CorpusLike, fold: str | None = None, *, part: str = "test", seed: int = 0
    ) -> list[Example]:
        """What a model sees: the ``test`` (or ``train``) examples of one fold, or every
        example when ``fold`` is None.

        >>> from convbank.bench import task_named
        >>> task = task_named("casino-strategy")
        >>> task.examples(convbank.load("casino"), "fold1")[0]["text"]
        "Hello, I'd like to get all of the water, an extra firewood and 2 of the food"
        """
        data = self.data(corpus, seed)
        if fold is None:
            return list(data.examples)
        if part not in ("train", "test"):
            raise ValueError(f"part is train or test, not {part!r}")
        chosen = data.fold(fold)
        return [data.examples[i] for i in (chosen.train if part == "train" else chosen.test)]

    def check(self, example: Example, prediction: Any) -> str | None:
        """Why ``prediction`` is not a valid prediction for ``example`` (None if it is): the
        form :attr:`kind` says, labels from :attr:`labels`."""
        return _CHECKS[self.kind](self, example, prediction)

    def time_note(self, model: str) -> str | None:
        """One line saying how long a built-in model measured at a minute or more takes and
        which measured models are quicker (None for a quicker or unmeasured one): what
        ``convbank bench`` prints on stderr before it starts.

        >>> from convbank.bench import task_named
        >>> task_named("casino-strategy").time_note("tfidf") is None
        True
        """
        cpu = self.cpu_seconds.get(model)
        if cpu is None or cpu < 60:
            return None
        quicker = [m for m in self.models[1:] if self.cpu_seconds.get(m, cpu) < cpu]
        which = "its default model" if model == self.models[-1] else "the model"
        return (
            f"{self.name}: {which} {model} takes about {_duration(cpu)} of CPU on the real data "
            "(measured here; longer on a loaded machine)"
            + "".join(
                f"{'; quicker: ' if i == 0 else ', '}--model {m} ({_duration(self.cpu_seconds[m])})"
                for i, m in enumerate(quicker)
            )
            + "; Ctrl-C stops it with the folds done so far"
        )

    def describe(self) -> dict[str, Any]:
        """The task as JSON-ready data."""
        return {
            "task": self.name,
            "dataset": self.dataset,
            "description": self.description,
            "protocol": self.protocol,
            "kind": self.kind,
            "prediction": self.prediction,
            "metric": self.metric,
            "labels": list(self.labels),
            "models": list(self.models),
            "default_model": self.models[-1],
            "reference": self.reference,
        }


def _duration(seconds: float) -> str:
    """``4 s``, ``26 minutes``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} minutes"


def _labels(task: Task, example: Example, prediction: Any) -> str | None:
    if not isinstance(prediction, list) or not all(isinstance(x, str) for x in prediction):
        return "a list of labels"
    unknown = [x for x in prediction if task.labels and x not in task.labels]
    return f"labels among {', '.join(task.labels)} ({_cut(unknown[0])} is not)" if unknown else None


def _cut(label: str, most: int = 80) -> str:
    """``label``'s repr cut to ``most`` characters for an error line (a 10 MB label stays a
    line), made of its first ``most`` characters only: a check of every prediction stays
    quick (before: the whole repr of a 10 MB label for each of 4,615 predictions, 100 s)."""
    text = repr(label[:most])
    return text if len(label) <= most else f"{text[:most]}… ({len(label):,} characters)"


def _label(task: Task, example: Example, prediction: Any) -> str | None:
    return None if isinstance(prediction, (str, bool)) else "a label (a string or a boolean)"


def _number(value: Any) -> bool:
    """A finite int or float (an int too large for a float, such as ``10**400``, is not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _score(task: Task, example: Example, prediction: Any) -> str | None:
    return None if _number(prediction) else "a finite number"


def _ranking(task: Task, example: Example, prediction: Any) -> str | None:
    n = len(example.inputs.get("candidates", ()))
    ok = isinstance(prediction, list) and len(prediction) == n and all(_number(x) for x in prediction)
    return None if ok else f"a list of {n} finite scores, one per candidate"


def _offset(value: Any) -> bool:
    """A character offset: an int, never a boolean (``true`` would be taken as 1)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _spans(task: Task, example: Example, prediction: Any) -> str | None:
    def span(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and _offset(value.get("start"))
            and _offset(value.get("end"))
            and value.get("type") in task.labels
        )

    if isinstance(prediction, list) and all(span(x) for x in prediction):
        return None
    return (
        f"a list of spans {{start, end, type}}: whole-number offsets, a type among {', '.join(task.labels)}"
    )


_CHECKS = {"labels": _labels, "label": _label, "score": _score, "ranking": _ranking, "spans": _spans}


def folds(groups: Sequence[str], k: int, seed: int) -> list[np.ndarray]:
    """Test-item indices of ``k`` folds that keep each group (dialogue) in one fold; fewer
    folds when there are fewer than ``k`` groups (fixture data)."""
    unique = sorted(set(groups))
    if len(unique) < 2:
        raise BenchError(f"{len(unique)} dialogue(s) cannot be cross-validated; at least 2 are needed")
    k = min(k, len(unique))
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[i]: n % k for n, i in enumerate(order)}
    return [np.array([i for i, g in enumerate(groups) if fold_of[g] == f]) for f in range(k)]


def cross_validation(groups: Sequence[str], k: int, seed: int) -> list[Fold]:
    """The :class:`Fold` list of a ``k``-fold cross-validation by group (:func:`folds`),
    named ``fold1`` to ``foldk``."""
    everything = np.arange(len(groups))
    return [
        Fold(f"fold{n + 1}", tuple(np.setdiff1d(everything, test).tolist()), tuple(test.tolist()))
        for n, test in enumerate(folds(groups, k, seed))
    ]


def too_small(corpus: CorpusLike, have: int, what: str, need: int, protocol: str) -> BenchError:
    """The one-line error of a task whose data is too small for its protocol; it says when
    the bank holds an excerpt (splits smaller than the publisher's)."""
    message = f"{have} {what}; {protocol} needs at least {need}"
    short = [problem for _, problem in _counts(corpus) if problem]
    if short:
        message += f" (the bank holds an excerpt of {corpus.dataset.name}: {', '.join(short)})"
    return BenchError(message)


def data_kind(corpus: CorpusLike) -> str:
    """``real`` when every (config, split) has its published number of conversations."""
    real = all(published is not None and problem is None for published, problem in _counts(corpus))
    return "real" if real else "fixture"


def _counts(corpus: CorpusLike) -> list[tuple[int | None, str | None]]:
    """Per part of the corpus: the published count and how the bank's differs from it."""
    ds = corpus.dataset
    return [
        (
            ds.published_count(part),
            ds.count_problem(part, corpus.stored_count(*part)),
        )
        for part in corpus.parts()
    ]
