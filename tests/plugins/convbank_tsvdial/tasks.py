"""tsvdial-intents: the intents of each test turn, predicted from the training turns; found by
``convbank bench`` through :meth:`TsvDialPresentation.tasks`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from convbank.tasks import NOT_FOUND, CorpusLike, Example, Figure, Fold, Model, Task, TaskData, too_small
from convbank.tasks.metrics import micro_prf


class Intents(Task):
    """Multi-label intent prediction per turn: an example is a turn (its ``text`` and
    ``speaker``), a prediction the list of its intents."""

    name = "tsvdial-intents"
    dataset = "tsvdial"
    description = "Predict the intents of each test turn (multi-label)."
    protocol = "train, then test; micro F1 over the test turns' intents"
    kind = "labels"
    prediction = "the list of the turn's intents"
    metric = "micro_f1"
    models: ClassVar[tuple[str, ...]] = ("majority", "by-speaker")
    published = (Figure("-", "micro_f1", None, f"{NOT_FOUND}: a test dataset publishes no figures"),)

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """Every turn; the train split's to learn from, the others' to predict."""
        train: list[tuple[Example, list[str]]] = []
        test: list[tuple[Example, list[str]]] = []
        for conv in corpus:
            for t in conv.turns:
                labels = [a.label for a in conv.annotations_of(t.turn_index, "intent")]
                example = Example(
                    f"{conv.split}/{conv.conversation_id}/{t.turn_index}",
                    conv.conversation_id,
                    {"text": t.text, "speaker": t.participant_id},
                )
                (train if conv.split == "train" else test).append((example, labels))
        if not train or not test:
            raise too_small(corpus, len(test), "test turns", 1, "training, then testing")
        pairs = train + test
        fold = Fold("test", tuple(range(len(train))), tuple(range(len(train), len(pairs))))
        return TaskData(
            [e for e, _ in pairs], [g for _, g in pairs], [fold], details={"test_turns": len(test)}
        )

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """Micro precision, recall and F1."""
        rows = [i for f in data.folds for i in f.test]
        prf = micro_prf(
            [set(data.gold[i]) for i in rows], [set(predictions[data.examples[i].id]) for i in rows]
        )
        return {"micro_f1": prf.f1, "precision": prf.precision, "recall": prf.recall}

    def builtin(self, model: str, data: TaskData, seed: int) -> Model:
        """``majority``: every turn gets the most frequent training intent; ``by-speaker``: the
        most frequent training intent of the turn's speaker."""
        return _Counts(model == "by-speaker")


class _Counts:
    def __init__(self, by_speaker: bool) -> None:
        self.by_speaker = by_speaker
        self.counts: dict[str, Counter[str]] = {}

    def fit(self, examples: Sequence[Example], gold: Sequence[list[str]]) -> None:
        for example, labels in zip(examples, gold, strict=True):  # in source order: ties go to the first seen
            self.counts.setdefault(example["speaker"], Counter()).update(labels)

    def predict(self, examples: Sequence[Example]) -> list[list[str]]:
        overall = sum(self.counts.values(), Counter()).most_common(1)[0][0]

        def guess(speaker: str) -> str:
            mine = self.counts.get(speaker)
            return mine.most_common(1)[0][0] if self.by_speaker and mine else overall

        return [[guess(e["speaker"])] for e in examples]
