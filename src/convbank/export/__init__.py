"""Exporters from the bank to the formats other tools read.

:func:`export` writes one format into a folder; ``where`` (a SQL condition on the
``conversations`` view) selects conversations; ``as_participant`` picks the side for
``chat`` and ``parlai``. :func:`to_hf` gives a corpus as a Hugging Face ``DatasetDict`` in
memory. Consumers (``datasets``, ``mlcroissant``) are optional extras, imported only when
their format is asked for. What is dataset-specific in a format (the chat side and system
message, the Hugging Face features, the ParlAI context, ConvoKit's speakers) each dataset
says through its hooks (:class:`convbank.datasets.Dataset`); the exporters name none.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convbank.export._core import Selection
    from convbank.export._run import export
    from convbank.export.chat import chat_record
    from convbank.export.hf import to_hf
    from convbank.export.source import export_source

__all__ = ["FORMATS", "Selection", "chat_record", "export", "export_source", "to_hf"]

FORMATS = ("source", "hf", "convokit", "parlai", "chat", "jsonl", "parquet", "csv", "croissant")
"""Every export format."""

_LAZY = {
    "Selection": "convbank.export._core",
    "export": "convbank.export._run",
    "chat_record": "convbank.export.chat",
    "to_hf": "convbank.export.hf",
    "export_source": "convbank.export.source",
}
"""Imported on first use: the command line reads :data:`FORMATS` without pyarrow."""


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'convbank.export' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
