"""Curiosity tasks of the paper: fact ranking, dialog acts (utterance and policy), likes.

Trained on the official ``train`` split, evaluated on ``test``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from convbank.bench import BenchError, Figure, Task
from convbank.bench.features import embed, fit_binary, fit_tfidf
from convbank.bench.metrics import accuracy, micro_prf, mrr, rank_of
from convbank.datasets.curiosity.present import fact_texts
from convbank.datasets.curiosity.records import DIALOG_ACTS
from convbank.model import Conversation
from convbank.query import Corpus

TEST_SPLIT = "test"
PAPER = "Rodriguez et al. 2020 (EMNLP), Table 4, test"
"""Where the authors' figures are: the experiments table of the paper (its LaTeX source,
github.com/EntilZha/publications 2020_emnlp_curiosity/commit_auto_fig/experiment-table.tex)."""


def _split(corpus: Corpus, split: str) -> list[Conversation]:
    convs = [c for c in corpus if c.split == split]
    if not convs:
        raise BenchError(f"the bank has no curiosity {split} split; build curiosity first")
    return convs


@dataclass(frozen=True)
class Message:
    """A message with the one before it."""

    text: str
    sender: str
    previous: str
    previous_sender: str
    acts: frozenset[str] | None
    liked: bool


def messages(convs: list[Conversation]) -> list[Message]:
    """Every message of the conversations, in order."""
    out = []
    for conv in convs:
        prev, prev_sender = "", "none"
        for t in conv.turns:
            acts = (
                None
                if t.meta.get("dialog_acts", ()) is None
                else frozenset(a.label for a in conv.annotations_of(t.turn_index, "dialog_act"))
            )
            out.append(Message(t.text, t.participant_id, prev, prev_sender, acts, bool(t.meta.get("liked"))))
            prev, prev_sender = t.text, t.participant_id
    return out


def _x(model: str, train_texts: list[str], texts: list[str], senders: list[str]) -> Any:
    from scipy.sparse import csr_matrix, hstack

    side = csr_matrix(np.array([[s == "assistant"] for s in senders], dtype=float))
    if model == "tfidf":
        return hstack([fit_tfidf(train_texts).transform(texts), side]).tocsr()
    return hstack([csr_matrix(embed(texts)), side]).tocsr()


def _multilabel(
    model: str, train: list[Message], test: list[Message], policy: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    train = [m for m in train if m.acts is not None]
    test = [m for m in test if m.acts is not None]
    if not train or not test:
        raise BenchError("no messages with dialog acts in the train or test split")
    unknown = sorted({a for m in train + test for a in m.acts or ()} - set(DIALOG_ACTS))
    if unknown:
        raise BenchError(
            f"dialog acts outside the dataset's vocabulary: {', '.join(unknown)}; "
            "run `convbank validate curiosity`"
        )
    gold = [m.acts or frozenset() for m in test]
    counts = Counter(a for m in train for a in m.acts or ())
    if model == "majority":
        top = counts.most_common(1)[0][0] if counts else None
        predicted: list[frozenset[str]] = [frozenset({top}) if top else frozenset() for _ in test]
    else:

        def view(items: list[Message]) -> tuple[list[str], list[str]]:
            if policy:  # acts of a message from what came before it
                return [f"{m.previous_sender}: {m.previous}" for m in items], [m.sender for m in items]
            return [m.text for m in items], [m.sender for m in items]

        tr_texts, tr_senders = view(train)
        te_texts, te_senders = view(test)
        x_all = _x(model, tr_texts, tr_texts + te_texts, tr_senders + te_senders)
        x_train, x_test = x_all[: len(train)], x_all[len(train) :]
        labels = [a for a in DIALOG_ACTS if a in counts]  # the vocabulary's acts seen in training
        columns = []
        for act in labels:
            clf = fit_binary(x_train, [act in (m.acts or ()) for m in train], balanced=False)
            columns.append(clf.decision_function(x_test) > 0)
        predicted = (
            [
                frozenset(a for a, col in zip(labels, row, strict=True) if col)
                for row in zip(*columns, strict=True)
            ]
            if labels
            else [frozenset() for _ in test]
        )
    prf = micro_prf(gold, predicted)
    return (
        {"micro_f1": round(prf.f1, 4), "precision": round(prf.precision, 4), "recall": round(prf.recall, 4)},
        {"train_messages": len(train), "test_messages": len(test)},
    )


class _CuriosityTask(Task):
    dataset = "curiosity"
    models: ClassVar[tuple[str, ...]] = ("majority", "tfidf", "embed")

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Train on train, evaluate on test."""
        return self.score(messages(_split(corpus, "train")), messages(_split(corpus, TEST_SPLIT)), model)

    def score(
        self, train: list[Message], test: list[Message], model: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Metrics of one model."""
        raise NotImplementedError


class _ActsTask(_CuriosityTask):
    policy: ClassVar[bool]
    """Whether the acts of a message are predicted from the message before it."""

    def score(
        self, train: list[Message], test: list[Message], model: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One binary classifier per act."""
        return _multilabel(model, train, test, policy=self.policy)


class CuriosityUtteranceActs(_ActsTask):
    """Dialog acts of each message from its own text."""

    name = "curiosity-utterance-acts"
    description = "Classify the dialog acts of each message (multi-label) from its text and sender."
    protocol = "official splits (train, then test); micro F1 over (message, act) pairs"
    published = (
        Figure("majority class", "micro_f1", 0.604, PAPER),
        Figure("E2E BERT", "micro_f1", 0.795, PAPER),
        Figure("CHARM", "micro_f1", 0.847, PAPER),
    )
    policy = False


class CuriosityPolicyActs(_ActsTask):
    """Dialog acts of message t from the messages before it."""

    name = "curiosity-policy-acts"
    description = "Predict the dialog acts of the next message from the conversation before it."
    protocol = "official splits (train, then test); micro F1; features only from turns before t"
    published = (
        Figure("majority class", "micro_f1", 0.494, PAPER),
        Figure("E2E BERT", "micro_f1", 0.631, PAPER),
        Figure("CHARM", "micro_f1", 0.682, PAPER),
    )
    policy = True


class CuriosityLike(_CuriosityTask):
    """Whether the user liked an assistant message."""

    name = "curiosity-like"
    description = "Predict whether the user liked each assistant message."
    protocol = "official splits (train, then test); accuracy over assistant messages"
    published = (
        Figure("majority class", "accuracy", 0.681, PAPER),
        Figure("E2E BERT", "accuracy", 0.822, PAPER),
        Figure("CHARM", "accuracy", 0.815, PAPER),
    )

    def score(
        self, train: list[Message], test: list[Message], model: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Logistic regression on the assistant message and the user message before it."""
        train = [m for m in train if m.sender == "assistant"]
        test = [m for m in test if m.sender == "assistant"]
        if not train or not test:
            raise BenchError("no assistant messages in the train or test split")
        if model == "majority":
            top = Counter(m.liked for m in train).most_common(1)[0][0]
            predicted = [top] * len(test)
        else:
            texts = [f"{m.previous} || {m.text}" for m in train + test]
            x = _x(model, texts[: len(train)], texts, [m.sender for m in train + test])
            clf = fit_binary(x[: len(train)], [m.liked for m in train], balanced=False)
            predicted = [bool(p) for p in clf.predict(x[len(train) :])]
        gold = [m.liked for m in test]
        return {"accuracy": round(accuracy(gold, predicted), 4)}, {
            "test_messages": len(test),
            "liked_rate": round(sum(gold) / len(gold), 4),
        }


class CuriosityFactRanking(Task):
    """Rank the facts shown to the assistant so that the one it used comes first."""

    name = "curiosity-fact-ranking"
    dataset = "curiosity"
    description = "Rank the facts shown to the assistant by relevance to the user's last message."
    protocol = "test split; assistant messages that used a fact; MRR of the first used fact among those shown"
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed")
    published = (
        Figure(
            "TF-IDF",
            "mrr",
            0.408,
            "the authors' run released with the paper's source (EntilZha/publications, 2020_emnlp_curiosity/"
            "data/experiments/mrr_tfidf_test_metrics.json: 0.4084); its row is not printed in Table 4",
        ),
        Figure("E2E BERT", "mrr", 0.418, PAPER),
        Figure("CHARM", "mrr", 0.546, PAPER),
    )

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Score each shown fact against the previous user message."""
        rng = np.random.default_rng(seed)
        train_texts: list[str] = []
        items = []
        for conv in _split(corpus, TEST_SPLIT):
            facts = fact_texts(conv, corpus.side_table)
            if not facts and any(t.meta.get("facts") for t in conv.turns):
                raise BenchError(
                    "curiosity-fact-ranking needs the fact texts: build curiosity with wiki_sql.sqlite.db"
                )
            prev = ""
            for t in conv.turns:
                shown = [f for f in t.meta.get("facts", ()) if f["fid"] in facts]
                if t.participant_id == "assistant" and any(f["used"] for f in shown):
                    items.append(
                        (
                            prev,
                            [facts[f["fid"]] for f in shown],
                            [i for i, f in enumerate(shown) if f["used"]],
                        )
                    )
                prev = t.text if t.participant_id == "user" else prev
            train_texts += list(facts.values())
        if not items:
            raise BenchError("no assistant message with a used fact in the test split")
        if model == "tfidf":
            vec = fit_tfidf(train_texts + [q for q, _, _ in items], ngram_range=(1, 1))
        ranks = []
        for query, candidates, used in items:
            if model == "random":
                scores = list(rng.random(len(candidates)))
            elif model == "tfidf":
                m = vec.transform([query, *candidates])
                scores = list((m[1:] @ m[0].T).toarray().ravel())
            else:
                v = embed([query, *candidates])
                scores = list(v[1:] @ v[0])
            ranks.append(min(rank_of(scores, i) for i in used))
        return {"mrr": round(mrr(ranks), 4)}, {
            "assistant_messages": len(items),
            "mean_candidates": round(float(np.mean([len(c) for _, c, _ in items])), 2),
        }
