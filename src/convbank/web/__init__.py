"""``convbank serve``: a read-only web viewer over the bank (Starlette, Jinja2, no scripts).

:func:`create_app` builds the ASGI app; ``convbank[web]`` installs Starlette and Uvicorn.
:mod:`convbank.web.notebook` renders a conversation for Jupyter with the same templates and
needs neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convbank.web.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    """``create_app`` is imported when asked for (Starlette is the ``web`` extra's)."""
    if name == "create_app":
        from convbank.web.app import create_app

        return create_app
    raise AttributeError(f"module 'convbank.web' has no attribute {name!r}")
