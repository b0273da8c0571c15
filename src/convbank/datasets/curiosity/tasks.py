"""Curiosity tasks of the paper: fact ranking, dialog acts (utterance and policy), likes.

Trained on the official ``train`` split, evaluated on ``test``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from convbank.datasets.curiosity.records import DIALOG_ACTS, fact_texts
from convbank.errors import BenchError
from convbank.model import Conversation
from convbank.tasks import CorpusLike, Example, Figure, Fold, Model, Ranker, Task, TaskData
from convbank.tasks.features import embed, fit_binary, fit_tfidf
from convbank.tasks.metrics import accuracy, micro_prf, mrr, rank_of_first

TEST_SPLIT = "test"
PAPER = "Rodriguez et al. 2020 (EMNLP), Table 4"
"""Where the authors' figures are: the experiments table of the paper (its LaTeX source,
github.com/EntilZha/publications 2020_emnlp_curiosity/commit_auto_fig/experiment-table.tex),
with a validation and a test column for each system."""

_SYSTEMS = ("majority class", "E2E BERT", "CHARM", "CHARM without context")


def _table4(metric: str, values: tuple[tuple[float, float] | None, ...]) -> tuple[Figure, ...]:
    """Table 4's (validation, test) figures of one metric, system by system (None: no cell)."""
    return tuple(
        Figure(system, metric, value, f"{PAPER}, {split}", split)
        for system, pair in zip(_SYSTEMS, values, strict=True)
        if pair is not None
        for split, value in zip(("validation", "test"), pair, strict=True)
    )


def _split(corpus: CorpusLike, split: str) -> list[Conversation]:
    convs = [c for c in corpus if c.split == split]
    if not convs:
        raise BenchError(f"the bank has no curiosity {split} split; build curiosity first", split=split)
    return convs


def _messages(
    convs: list[Conversation],
) -> list[tuple[Conversation, int, dict[str, Any], frozenset[str] | None, bool]]:
    """Every message of the conversations, in order: (conversation, turn index, what came
    before it and what it is, its dialog acts or None, liked)."""
    out = []
    for conv in convs:
        prev, prev_sender = "", "none"
        for t in conv.turns:
            acts = (
                None
                if t.meta.get("dialog_acts", ()) is None
                else frozenset(a.label for a in conv.annotations_of(t.turn_index, "dialog_act"))
            )
            seen = {
                "text": t.text,
                "sender": t.participant_id,
                "previous": prev,
                "previous_sender": prev_sender,
            }
            out.append((conv, t.turn_index, seen, acts, bool(t.meta.get("liked"))))
            prev, prev_sender = t.text, t.participant_id
    return out


class _CuriosityTask(Task):
    """Train on the train split's items, evaluate on the test split's (one fold, ``test``)."""

    dataset = "curiosity"
    models: ClassVar[tuple[str, ...]] = ("majority", "tfidf", "embed")

    def items(self, convs: list[Conversation]) -> list[tuple[Example, Any]]:
        """The task's (example, gold) pairs of these conversations."""
        raise NotImplementedError

    def describe_gold(self, gold: list[Any]) -> dict[str, Any]:
        """Counts of the test split's gold answers for the run's details (none by default)."""
        return {}

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """Train, then test."""
        train = self.items(_split(corpus, "train"))
        test = self.items(_split(corpus, TEST_SPLIT))
        if not train or not test:
            raise BenchError(f"{self.name}: no items in the train or test split", task=self.name)
        pairs = train + test
        fold = Fold(TEST_SPLIT, tuple(range(len(train))), tuple(range(len(train), len(pairs))))
        return TaskData(
            [e for e, _ in pairs],
            [g for _, g in pairs],
            [fold],
            details={
                "train_messages": len(train),
                "test_messages": len(test),
                **self.describe_gold([g for _, g in test]),
            },
        )


def _features(model: str, train_texts: list[str], texts: list[str], senders: list[str]) -> Any:
    from scipy.sparse import csr_matrix, hstack

    side = csr_matrix(np.array([[s == "assistant"] for s in senders], dtype=float))
    if model == "tfidf":
        return hstack([fit_tfidf(train_texts).transform(texts), side]).tocsr()
    return hstack([csr_matrix(embed(texts)), side]).tocsr()


class _ActsTask(_CuriosityTask):
    kind = "labels"
    prediction = "the list of the message's dialog acts (from the dataset's vocabulary)"
    metric = "micro_f1"
    labels = tuple(DIALOG_ACTS)
    policy: ClassVar[bool]
    """Whether the acts of a message are predicted from the message before it."""

    def items(self, convs: list[Conversation]) -> list[tuple[Example, Any]]:
        """Messages with dialog acts; the policy task sees only what came before each."""
        out = []
        for conv, turn, seen, acts, _ in _messages(convs):
            if acts is None:
                continue
            unknown = sorted(acts - set(DIALOG_ACTS))
            if unknown:
                raise BenchError(
                    f"dialog acts outside the dataset's vocabulary: {', '.join(unknown)}; "
                    "run `convbank validate curiosity`",
                    task=self.name,
                )
            inputs = {k: v for k, v in seen.items() if not (self.policy and k == "text")}
            out.append(
                (Example(f"{conv.conversation_id}/{turn}", conv.conversation_id, inputs), sorted(acts))
            )
        return out

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """Micro precision, recall and F1 over (message, act) pairs."""
        rows = [i for f in data.folds for i in f.test]
        prf = micro_prf(
            [set(data.gold[i]) for i in rows], [set(predictions[data.examples[i].id]) for i in rows]
        )
        return {
            "micro_f1": round(prf.f1, 4),
            "precision": round(prf.precision, 4),
            "recall": round(prf.recall, 4),
        }

    def builtin(self, model: str, data: TaskData, seed: int) -> Model:
        """``majority``: the most frequent training act; else one logistic regression per act
        on the text (the previous message's for the policy task) and the sender."""
        return _ActsModel(model, self.policy)


class _ActsModel:
    def __init__(self, model: str, policy: bool) -> None:
        self.model = model
        self.policy = policy
        self.train: list[Example] = []
        self.gold: list[list[str]] = []

    def _view(self, examples: Sequence[Example]) -> tuple[list[str], list[str]]:
        if self.policy:
            return [f"{e['previous_sender']}: {e['previous']}" for e in examples], [
                e["sender"] for e in examples
            ]
        return [e["text"] for e in examples], [e["sender"] for e in examples]

    def fit(self, examples: Sequence[Example], gold: Sequence[list[str]]) -> None:
        self.train, self.gold = list(examples), list(gold)

    def predict(self, examples: Sequence[Example]) -> list[list[str]]:
        counts = Counter(a for acts in self.gold for a in acts)
        if self.model == "majority":
            top = counts.most_common(1)[0][0] if counts else None
            return [[top] if top else [] for _ in examples]
        tr_texts, tr_senders = self._view(self.train)
        te_texts, te_senders = self._view(examples)
        x_all = _features(self.model, tr_texts, tr_texts + te_texts, tr_senders + te_senders)
        x_train, x_test = x_all[: len(self.train)], x_all[len(self.train) :]
        labels = [a for a in DIALOG_ACTS if a in counts]  # the vocabulary's acts seen in training
        columns = [
            fit_binary(x_train, [act in acts for acts in self.gold], balanced=False).decision_function(x_test)
            > 0
            for act in labels
        ]
        if not labels:
            return [[] for _ in examples]
        return [[a for a, on in zip(labels, row, strict=True) if on] for row in zip(*columns, strict=True)]


class CuriosityUtteranceActs(_ActsTask):
    """Dialog acts of each message from its own text.

    An example is one message with dialog acts (``{conversation_id}/{turn_index}``): its
    ``text``, ``sender`` and the message before it (``previous``, ``previous_sender``)."""

    name = "curiosity-utterance-acts"
    description = "Classify the dialog acts of each message (multi-label) from its text and sender."
    protocol = "official splits (train, then test); micro F1 over (message, act) pairs"
    published = _table4("micro_f1", ((0.602, 0.604), (0.794, 0.795), (0.845, 0.847), (0.838, 0.842)))
    policy = False


class CuriosityPolicyActs(_ActsTask):
    """Dialog acts of message t from the messages before it.

    An example is one message with dialog acts, of which the model sees only its ``sender``
    and the message before it (``previous``, ``previous_sender``), not its text."""

    name = "curiosity-policy-acts"
    description = "Predict the dialog acts of the next message from the conversation before it."
    protocol = "official splits (train, then test); micro F1; features only from turns before t"
    published = _table4("micro_f1", ((0.491, 0.494), (0.635, 0.631), (0.682, 0.682), (0.664, 0.664)))
    policy = True


class CuriosityLike(_CuriosityTask):
    """Whether the user liked an assistant message.

    An example is one assistant message: its ``text`` and the user message before it
    (``previous``); a prediction is true (liked) or false."""

    name = "curiosity-like"
    description = "Predict whether the user liked each assistant message."
    protocol = "official splits (train, then test); accuracy over assistant messages"
    kind = "label"
    prediction = "true if the user liked the message, else false"
    metric = "accuracy"
    published = _table4("accuracy", ((0.690, 0.681), (0.829, 0.822), (0.826, 0.815), (0.824, 0.820)))

    def items(self, convs: list[Conversation]) -> list[tuple[Example, Any]]:
        """Assistant messages."""
        return [
            (
                Example(
                    f"{conv.conversation_id}/{turn}",
                    conv.conversation_id,
                    {"text": seen["text"], "previous": seen["previous"]},
                ),
                liked,
            )
            for conv, turn, seen, _, liked in _messages(convs)
            if seen["sender"] == "assistant"
        ]

    def describe_gold(self, gold: list[Any]) -> dict[str, Any]:
        """The rate of liked messages in the test split."""
        return {"liked_rate": round(sum(gold) / len(gold), 4)}

    def check(self, example: Example, prediction: Any) -> str | None:
        """A boolean."""
        return None if isinstance(prediction, bool) else "true or false"

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """Accuracy."""
        rows = [i for f in data.folds for i in f.test]
        gold = [data.gold[i] for i in rows]
        return {"accuracy": round(accuracy(gold, [predictions[data.examples[i].id] for i in rows]), 4)}

    def builtin(self, model: str, data: TaskData, seed: int) -> Model:
        """``majority`` or a logistic regression on the previous and the assistant message."""
        return _LikeModel(model)


class _LikeModel:
    def __init__(self, model: str) -> None:
        self.model = model
        self.train: list[Example] = []
        self.gold: list[bool] = []

    def fit(self, examples: Sequence[Example], gold: Sequence[bool]) -> None:
        self.train, self.gold = list(examples), list(gold)

    def predict(self, examples: Sequence[Example]) -> list[bool]:
        if self.model == "majority":
            return [Counter(self.gold).most_common(1)[0][0]] * len(examples)
        both = [*self.train, *examples]
        texts = [f"{e['previous']} || {e['text']}" for e in both]
        x = _features(self.model, texts[: len(self.train)], texts, ["assistant"] * len(both))
        clf = fit_binary(x[: len(self.train)], self.gold, balanced=False)
        return [bool(p) for p in clf.predict(x[len(self.train) :])]


class CuriosityFactRanking(Task):
    """Rank the facts shown to the assistant so that the one it used comes first.

    An example is one assistant message of the test split that used a fact: the user's
    message before it (``query``) and the texts of the facts shown (``candidates``); a
    prediction is one score per candidate; the gold answer lists the used candidates."""

    name = "curiosity-fact-ranking"
    dataset = "curiosity"
    description = "Rank the facts shown to the assistant by relevance to the user's last message."
    protocol = "test split; assistant messages that used a fact; MRR of the first used fact among those shown"
    kind = "ranking"
    prediction = "one score per shown fact, in the candidates' order (higher ranks first)"
    metric = "mrr"
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed")
    published = (
        Figure(
            "TF-IDF",
            "mrr",
            0.408,
            "the authors' run released with the paper's source (EntilZha/publications, 2020_emnlp_curiosity/"
            "data/experiments/mrr_tfidf_test_metrics.json: 0.4084); its row is not printed in Table 4",
            "test",
        ),
        *_table4("mrr", (None, (0.420, 0.418), (0.546, 0.546), (0.516, 0.506))),
    )

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """The test split's assistant messages that used a shown fact (nothing to train on)."""
        examples, gold = [], []
        for conv in _split(corpus, TEST_SPLIT):
            facts = fact_texts(conv, corpus.side_table)
            if not facts and any(t.meta.get("facts") for t in conv.turns):
                raise BenchError(
                    "curiosity-fact-ranking needs the fact texts: build curiosity with wiki_sql.sqlite.db",
                    task=self.name,
                )
            prev = ""
            for t in conv.turns:
                shown = [f for f in t.meta.get("facts", ()) if f["fid"] in facts]
                if t.participant_id == "assistant" and any(f["used"] for f in shown):
                    examples.append(
                        Example(
                            f"{conv.conversation_id}/{t.turn_index}",
                            conv.conversation_id,
                            {"query": prev, "candidates": [facts[f["fid"]] for f in shown]},
                        )
                    )
                    gold.append([i for i, f in enumerate(shown) if f["used"]])
                prev = t.text if t.participant_id == "user" else prev
        if not examples:
            raise BenchError(
                "no assistant message with a used fact in the test split", task=self.name, split=TEST_SPLIT
            )
        return TaskData(
            examples,
            gold,
            [Fold(TEST_SPLIT, (), tuple(range(len(examples))))],
            details={
                "assistant_messages": len(examples),
                "mean_candidates": round(float(np.mean([len(e["candidates"]) for e in examples])), 2),
            },
        )

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """MRR of the best-ranked used fact (ties with an unused fact pessimistic)."""
        ranks = [
            rank_of_first(list(predictions[data.examples[i].id]), set(data.gold[i]))
            for f in data.folds
            for i in f.test
        ]
        return {"mrr": round(mrr(ranks), 4)}

    def builtin(self, model: str, data: TaskData, seed: int) -> Ranker:
        """``random``, or the ``tfidf`` (fitted on every fact and query) or ``embed``
        similarity of each fact to the query."""
        return _FactModel(model, seed)


class _FactModel:
    def __init__(self, model: str, seed: int) -> None:
        self.model = model
        self.rng = np.random.default_rng(seed)
        self.vectoriser: Any = None

    def setup(self, examples: Sequence[Example]) -> None:
        if self.model == "tfidf":
            texts = [c for e in examples for c in e["candidates"]] + [e["query"] for e in examples]
            self.vectoriser = fit_tfidf(texts, ngram_range=(1, 1))

    def rank(self, examples: Sequence[Example]) -> list[list[float]]:
        out = []
        for e in examples:
            if self.model == "random":
                out.append(self.rng.random(len(e["candidates"])).tolist())
            elif self.model == "tfidf":
                m = self.vectoriser.transform([e["query"], *e["candidates"]])
                out.append((m[1:] @ m[0].T).toarray().ravel().tolist())
            else:
                v = embed([e["query"], *e["candidates"]])
                out.append((v[1:] @ v[0]).tolist())
        return out
