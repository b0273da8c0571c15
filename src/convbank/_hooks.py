"""What the layers at the bottom use of the layers at the top, set by :mod:`convbank` when it
is imported (always first: it is the package): how a :class:`~convbank.Conversation` renders
itself in Jupyter (the viewer's layout) and how a :class:`~convbank.Corpus` becomes Hugging
Face ``datasets`` (the exporter). A module of no imports, so that the model and the corpus
call upwards without importing upwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HTML_RENDERER: Callable[[Any], str] | None = None
"""Renders a conversation as HTML; plain escaped text while unset."""

TO_HF: Callable[..., Any] | None = None
"""``to_hf(corpus, config, **options)``: :func:`convbank.export.hf.to_hf`."""
