"""pec-response-selection: pick the true response among 100 candidates."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from convbank.bench import NOT_FOUND, Figure, Task, too_small
from convbank.bench.features import embed, fit_tfidf
from convbank.bench.metrics import mrr, rank_of, recall_at
from convbank.query import Corpus

CANDIDATES = 100
SPLIT = "test"


class PecResponseSelection(Task):
    """Response selection with the responder's persona, negatives from the same split."""

    name = "pec-response-selection"
    dataset = "pec"
    description = (
        "Rank the true response of each thread among 100 candidates (99 other responses of the split)."
    )
    protocol = (
        "test split; each response against 99 responses of other threads of the same split "
        "(seeded; all others when fewer); R@1, R@10, R@50 and MRR, ties ranked pessimistically"
    )
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

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Score candidates by similarity to the context and to the responder's persona."""
        convs = [c for c in corpus if c.split == SPLIT and len(c.turns) >= 2]
        if len(convs) < 2:
            raise too_small(
                corpus, len(convs), f"PEC {SPLIT} threads", 2, "ranking each response among the others"
            )
        contexts = [" ".join(t.text for t in c.turns[-3:-1]) for c in convs]
        responses = [c.turns[-1].text for c in convs]
        personas = [" ".join(c.participant(c.turns[-1].participant_id).persona) for c in convs]
        rng = np.random.default_rng(seed)
        n = len(convs)
        k = min(CANDIDATES, n) - 1
        if model == "tfidf":
            train = [" ".join(t.text for t in c.turns) for c in corpus if c.split == "train"] or responses
            vec = fit_tfidf(train, ngram_range=(1, 1))
            ctx, resp, per = (vec.transform(x) for x in (contexts, responses, personas))
        elif model == "embed":
            ctx, resp, per = embed(contexts), embed(responses), embed(personas)
        ranks = []
        for i in range(n):
            others = rng.choice(np.delete(np.arange(n), i), size=k, replace=False)
            cand = np.concatenate([[i], others])
            if model == "random":
                scores = rng.random(len(cand))
            elif model == "tfidf":
                scores = (resp[cand] @ ctx[i].T).toarray().ravel() + 0.5 * (
                    resp[cand] @ per[i].T
                ).toarray().ravel()
            else:
                scores = resp[cand] @ ctx[i] + 0.5 * (resp[cand] @ per[i])
            ranks.append(rank_of(list(scores), 0))
        return (
            {
                "mrr": round(mrr(ranks), 4),
                "recall@1": round(recall_at(ranks, 1), 4),
                "recall@10": round(recall_at(ranks, 10), 4),
                "recall@50": round(recall_at(ranks, 50), 4),
            },
            {"threads": n, "candidates": k + 1},
        )
