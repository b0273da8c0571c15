"""convai2-quality's ``engagement`` model: its features by hand, its run through the model
protocol, and its measured figure on the real volunteers dialogues."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from convbank.bench import TASKS, run
from convbank.datasets.convai2 import tasks as quality
from convbank.store import Bank
from convbank.tasks import Example


def _unit(text: str) -> np.ndarray:
    """A stand-in embedding: a unit vector drawn from the text's hash (equal texts, equal
    vectors)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).normal(size=384)
    return np.asarray(v / np.linalg.norm(v))


def test_engagement_features_by_hand() -> None:
    """The bot says the same line twice (a duplicate, self-similarity 1.0), the human asks
    one question in two turns, laughs and says goodbye; the bot's second line is its persona."""
    turns = [
        {"speaker": "human", "text": "hi, how are you?"},
        {"speaker": "bot", "text": "i like dogs"},
        {"speaker": "human", "text": "lol ok bye"},
        {"speaker": "bot", "text": "i like dogs"},
    ]
    example = Example("d1", "d1", {"turns": turns, "bot_persona": ["i like dogs"], "config": "x"})
    f = quality._engagement(example, _unit)
    assert len(f) == 20
    assert f[:3] == [np.log1p(2), np.log1p(2), np.log1p(4)]
    assert f[4] == np.log1p(4 + 3)  # the human's words: hi how are you / lol ok bye
    assert f[6:10] == [0.5, 0.0, 0.5, 0.0]  # human questions, bot questions, bot and human duplicates
    assert f[10] == pytest.approx(1.0) and f[11] == pytest.approx(1.0)  # the bot repeats itself
    assert f[14] == pytest.approx(1.0)  # every bot line is a persona line
    assert f[15:] == [1.0, 0.0, 1.0, 1.0, 0.0]  # warm, not cold, goodbye, human first, both spoke
    silent = Example("d2", "d2", {"turns": turns[:1], "bot_persona": [], "config": "x"})
    assert quality._engagement(silent, _unit)[-1] == 1.0 and quality._engagement(silent, _unit)[10] == 0.0


def test_engagement_runs_through_the_model_protocol(built: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    """The built-in runs as any model does (setup, then fit and predict per fold), here with
    stand-in embeddings so that it is quick; its predictions are on the 1-5 scale."""
    monkeypatch.setattr(quality, "embed", lambda texts: np.array([_unit(t) for t in texts]).reshape(-1, 384))
    assert TASKS["convai2-quality"].models[-1] == "engagement"
    result = run("convai2-quality", model="engagement", config="intermediate")
    assert result.details["dialogues"] == 198 and len(result.predictions) == 198
    assert all(1.0 <= p <= 5.0 for p in result.predictions.values())
    assert result.metrics["spearman"] > 0.3  # the TF-IDF and count features alone carry it


def test_the_engagement_figures_stand_beside_tfidf() -> None:
    """The reference figures of the engagement model (``convbank bench convai2-quality -m
    engagement`` reproduces them: ~160 CPU seconds of embedding, too long for the suite)."""
    figures = {f.system: f.value for f in TASKS["convai2-quality"].measured}
    assert figures["engagement (volunteers)"] == 0.3211 and figures["tfidf (volunteers)"] == 0.2783
    assert figures["engagement (volunteers)"] > max(
        figures["tfidf (volunteers)"], figures["embed (volunteers)"]
    )
