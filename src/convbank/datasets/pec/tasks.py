"""pec-response-selection: pick the true response among 100 candidates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from convbank.model import Conversation
from convbank.tasks import NOT_FOUND, CorpusLike, Example, Figure, Fold, Ranker, Task, TaskData, too_small
from convbank.tasks.features import embed, fit_tfidf
from convbank.tasks.metrics import mrr, rank_of, recall_at

CANDIDATES = 100
SPLIT = "test"


def _context(conv: Conversation) -> list[dict[str, str]]:
    return [{"speaker": t.participant_id, "text": t.text} for t in conv.turns[:-1]]


def _persona(conv: Conversation) -> list[str]:
    return list(conv.participant(conv.turns[-1].participant_id).persona)


class PecResponseSelection(Task):
    """Response selection with the responder's persona, negatives from the same split.

    A test example is one thread (its conversation id) with its ``context`` (the turns before
    the response: ``speaker``, ``text``), the responder's ``persona`` and 100 ``candidates``
    (the true response and 99 responses of other test threads, in a seeded random order); a
    prediction is one score per candidate. Training examples (the train split) carry their
    true response as their only candidate."""

    name = "pec-response-selection"
    dataset = "pec"
    description = (
        "Rank the true response of each thread among 100 candidates (99 other responses of the split)."
    )
    protocol = (
        "test split; each response against 99 responses of other threads of the same split "
        "(seeded; all others when fewer); R@1, R@10, R@50 and MRR, ties ranked pessimistically"
    )
    kind = "ranking"
    prediction = "one score per candidate, in the candidates' order (higher ranks first)"
    metric = "mrr"
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed")
    published = (
        Figure(
            "CoBERT",
            "recall@1",
            None,
            f"{NOT_FOUND}: Zhong et al. 2020 (EMNLP), the table of response-selection results (R@1 "
            "among in-batch candidates; compare only at the same candidate count)",
        ),
    )

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """Train threads with their response, test threads with 100 candidates each."""
        train = [c for c in corpus if c.split == "train" and len(c.turns) >= 2]
        convs = [c for c in corpus if c.split == SPLIT and len(c.turns) >= 2]
        if len(convs) < 2:
            raise too_small(
                corpus, len(convs), f"PEC {SPLIT} threads", 2, "ranking each response among the others"
            )
        rng = np.random.default_rng(seed)
        responses = [c.turns[-1].text for c in convs]
        n = len(convs)
        k = min(CANDIDATES, n) - 1
        examples = [
            Example(
                c.conversation_id,
                c.conversation_id,
                {"context": _context(c), "persona": _persona(c), "candidates": [c.turns[-1].text]},
            )
            for c in train
        ]
        gold: list[Any] = [0] * len(train)
        for i, conv in enumerate(convs):
            others = rng.choice(np.delete(np.arange(n), i), size=k, replace=False)
            order = rng.permutation(np.concatenate([[i], others]))
            examples.append(
                Example(
                    conv.conversation_id,
                    conv.conversation_id,
                    {
                        "context": _context(conv),
                        "persona": _persona(conv),
                        "candidates": [responses[j] for j in order],
                    },
                )
            )
            gold.append(int(np.flatnonzero(order == i)[0]))
        fold = Fold(SPLIT, tuple(range(len(train))), tuple(range(len(train), len(examples))))
        return TaskData(examples, gold, [fold], details={"threads": n, "candidates": k + 1})

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """The rank of the true response (ties pessimistic): MRR and recall at 1, 10, 50."""
        ranks = [
            rank_of(list(predictions[data.examples[i].id]), data.gold[i]) for f in data.folds for i in f.test
        ]
        return {
            "mrr": round(mrr(ranks), 4),
            "recall@1": round(recall_at(ranks, 1), 4),
            "recall@10": round(recall_at(ranks, 10), 4),
            "recall@50": round(recall_at(ranks, 50), 4),
        }

    def builtin(self, model: str, data: TaskData, seed: int) -> Ranker:
        """``random`` scores; ``tfidf`` (fitted on the training threads) or ``embed``
        similarity of a candidate to the last two context turns, plus half its similarity to
        the responder's persona."""
        return _Similarity(model, seed)


class _Similarity:
    def __init__(self, model: str, seed: int) -> None:
        self.model = model
        self.rng = np.random.default_rng(seed)
        self.vectoriser: Any = None

    def fit(self, examples: Sequence[Example], gold: Sequence[int]) -> None:
        if self.model == "tfidf":
            texts = [" ".join([*(t["text"] for t in e["context"]), *e["candidates"]]) for e in examples]
            self.vectoriser = fit_tfidf(texts, ngram_range=(1, 1))

    def rank(self, examples: Sequence[Example]) -> list[list[float]]:
        if self.model == "random":
            return [self.rng.random(len(e["candidates"])).tolist() for e in examples]
        if self.model == "tfidf" and self.vectoriser is None:  # no training threads
            self.vectoriser = fit_tfidf([c for e in examples for c in e["candidates"]], ngram_range=(1, 1))
        out = []
        for e in examples:
            context = " ".join(t["text"] for t in e["context"][-2:])
            persona = " ".join(e["persona"])
            if self.model == "tfidf":
                m = self.vectoriser.transform([context, persona, *e["candidates"]])
                scores = (m[2:] @ m[0].T).toarray().ravel() + 0.5 * (m[2:] @ m[1].T).toarray().ravel()
            else:
                v = embed([context, persona, *e["candidates"]])
                scores = v[2:] @ v[0] + 0.5 * (v[2:] @ v[1])
            out.append(scores.tolist())
        return out
