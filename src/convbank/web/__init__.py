"""``convbank serve``: a read-only web viewer over the bank (Starlette, Jinja2, no scripts).

:func:`create_app` builds the ASGI app; ``convbank[web]`` installs Starlette and Uvicorn.
"""

from convbank.web.app import create_app

__all__ = ["create_app"]
