"""casino-strategy: the negotiation strategies of the CaSiNo paper, per utterance."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from convbank.datasets.casino.records import STRATEGIES
from convbank.errors import require
from convbank.tasks import (
    NOT_FOUND,
    CorpusLike,
    Example,
    Figure,
    Model,
    Task,
    TaskData,
    cross_validation,
    too_small,
)
from convbank.tasks.features import embed, fit_binary, fit_tfidf
from convbank.tasks.metrics import binary_f1, mean

LABELS = STRATEGIES[:7]
"""The seven strategies of the paper's classification experiments."""
AUXILIARY = STRATEGIES[7:]
"""The annotation's other labels: extra training targets for the fine-tuned model only."""
TUNED_WEIGHT = 0.5
"""The fine-tuned encoder's share of the ``finetune`` model's probabilities."""


@dataclass(frozen=True)
class Utterance:
    """One annotated message with what came before it."""

    dialogue: str
    turn_index: int
    text: str
    previous: str
    labels: frozenset[str]
    position: float


def utterances(corpus: CorpusLike) -> list[Utterance]:
    """The annotated messages of the annotated dialogues, in order."""
    items = []
    for conv in corpus:
        messages = [t for t in conv.turns if t.kind == "message"]
        if not any("strategy_slots" in t.meta for t in messages):
            continue
        previous = ""
        for n, t in enumerate(messages):
            if "strategy_slots" in t.meta:
                labels = frozenset(a.label for a in conv.annotations_of(t.turn_index, "strategy"))
                items.append(
                    Utterance(
                        conv.conversation_id,
                        t.turn_index,
                        t.text,
                        previous,
                        labels,
                        n / max(len(messages) - 1, 1),
                    )
                )
            previous = t.text
    return items


_ITEM = re.compile(
    r"\b(?:foods?|waters?|firewoods?|woods?|fire|h2o|drinks?|snacks?|meals?|logs?)\b", re.IGNORECASE
)
_QUANTITY = re.compile(r"\b(?:\d+|one|two|three|zero|all|none)\b", re.IGNORECASE)
_CUES = frozenset(
    ("not", "no", "never", "nothing", "plenty", "enough", "extra", "already", "less", "fine", "ok", "okay")
)
_NEGATION_SCOPE = 4


def negation_marked(text: str) -> str:
    """``text`` lowercased, with the package names and quantities abstracted (``item``,
    ``num``) and the four words after a negation or sufficiency cue ("don't", "not",
    "plenty", "enough", "already", ...) prefixed ``NEG_``, up to the end of the clause.

    "I don't need water" then shares no n-gram with "I need water" but one with "we don't
    need firewood": the cue for no-need and against self-need, whatever the item."""
    abstracted = _QUANTITY.sub(" NUM ", _ITEM.sub(" ITEM ", text))
    out, scope = [], 0
    for token in re.findall(r"[\w']+|[.,!?;]", abstracted.lower()):
        if token in ".,!?;":
            scope = 0
            out.append(token)
            continue
        out.append("NEG_" + token if scope else token)
        if token in _CUES or token.endswith("n't") or token in ("dont", "cant", "wont", "didnt", "isnt"):
            scope = _NEGATION_SCOPE
        elif scope:
            scope -= 1
    return " ".join(out)


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s] or [text]


def _features(
    model: str, items: list[Utterance], train: np.ndarray, test: np.ndarray, cache: dict[str, Any]
) -> tuple[Any, Any]:
    """tfidf: word 1-2 grams. Otherwise word 1-3 grams, character 2-5 grams, word 1-3 grams
    of the negation-marked text and the dense context (:func:`_context`)."""
    from scipy.sparse import csr_matrix, hstack

    texts = [u.text for u in items]
    train_texts = [texts[i] for i in train]
    if model == "tfidf":
        words = fit_tfidf(train_texts, min_df=2).transform(texts)
        return words[train], words[test]
    if "context" not in cache:
        cache["context"] = _context(items)
        cache["marked"] = [negation_marked(t) for t in texts]
    marked = cache["marked"]
    x = hstack(
        [
            fit_tfidf(train_texts, ngram_range=(1, 3), min_df=2).transform(texts),
            fit_tfidf(train_texts, analyzer="char_wb", ngram_range=(2, 5), min_df=2).transform(texts),
            fit_tfidf(
                [marked[i] for i in train], ngram_range=(1, 3), min_df=2, token_pattern=r"[\w']+|\?"
            ).transform(marked),
            csr_matrix(np.hstack(list(cache["context"].values()))),
        ]
    ).tocsr()
    return x[train], x[test]


def _context(items: list[Utterance]) -> dict[str, np.ndarray]:
    """Dense features per utterance: its embedding (``utterance``), the element-wise maximum
    of its sentences' embeddings (``sentences``: several strategies often share one
    utterance, one per sentence), the previous message's embedding (``previous``) and the
    position in the dialogue, 0 to 1 (``position``). One call embeds every distinct text
    once: most previous messages and one-sentence utterances repeat."""
    texts = [u.text for u in items]
    sentences = [_sentences(t) for t in texts]
    flat = [s for ss in sentences for s in ss]
    vectors = embed(texts + [u.previous for u in items] + flat)
    own, previous, rest = np.split(vectors, [len(texts), 2 * len(texts)])
    ends = np.cumsum([len(ss) for ss in sentences])
    pooled = np.array(
        [rest[end - len(ss) : end].max(axis=0) for ss, end in zip(sentences, ends, strict=True)]
    )
    position = np.array([[u.position] for u in items])
    return {"utterance": own, "sentences": pooled, "previous": previous, "position": position}


class CasinoStrategy(Task):
    """Strategy labels of CaSiNo utterances, 5-fold cross-validation by dialogue.

    An example is one annotated utterance (``{conversation_id}/{turn_index}``) with its
    ``text``, the ``previous`` message and its ``position`` in the dialogue (0 to 1); a
    prediction is the list of its strategies among the seven."""

    name = "casino-strategy"
    dataset = "casino"
    description = "Detect the 7 negotiation strategies of the paper in each utterance (multi-label)."
    protocol = (
        "396 annotated dialogues, 5-fold cross-validation by dialogue; F1 of the positive class "
        "per label, mean over folds, then over the 7 labels"
    )
    kind = "labels"
    prediction = "the list of the utterance's strategies (among the 7 labels; [] for none)"
    metric = "mean_f1"
    labels = LABELS
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed", "finetune")
    cpu_seconds: ClassVar[Mapping[str, float]] = {
        "tfidf": 3.7,  # user + system of `convbank bench casino-strategy -m tfidf`: 3.6 s wall
        "embed": 331.0,  # 642 s wall on a loaded 2-core machine
        "finetune": 1540.0,  # a seed's re-run; 8 to 13 minutes on 2 idle cores, 49 loaded
    }
    published = (
        Figure(
            "BERT, multi-task (the paper's strategy classifiers)",
            "F1 per strategy",
            None,
            f"{NOT_FOUND}: Chawla et al. 2021 (NAACL), the table of strategy-prediction results "
            "(5-fold cross-validation); its figures could not be read from any source available here",
        ),
    )
    measured = (
        Figure("random", "mean_f1", 0.1068, "measured here: seed 0, 396 dialogues, 4,615 utterances"),
        Figure("tfidf", "mean_f1", 0.5695, "measured here: seed 0, 396 dialogues, 4,615 utterances"),
        Figure("embed", "mean_f1", 0.639, "measured here: seed 0 (README, full run; seed 1: 0.6255)"),
        Figure(
            "finetune",
            "mean_f1",
            0.670,
            "measured here: seed 0 (README, full run, about 8 minutes; re-run: 0.6694; seed 1: 0.6571)",
        ),
    )

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """The annotated utterances of the annotated dialogues, five folds by dialogue."""
        items = utterances(corpus)
        groups = [u.dialogue for u in items]
        if len(set(groups)) < 2:
            raise too_small(
                corpus, len(set(groups)), "annotated dialogues", 2, "5-fold cross-validation by dialogue"
            )
        examples = [
            Example(
                f"{u.dialogue}/{u.turn_index}",
                u.dialogue,
                {"text": u.text, "previous": u.previous, "position": u.position},
            )
            for u in items
        ]
        gold = [[label for label in LABELS if label in u.labels] for u in items]
        return TaskData(
            examples,
            gold,
            cross_validation(groups, 5, seed),
            details={
                "dialogues": len(set(groups)),
                "utterances": len(items),
                "positives": {label: sum(label in g for g in gold) for label in LABELS},
            },
            context={"items": items},
        )

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """F1 of the positive class per label and fold; mean over folds, then over labels."""
        scores: dict[str, list[float]] = {label: [] for label in LABELS}
        for fold in data.folds:
            gold = [set(data.gold[i]) for i in fold.test]
            guess = [set(predictions[data.examples[i].id]) for i in fold.test]
            for label in LABELS:
                scores[label].append(binary_f1([label in g for g in gold], [label in p for p in guess]))
        per_label = {label: round(float(np.mean(v)), 4) for label, v in scores.items()}
        return {"mean_f1": round(mean(per_label.values()) or 0.0, 4), "per_label": per_label}

    def builtin(self, model: str, data: TaskData, seed: int) -> Model:
        """``random`` draws each label with its training frequency; the others are per-label
        logistic regressions on text features (``finetune`` adds a fine-tuned encoder)."""
        return _StrategyModel(model, data, seed)


class _StrategyModel:
    """A built-in model over the task's items: features are made once for every utterance
    (texts only) and each fold trains on its training rows."""

    def __init__(self, model: str, data: TaskData, seed: int) -> None:
        self.model = model
        self.seed = seed
        self.items: list[Utterance] = data.context["items"]
        self.index = {e.id: i for i, e in enumerate(data.examples)}
        self.gold = np.zeros((len(self.items), len(LABELS)), dtype=bool)
        self.train = np.zeros(0, dtype=np.int64)
        self.rng = np.random.default_rng(seed)
        self.cache: dict[str, Any] = {}

    def fit(self, examples: Sequence[Example], gold: Sequence[list[str]]) -> None:
        self.train = np.array([self.index[e.id] for e in examples], dtype=np.int64)
        for i, labels in zip(self.train, gold, strict=True):
            self.gold[i] = [label in labels for label in LABELS]

    def predict(self, examples: Sequence[Example]) -> list[list[str]]:
        test = np.array([self.index[e.id] for e in examples], dtype=np.int64)
        if self.model == "random":
            chosen = self.rng.random((len(test), len(LABELS))) < self.gold[self.train].mean(axis=0)
        else:
            chosen = (
                _probabilities(
                    self.model, self.items, self.gold, self.train, test, seed=self.seed, cache=self.cache
                )
                > 0.5
            )
        return [[label for label, on in zip(LABELS, row, strict=True) if on] for row in chosen]


def _probabilities(
    model: str,
    items: list[Utterance],
    gold: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    *,
    seed: int,
    cache: dict[str, Any],
) -> np.ndarray:
    """Per test utterance and label, the probability of the label. ``finetune`` averages the
    ``embed`` logistic regressions with the fine-tuned encoder, which learns the three other
    strategies of the annotation as auxiliary targets."""
    x_train, x_test = _features(model, items, train, test, cache)
    c = 1.0 if model == "tfidf" else 3.0
    linear = np.column_stack(
        [fit_binary(x_train, list(y), c=c).predict_proba(x_test)[:, 1] for y in gold[train].T]
    )
    if model != "finetune":
        return linear
    require("torch", "embed", "The fine-tuned model")
    from convbank.tasks.finetune import TopLayerTuner

    if "tuner" not in cache:
        cache["tuner"] = TopLayerTuner([u.text for u in items])
        cache["targets"] = np.array([[label in u.labels for label in LABELS + AUXILIARY] for u in items])
        cache["head_context"] = np.hstack(
            [cache["context"][k] for k in ("utterance", "previous", "position")]
        )
    tuner: TopLayerTuner = cache["tuner"]
    tuned = tuner.fit_predict(cache["targets"], cache["head_context"], train, test, seed)[:, : len(LABELS)]
    return (1 - TUNED_WEIGHT) * linear + TUNED_WEIGHT * tuned
