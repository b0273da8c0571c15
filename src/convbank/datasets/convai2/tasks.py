"""convai2-quality: predict the human's 1-5 rating of a ConvAI2 dialogue."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from convbank.datasets.convai2.records import BOT, HUMAN
from convbank.errors import require
from convbank.model import Conversation
from convbank.tasks import (
    NOT_FOUND,
    CorpusLike,
    Example,
    Figure,
    Fold,
    Model,
    Task,
    TaskData,
    cross_validation,
    too_small,
)
from convbank.tasks.features import embed, fit_tfidf
from convbank.tasks.metrics import mean_absolute_error, spearman

MIN_RATED = 10
"""Rated dialogues a config needs for 5-fold cross-validation."""


def _side(turns: list[dict[str, str]], speaker: str) -> list[str]:
    return [t["text"] for t in turns if t["speaker"] == speaker]


def _shape(turns: list[dict[str, str]]) -> list[float]:
    human, bot = _side(turns, "human"), _side(turns, "bot")
    words = [len(t.split()) for t in bot] or [0]
    return [
        np.log1p(len(human)),
        np.log1p(len(bot)),
        np.log1p(float(np.mean(words))),
        float(not bot),
        float(not human),
    ]


def _text(turns: list[dict[str, str]]) -> str:
    return "\n".join(f"{'H' if t['speaker'] == 'human' else 'B'}: {t['text']}" for t in turns)


def _inputs(conv: Conversation) -> dict[str, Any]:
    speaker = {HUMAN: "human", BOT: "bot"}
    return {
        "config": conv.config,
        "turns": [
            {"speaker": speaker.get(t.participant_id, t.participant_id), "text": t.text} for t in conv.turns
        ],
        "human_persona": list(conv.participant(HUMAN).persona) if _has(conv, HUMAN) else [],
        "bot_persona": list(conv.participant(BOT).persona) if _has(conv, BOT) else [],
    }


def _has(conv: Conversation, pid: str) -> bool:
    return any(p.participant_id == pid for p in conv.participants)


class ConvAI2Quality(Task):
    """Dialogue-level quality: regression on eval_score, 5-fold cross-validation by dialogue,
    each config on its own.

    An example is one rated dialogue (its conversation id) with its ``turns`` (``speaker``
    human or bot, ``text``), both personas and its ``config``; a prediction is a number, the
    predicted ``eval_score``."""

    name = "convai2-quality"
    dataset = "convai2"
    description = "Predict the human evaluator's 1-5 rating (eval_score) of a human-bot dialogue."
    protocol = (
        "dialogues with an eval_score, 5-fold cross-validation by dialogue, each config on its own "
        "(their raters and bots differ: figures are per config, never pooled); Spearman correlation "
        "of predicted and given scores over all held-out dialogues (and MAE)"
    )
    kind = "score"
    prediction = "the predicted eval_score (a number; 1 to 5 is the scale)"
    metric = "spearman"
    models: ClassVar[tuple[str, ...]] = ("random", "tfidf", "embed")
    published = (
        Figure(
            "-",
            "spearman",
            None,
            f"{NOT_FOUND}: the organisers (Dinan et al. 2020) publish no rating-prediction figure "
            "for these dialogues",
        ),
        *(
            Figure(
                f"{team} (organisers' human evaluation: rating / persona detection)",
                "rating",
                rating,
                "ConvAI2 organisers, 2018/README.md of DeepPavlov/convai: the human-evaluation "
                f"leaderboard (persona detection {persona}); it does not say it is the wild "
                "evaluation alone, and it rates the teams' bots, not a rating predictor",
            )
            for team, rating, persona in (
                ("Lost in Conversation", 3.11, 0.9),
                ("Hugging Face", 2.68, 0.98),
                ("KV Profile Memory (baseline)", 2.44, 0.76),
                ("human", 3.48, 0.96),
            )
        ),
    )
    measured = (
        Figure("random (volunteers)", "spearman", 0.0696, "measured here: seed 0, 593 rated dialogues"),
        Figure("tfidf (volunteers)", "spearman", 0.2783, "measured here: seed 0, 593 rated dialogues"),
        Figure("embed (volunteers)", "spearman", 0.2779, "measured here: seed 0, 593 rated dialogues"),
        Figure("tfidf (intermediate)", "spearman", 0.4925, "measured here: seed 0, 198 rated dialogues"),
    )

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """The rated dialogues of each config with enough of them, five folds per config
        (named ``fold1``.. for one config, ``<config>/fold1``.. for several)."""
        by_config: dict[str, list[Conversation]] = {}
        for conv in corpus:
            if conv.meta.get("eval_score") is not None:
                by_config.setdefault(conv.config, []).append(conv)
        enough = {config: rated for config, rated in by_config.items() if len(rated) >= MIN_RATED}
        if not enough:
            have = max((len(r) for r in by_config.values()), default=0)
            raise too_small(corpus, have, "rated dialogues", MIN_RATED, "5-fold cross-validation by dialogue")
        examples: list[Example] = []
        gold: list[Any] = []
        all_folds: list[Fold] = []
        details: dict[str, Any] = {"dialogues": {}, "score_counts": {}}
        for config, rated in enough.items():
            offset = len(examples)
            examples += [Example(c.conversation_id, c.conversation_id, _inputs(c)) for c in rated]
            scores = [int(c.meta["eval_score"]) for c in rated]
            gold += scores
            prefix = f"{config}/" if len(by_config) > 1 else ""
            for fold in cross_validation([c.conversation_id for c in rated], 5, seed):
                all_folds.append(
                    Fold(
                        prefix + fold.name,
                        tuple(i + offset for i in fold.train),
                        tuple(i + offset for i in fold.test),
                    )
                )
            details["dialogues"][config] = len(rated)
            details["score_counts"][config] = {str(k): scores.count(k) for k in range(1, 6)}
        too_few = {config: len(r) for config, r in by_config.items() if config not in enough}
        if too_few:
            details["not_evaluated"] = {
                c: f"{n} rated dialogues (fewer than {MIN_RATED})" for c, n in too_few.items()
            }
        if len(by_config) == 1:
            details = {k: v[next(iter(enough))] for k, v in details.items()}
        return TaskData(examples, gold, all_folds, details=details, context={"configs": list(enough)})

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """Spearman and MAE over every held-out dialogue of a config: one config gives
        ``{"spearman", "mae"}``, several give those per config, never a pooled figure."""
        metrics: dict[str, Any] = {}
        for config in data.context["configs"]:
            rows = [i for f in data.folds for i in f.test if data.examples[i]["config"] == config]
            gold = [float(data.gold[i]) for i in rows]
            guess = [float(predictions[data.examples[i].id]) for i in rows]
            rho = spearman(gold, guess)
            metrics[config] = {
                "spearman": None if rho is None else round(rho, 4),
                "mae": round(mean_absolute_error(gold, guess), 4),
            }
        return next(iter(metrics.values())) if len(metrics) == 1 else metrics

    def builtin(self, model: str, data: TaskData, seed: int) -> Model:
        """``random``: uniform on 1 to 5; ``tfidf`` and ``embed``: ridge regression on the
        dialogue's text (or its sides' mean embeddings) and its shape."""
        return _QualityModel(model, seed)


class _QualityModel:
    """Ridge regression on dialogue features, one fit per fold; ``random`` draws a new
    generator for each config, as if each were run alone."""

    def __init__(self, model: str, seed: int) -> None:
        self.model = model
        self.seed = seed
        self.rngs: dict[str, np.random.Generator] = {}
        self.reg: Any = None
        self.vectoriser: Any = None

    def _x(self, examples: Sequence[Example]) -> Any:
        from scipy.sparse import csr_matrix, hstack

        shape = csr_matrix(np.array([_shape(e["turns"]) for e in examples]))
        if self.model == "tfidf":
            return hstack([shape, self.vectoriser.transform([_text(e["turns"]) for e in examples])]).tocsr()
        dense = np.hstack(
            [
                np.array(
                    [
                        embed(_side(e["turns"], side)).mean(axis=0)
                        if _side(e["turns"], side)
                        else np.zeros(384)
                        for e in examples
                    ]
                )
                for side in ("human", "bot")
            ]
        )
        return hstack([shape, csr_matrix(dense)]).tocsr()

    def fit(self, examples: Sequence[Example], gold: Sequence[int]) -> None:
        if self.model == "random":
            return
        require("sklearn", "bench", "The regression model")
        from sklearn.linear_model import Ridge

        if self.model == "tfidf":
            self.vectoriser = fit_tfidf([_text(e["turns"]) for e in examples], min_df=2)
        self.reg = Ridge(alpha=3.0).fit(self._x(examples), np.array(gold, dtype=float))

    def predict(self, examples: Sequence[Example]) -> list[float]:
        if self.model == "random":
            config = examples[0]["config"] if examples else ""
            rng = self.rngs.setdefault(config, np.random.default_rng(self.seed))
            drawn: list[float] = rng.uniform(1, 5, len(examples)).tolist()
            return drawn
        clipped: list[float] = np.clip(self.reg.predict(self._x(examples)), 1, 5).tolist()
        return clipped
