"""convai2-quality: predict the human's 1-5 rating of a ConvAI2 dialogue."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from convbank.bench import NOT_FOUND, Figure, Task, folds, too_small
from convbank.bench.features import embed, fit_tfidf
from convbank.bench.metrics import mean_absolute_error, spearman
from convbank.bench.progress import progress
from convbank.datasets.convai2.present import BOT, HUMAN
from convbank.errors import require
from convbank.model import Conversation
from convbank.query import Corpus


def _side(conv: Conversation, pid: str) -> list[str]:
    return [t.text for t in conv.turns if t.participant_id == pid]


def _shape(conv: Conversation) -> list[float]:
    human, bot = _side(conv, HUMAN), _side(conv, BOT)
    words = [len(t.split()) for t in bot] or [0]
    return [
        np.log1p(len(human)),
        np.log1p(len(bot)),
        np.log1p(float(np.mean(words))),
        float(not bot),
        float(not human),
    ]


def _text(conv: Conversation) -> str:
    return "\n".join(f"{'H' if t.participant_id == HUMAN else 'B'}: {t.text}" for t in conv.turns)


MIN_RATED = 10
"""Rated dialogues a config needs for 5-fold cross-validation."""


class ConvAI2Quality(Task):
    """Dialogue-level quality: regression on eval_score, 5-fold cross-validation by dialogue."""

    name = "convai2-quality"
    dataset = "convai2"
    description = "Predict the human evaluator's 1-5 rating (eval_score) of a human-bot dialogue."
    protocol = (
        "dialogues with an eval_score, 5-fold cross-validation by dialogue, each config on its own "
        "(their raters and bots differ: figures are per config, never pooled); Spearman correlation "
        "of predicted and given scores over all held-out dialogues (and MAE)"
    )
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed")
    published = (
        Figure(
            "-",
            "spearman",
            None,
            f"{NOT_FOUND}: the organisers (Dinan et al. 2020) publish no rating-prediction figure "
            "for these dialogues",
        ),
    )
    measured = (
        Figure("random (volunteers)", "spearman", 0.0696, "measured here: seed 0, 593 rated dialogues"),
        Figure("tfidf (volunteers)", "spearman", 0.2783, "measured here: seed 0, 593 rated dialogues"),
        Figure("embed (volunteers)", "spearman", 0.2779, "measured here: seed 0, 593 rated dialogues"),
        Figure("tfidf (intermediate)", "spearman", 0.4925, "measured here: seed 0, 198 rated dialogues"),
    )

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Ridge regression on dialogue features, cross-validated in each config with rated
        dialogues: one config gives ``{"spearman", "mae"}``; several give those per config
        (``{"volunteers": {...}, "intermediate": {...}}``), never a pooled figure."""
        by_config: dict[str, list[Conversation]] = {}
        for conv in corpus:
            if conv.meta.get("eval_score") is not None:
                by_config.setdefault(conv.config, []).append(conv)
        enough = {config: rated for config, rated in by_config.items() if len(rated) >= MIN_RATED}
        if not enough:
            have = max((len(r) for r in by_config.values()), default=0)
            raise too_small(corpus, have, "rated dialogues", MIN_RATED, "5-fold cross-validation by dialogue")
        if len(by_config) == 1:
            return self._evaluate(next(iter(enough.values())), model, seed, f"{model}: folds")
        metrics: dict[str, Any] = {}
        details: dict[str, Any] = {"dialogues": {}, "score_counts": {}}
        for config, rated in enough.items():
            metrics[config], one = self._evaluate(rated, model, seed, f"{model}: {config}: folds")
            for key, per_config in details.items():
                per_config[config] = one[key]
        too_few = {config: len(r) for config, r in by_config.items() if config not in enough}
        if too_few:
            details["not_evaluated"] = {
                c: f"{n} rated dialogues (fewer than {MIN_RATED})" for c, n in too_few.items()
            }
        return metrics, details

    def _evaluate(
        self, rated: list[Conversation], model: str, seed: int, description: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """One config's rated dialogues, cross-validated."""
        y = np.array([c.meta["eval_score"] for c in rated], dtype=float)
        predicted = np.zeros(len(rated))
        rng = np.random.default_rng(seed)
        shape = np.array([_shape(c) for c in rated])
        dense = None
        if model == "embed":
            dim = 384
            dense = np.hstack(
                [
                    np.array(
                        [embed(_side(c, pid)).mean(axis=0) if _side(c, pid) else np.zeros(dim) for c in rated]
                    )
                    for pid in (HUMAN, BOT)
                ]
            )
        texts = [_text(c) for c in rated]
        for test in progress(folds([c.conversation_id for c in rated], 5, seed), description):
            train = np.setdiff1d(np.arange(len(rated)), test)
            if model == "random":
                predicted[test] = rng.uniform(1, 5, len(test))
                continue
            require("sklearn", "bench", "The regression model")
            from scipy.sparse import csr_matrix, hstack
            from sklearn.linear_model import Ridge

            parts = [csr_matrix(shape)]
            if model == "tfidf":
                parts.append(fit_tfidf([texts[i] for i in train], min_df=2).transform(texts))
            else:
                parts.append(csr_matrix(dense))
            x = hstack(parts).tocsr()
            reg = Ridge(alpha=3.0).fit(x[train], y[train])
            predicted[test] = np.clip(reg.predict(x[test]), 1, 5)
        rho = spearman(list(y), list(predicted))
        return (
            {
                "spearman": None if rho is None else round(rho, 4),
                "mae": round(mean_absolute_error(list(y), list(predicted)), 4),
            },
            {"dialogues": len(rated), "score_counts": {str(k): int((y == k).sum()) for k in range(1, 6)}},
        )
