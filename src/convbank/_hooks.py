"""What the layers at the bottom use of the layers at the top, set by :mod:`convbank` when it
is imported (always first: it is the package): how a :class:`~convbank.Conversation` renders
itself in Jupyter (the viewer's layout), how a :class:`~convbank.Corpus` does, and how a
:class:`~convbank.Corpus` becomes Hugging Face ``datasets`` (the exporter). A module of no
imports, so that the model and the corpus call upwards without importing upwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HTML_RENDERER: Callable[[Any], str] | None = None
"""Renders a conversation as HTML; plain escaped text while unset."""

CORPUS_HTML: Callable[[Any], str] | None = None
"""Renders a corpus as HTML (:func:`convbank.web.notebook.corpus_html`)."""

TO_HF: Callable[..., Any] | None = None
"""``to_hf(corpus, config, **options)``: :func:`convbank.export.hf.to_hf`."""


def corpus_html(corpus: Any) -> str:
    """A corpus's HTML for Jupyter (``Corpus._repr_html_``): :data:`CORPUS_HTML`'s, or its
    escaped ``repr`` while that is unset. Example: ``corpus_html(convbank.load("casino"))``."""
    if CORPUS_HTML is None:
        import html

        return f"<pre>{html.escape(repr(corpus))}</pre>"
    return CORPUS_HTML(corpus)
