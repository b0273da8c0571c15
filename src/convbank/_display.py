"""How a :class:`~convbank.Conversation` shows itself in Jupyter: the renderer that
:mod:`convbank` sets (the viewer's layout, from :mod:`convbank.web.notebook`), kept in a module
of no imports so that the model, at the bottom, can use what the top provides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HTML_RENDERER: Callable[[Any], str] | None = None
"""Renders a conversation as HTML; plain escaped text while unset."""
