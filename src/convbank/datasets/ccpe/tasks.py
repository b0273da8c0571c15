"""ccpe-preference-spans: tag the preference spans of user utterances by annotation type."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from convbank.datasets.ccpe.records import ANNOTATION_TYPES
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
from convbank.tasks.features import embed, fit_binary
from convbank.tasks.metrics import PRF, span_prf

_TOKEN = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def tokens(text: str) -> list[tuple[int, int]]:
    """Character offsets of word and punctuation tokens."""
    return [(m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _token_features(text: str, spans: list[tuple[int, int]], i: int) -> dict[str, float]:
    word = text[spans[i][0] : spans[i][1]]
    feats = {
        f"w={word.lower()}": 1.0,
        f"suf={word[-3:].lower()}": 1.0,
        "title": float(word.istitle()),
        "bias": 1.0,
    }
    for d in (-2, -1, 1, 2):
        j = i + d
        feats[f"w{d}={text[spans[j][0] : spans[j][1]].lower() if 0 <= j < len(spans) else '<pad>'}"] = 1.0
    return feats


def _decode(tags: list[str], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, start = [], None
    for i, tag in enumerate([*tags, "O"]):
        if start is not None and tag != "I":
            out.append((spans[start][0], spans[i - 1][1]))
            start = None
        if tag == "B" or (tag == "I" and start is None and i < len(tags)):
            start = i
    return out


class CcpePreferenceSpans(Task):
    """Span tagging by annotation type, 5-fold cross-validation by conversation.

    An example is one user utterance (``{conversation_id}/{turn_index}``) with its ``text``;
    a prediction is the list of its preference spans, ``{"start", "end", "type"}`` with
    character offsets (end exclusive) and an annotation type."""

    name = "ccpe-preference-spans"
    dataset = "ccpe"
    description = "Find the preference spans in user utterances and their annotation type."
    protocol = (
        "user utterances, 5-fold cross-validation by conversation; a B/I/O token tagger per "
        "annotation type; span-level exact-match precision, recall and F1 per type, summed over folds"
    )
    kind = "spans"
    prediction = "the list of spans {start, end, type} (character offsets, end exclusive)"
    metric = "micro_f1"
    labels = tuple(ANNOTATION_TYPES)
    models: ClassVar[tuple[str, ...]] = ("majority", "tfidf", "embed")
    published = (
        Figure(
            "-",
            "micro_f1",
            None,
            f"{NOT_FOUND}: Radlinski et al. 2019 (SIGDIAL) publish no span-tagging figure for CCPE-M",
        ),
    )

    def data(self, corpus: CorpusLike, seed: int = 0) -> TaskData:
        """Every non-empty user utterance with its preference spans, five folds by conversation."""
        examples, gold = [], []
        for conv in corpus:
            for t in conv.turns:
                if t.participant_id == "USER" and t.text.strip():
                    spans = sorted(
                        {
                            (a.start_char, a.end_char, a.label)
                            for a in conv.annotations_of(t.turn_index, "preference")
                            if a.start_char is not None and a.end_char is not None
                        }
                    )
                    examples.append(
                        Example(
                            f"{conv.conversation_id}/{t.turn_index}", conv.conversation_id, {"text": t.text}
                        )
                    )
                    gold.append([{"start": s, "end": e, "type": label} for s, e, label in spans])
        conversations = len({e.group for e in examples})
        if conversations < 2:
            raise too_small(
                corpus,
                conversations,
                "conversation(s) with user utterances",
                2,
                "5-fold cross-validation by conversation",
            )
        return TaskData(
            examples,
            gold,
            cross_validation([e.group for e in examples], 5, seed),
            details={"utterances": len(examples)},
        )

    def score(self, data: TaskData, predictions: Mapping[str, Any]) -> dict[str, Any]:
        """Exact-match span precision, recall and F1 per type, counts summed over the folds."""
        counts = {label: PRF(0, 0, 0) for label in ANNOTATION_TYPES}
        for fold in data.folds:
            for i in fold.test:
                guess = predictions[data.examples[i].id]
                for label in ANNOTATION_TYPES:
                    expected = {(g["start"], g["end"]) for g in data.gold[i] if g["type"] == label}
                    found = {(p["start"], p["end"]) for p in guess if p["type"] == label}
                    counts[label] += span_prf(expected, found)
        total = sum(counts.values(), PRF(0, 0, 0))
        per_type = {
            k: {
                "precision": round(v.precision, 4),
                "recall": round(v.recall, 4),
                "f1": round(v.f1, 4),
                "gold": v.tp + v.fn,
            }
            for k, v in counts.items()
        }
        return {"micro_f1": round(total.f1, 4), "per_type": per_type}

    def builtin(self, model: str, data: TaskData, seed: int) -> Model:
        """``majority`` (the majority tag is O: no spans), or a B/I/O logistic-regression
        tagger per type on token features (``embed`` adds the utterance's embedding)."""
        return _Tagger(model, data)


class _Tagger:
    def __init__(self, model: str, data: TaskData) -> None:
        self.model = model
        self.index = {e.id: i for i, e in enumerate(data.examples)}
        self.utts: list[tuple[str, str, set[tuple[str, int, int]]]] = [
            (e.group, e["text"], set()) for e in data.examples
        ]
        self.spans = [tokens(e["text"]) for e in data.examples]
        self.vectors = embed([e["text"] for e in data.examples]) if model == "embed" else None
        self.train = np.zeros(0, dtype=np.int64)

    def fit(self, examples: Sequence[Example], gold: Sequence[list[dict[str, Any]]]) -> None:
        self.train = np.array([self.index[e.id] for e in examples], dtype=np.int64)
        for i, spans in zip(self.train, gold, strict=True):
            self.utts[i] = (
                self.utts[i][0],
                self.utts[i][1],
                {(g["type"], g["start"], g["end"]) for g in spans},
            )

    def predict(self, examples: Sequence[Example]) -> list[list[dict[str, Any]]]:
        test = np.array([self.index[e.id] for e in examples], dtype=np.int64)
        out: list[list[dict[str, Any]]] = [[] for _ in examples]
        for label in ANNOTATION_TYPES:
            found = _tag(
                self.model, label, self.utts, self.spans, train=self.train, test=test, vectors=self.vectors
            )
            for n, bounds in enumerate(found):
                out[n] += [{"start": s, "end": e, "type": label} for s, e in bounds]
        for predicted in out:
            predicted.sort(key=lambda x: (x["start"], x["end"], x["type"]))
        return out


def _tag(
    model: str,
    label: str,
    utts: list[Any],
    spans: list[Any],
    *,
    train: np.ndarray,
    test: np.ndarray,
    vectors: Any,
) -> list[list[tuple[int, int]]]:
    if model == "majority":
        return [[] for _ in test]  # the majority tag is O: no spans
    require("sklearn", "bench", "The span taggers")
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction import DictVectorizer

    def rows(idx: np.ndarray) -> tuple[list[dict[str, float]], list[str], list[int]]:
        feats, tags, owner = [], [], []
        for i in idx:
            _, text, gold = utts[i]
            bounds = [(s, e) for lab, s, e in gold if lab == label]
            for k, (s, e) in enumerate(spans[i]):
                inside = [(gs, ge) for gs, ge in bounds if gs <= s and e <= ge]
                tags.append("O" if not inside else ("B" if any(gs == s for gs, _ in inside) else "I"))
                feats.append(_token_features(text, spans[i], k))
                owner.append(int(i))
        return feats, tags, owner

    f_train, y_train, o_train = rows(train)
    f_test, _, o_test = rows(test)
    vec = DictVectorizer().fit(f_train)
    x_train, x_test = vec.transform(f_train), vec.transform(f_test)
    if vectors is not None:
        x_train = hstack([x_train, csr_matrix(vectors[o_train])]).tocsr()
        x_test = hstack([x_test, csr_matrix(vectors[o_test])]).tocsr()
    scores = {}
    for tag in ("B", "I"):
        clf = fit_binary(x_train, [t == tag for t in y_train], balanced=False)
        scores[tag] = clf.decision_function(x_test)
    tags = [
        "O" if max(b, i) < 0 else ("B" if b >= i else "I")
        for b, i in zip(scores["B"], scores["I"], strict=True)
    ]
    out: list[list[tuple[int, int]]] = []
    pos = 0
    for i in test:
        n = len(spans[i])
        out.append(_decode(tags[pos : pos + n], spans[i]))
        pos += n
    return out
