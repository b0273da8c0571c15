"""Where the command line writes: rich consoles for stdout and stderr, JSON lines, cells."""

from __future__ import annotations

import sys
from typing import Any

import msgspec
from rich.console import Console

__all__ = ["cell", "echo_json", "err", "out"]

out = Console()
err = Console(stderr=True)
_json = msgspec.json.Encoder()


def echo_json(data: Any) -> None:
    """Write ``data`` as one line of JSON on stdout."""
    sys.stdout.buffer.write(_json.encode(data) + b"\n")
    sys.stdout.flush()


def cell(value: Any) -> str:
    """A value as table or CSV text: empty for null, JSON for lists and objects."""
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return _json.encode(value).decode()
    return str(value)
