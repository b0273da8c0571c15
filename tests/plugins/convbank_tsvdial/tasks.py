"""tsvdial-intents: the intents of each test turn, predicted from the training turns; found by
``convbank bench`` through :meth:`TsvDial.tasks`."""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

from convbank.bench import NOT_FOUND, Figure, Task, too_small
from convbank.bench.metrics import micro_prf
from convbank.query import Corpus


class Intents(Task):
    """Multi-label intent prediction per turn."""

    name = "tsvdial-intents"
    dataset = "tsvdial"
    description = "Predict the intents of each test turn (multi-label)."
    protocol = "train, then test; micro F1 over the test turns' intents"
    models: ClassVar[tuple[str, ...]] = ("majority", "by-speaker")
    published = (Figure("-", "micro_f1", None, f"{NOT_FOUND}: a test dataset publishes no figures"),)

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """``majority``: every turn gets the most frequent training intent; ``by-speaker``: the
        most frequent training intent of the turn's speaker."""
        train: dict[str, Counter[str]] = {}
        gold: list[set[str]] = []
        speakers: list[str] = []
        for conv in corpus:
            for t in conv.turns:
                labels = [a.label for a in conv.annotations_of(t.turn_index, "intent")]
                if conv.split == "train":  # counted in source order: ties go to the first seen
                    train.setdefault(t.participant_id, Counter()).update(labels)
                else:
                    gold.append(set(labels))
                    speakers.append(t.participant_id)
        if not train or not gold:
            raise too_small(corpus, len(gold), "test turns", 1, "training, then testing")
        overall = sum(train.values(), Counter()).most_common(1)[0][0]

        def guess(speaker: str) -> str:
            counts = train.get(speaker)
            return counts.most_common(1)[0][0] if model == "by-speaker" and counts else overall

        prf = micro_prf(gold, [{guess(s)} for s in speakers])
        return {"micro_f1": prf.f1, "precision": prf.precision, "recall": prf.recall}, {
            "test_turns": len(gold)
        }
