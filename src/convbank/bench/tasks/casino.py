"""casino-strategy: the negotiation strategies of the CaSiNo paper, per utterance."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from convbank.bench._core import BenchError, Task, folds, register
from convbank.bench.features import embed, fit_binary, fit_tfidf
from convbank.bench.metrics import binary_f1, mean
from convbank.query import Corpus

LABELS = ("small-talk", "self-need", "other-need", "no-need", "elicit-pref", "uv-part", "vouch-fair")
"""The seven strategies of the paper's classification experiments."""


@dataclass(frozen=True)
class Utterance:
    """One annotated message with what came before it."""

    dialogue: str
    text: str
    previous: str
    labels: frozenset[str]
    position: float


def utterances(corpus: Corpus) -> list[Utterance]:
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
                    Utterance(conv.conversation_id, t.text, previous, labels, n / max(len(messages) - 1, 1))
                )
            previous = t.text
    return items


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if s] or [text]


def sentence_max_embeddings(texts: list[str]) -> np.ndarray:
    """Per text, the element-wise maximum of its sentences' embeddings (several strategies
    often share one utterance, one per sentence)."""
    split = [_sentences(t) for t in texts]
    flat = embed([s for ss in split for s in ss])
    out, i = [], 0
    for ss in split:
        out.append(flat[i : i + len(ss)].max(axis=0))
        i += len(ss)
    return np.array(out)


def _features(
    model: str, items: list[Utterance], train: np.ndarray, test: np.ndarray, cache: dict[str, Any]
) -> tuple[Any, Any]:
    """tfidf: word 1-2 grams. embed: word 1-3 and character 2-5 grams, the utterance's
    embedding, its sentences' max-pooled embedding, the previous message's embedding and
    the position in the dialogue."""
    from scipy.sparse import csr_matrix, hstack

    texts = [u.text for u in items]
    train_texts = [texts[i] for i in train]
    if model == "tfidf":
        words = fit_tfidf(train_texts, min_df=2).transform(texts)
        return words[train], words[test]
    if "dense" not in cache:
        cache["dense"] = csr_matrix(
            np.hstack(
                [
                    embed(texts),
                    sentence_max_embeddings(texts),
                    embed([u.previous for u in items]),
                    np.array([[u.position] for u in items]),
                ]
            )
        )
    x = hstack(
        [
            fit_tfidf(train_texts, ngram_range=(1, 3), min_df=2).transform(texts),
            fit_tfidf(train_texts, analyzer="char_wb", ngram_range=(2, 5), min_df=2).transform(texts),
            cache["dense"],
        ]
    ).tocsr()
    return x[train], x[test]


@register
class CasinoStrategy(Task):
    """Strategy labels of CaSiNo utterances, 5-fold cross-validation by dialogue."""

    name = "casino-strategy"
    dataset = "casino"
    description = "Detect the 7 negotiation strategies of the paper in each utterance (multi-label)."
    protocol = (
        "396 annotated dialogues, 5-fold cross-validation by dialogue; F1 of the positive class "
        "per label, mean over folds, then over the 7 labels"
    )
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed")
    reference: ClassVar[dict[str, Any]] = {
        "mean_f1": {"TF-IDF + logistic regression (measured with the paper's protocol)": 0.567},
        "note": "the paper's multi-task BERT reports per-label F1; see Chawla et al. 2021, Table 5",
    }

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Cross-validate ``model`` and average the per-label F1."""
        items = utterances(corpus)
        if not items:
            raise BenchError("no annotated CaSiNo dialogues in the bank")
        groups = [u.dialogue for u in items]
        scores: dict[str, list[float]] = {label: [] for label in LABELS}
        cache: dict[str, Any] = {}
        rng = np.random.default_rng(seed)
        all_idx = np.arange(len(items))
        for test in folds(groups, 5, seed):
            train = np.setdiff1d(all_idx, test)
            if model != "random":
                x_train, x_test = _features(model, items, train, test, cache)
            for label in LABELS:
                y_train = [label in items[i].labels for i in train]
                gold = [label in items[i].labels for i in test]
                if model == "random":
                    prior = sum(y_train) / len(y_train)
                    predicted = list(rng.random(len(test)) < prior)
                else:
                    clf = fit_binary(x_train, y_train, c=1.0 if model == "tfidf" else 3.0)
                    predicted = list(clf.predict(x_test))
                scores[label].append(binary_f1(gold, predicted))
        per_label = {label: round(float(np.mean(v)), 4) for label, v in scores.items()}
        details = {
            "dialogues": len(set(groups)),
            "utterances": len(items),
            "positives": {label: sum(label in u.labels for u in items) for label in LABELS},
        }
        return {"mean_f1": round(mean(per_label.values()) or 0.0, 4), "per_label": per_label}, details
