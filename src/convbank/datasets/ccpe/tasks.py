"""ccpe-preference-spans: tag the preference spans of user utterances by annotation type."""

from __future__ import annotations

import re
from typing import Any, ClassVar

import numpy as np

from convbank.bench import NOT_FOUND, Figure, Task, folds, too_small
from convbank.bench.features import embed, fit_binary
from convbank.bench.metrics import PRF, span_prf
from convbank.bench.progress import progress
from convbank.datasets.ccpe.dataset import ANNOTATION_TYPES
from convbank.errors import require
from convbank.query import Corpus

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
    """Span tagging by annotation type, 5-fold cross-validation by conversation."""

    name = "ccpe-preference-spans"
    dataset = "ccpe"
    description = "Find the preference spans in user utterances and their annotation type."
    protocol = (
        "user utterances, 5-fold cross-validation by conversation; a B/I/O token tagger per "
        "annotation type; span-level exact-match precision, recall and F1 per type, summed over folds"
    )
    models: ClassVar[tuple[str, ...]] = ("majority", "tfidf", "embed")
    published = (
        Figure(
            "-",
            "micro_f1",
            None,
            f"{NOT_FOUND}: Radlinski et al. 2019 (SIGDIAL) publish no span-tagging figure for CCPE-M",
        ),
    )

    def evaluate(self, corpus: Corpus, model: str, seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """Tag tokens with a logistic regression per type and tag; score spans."""
        utts: list[tuple[str, str, set[tuple[str, int, int]]]] = []
        for conv in corpus:
            for t in conv.turns:
                if t.participant_id == "USER" and t.text.strip():
                    gold = {
                        (a.label, a.start_char, a.end_char)
                        for a in conv.annotations_of(t.turn_index, "preference")
                        if a.start_char is not None and a.end_char is not None
                    }
                    utts.append((conv.conversation_id, t.text, gold))
        conversations = len({u[0] for u in utts})
        if conversations < 2:
            raise too_small(
                corpus,
                conversations,
                "conversation(s) with user utterances",
                2,
                "5-fold cross-validation by conversation",
            )
        spans = [tokens(text) for _, text, _ in utts]
        counts = {label: PRF(0, 0, 0) for label in ANNOTATION_TYPES}
        vectors = embed([text for _, text, _ in utts]) if model == "embed" else None
        for test in progress(folds([u[0] for u in utts], 5, seed), f"{model}: folds"):
            train = np.setdiff1d(np.arange(len(utts)), test)
            for label in ANNOTATION_TYPES:
                predicted = self._tag(model, label, utts, spans, train=train, test=test, vectors=vectors)
                for n, i in enumerate(test):
                    expected = {(i, s, e) for lab, s, e in utts[i][2] if lab == label}
                    counts[label] += span_prf(expected, {(i, *p) for p in predicted[n]})
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
        return {"micro_f1": round(total.f1, 4), "per_type": per_type}, {"utterances": len(utts)}

    @staticmethod
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
