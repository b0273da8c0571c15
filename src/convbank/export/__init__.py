"""Exporters from the bank to the formats other tools read.

:func:`export` writes one format into a folder; ``where`` (a SQL condition on the
``conversations`` view) selects conversations; ``as_participant`` picks the side for
``chat`` and ``parlai``. :func:`to_hf` gives a corpus as a Hugging Face ``DatasetDict`` in
memory. Consumers (``datasets``, ``mlcroissant``) are optional extras, imported only when
their format is asked for. What is dataset-specific in a format (the chat side and system
message, the Hugging Face features, the ParlAI context, ConvoKit's speakers) each dataset
says through its hooks (:class:`convbank.datasets.Dataset`); the exporters name none.

Each format is a :class:`Format` declared by its module beside its writer, collected by
:data:`formats` with those other packages add through the entry-point group
``convbank.formats`` (:data:`FORMAT_GROUP`); :data:`FORMATS` is their names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from convbank.export._core import Selection, part_name, per_part
    from convbank.export._format import Format, Plan, Reader, ReadOptions, Rejected, Sniffer, Writer
    from convbank.export._registry import FORMAT_GROUP, formats
    from convbank.export._run import export
    from convbank.export.chat import chat_record
    from convbank.export.hf import to_hf
    from convbank.export.source import export_source

    FORMATS: tuple[str, ...]
    """Every export format's name, the registry's (:data:`formats`: convbank's own, then
    plugins'), read anew each time."""

__all__ = [
    "FORMATS",
    "FORMAT_GROUP",
    "Format",
    "Plan",
    "ReadOptions",
    "Reader",
    "Rejected",
    "Selection",
    "Sniffer",
    "Writer",
    "chat_record",
    "export",
    "export_source",
    "formats",
    "part_name",
    "per_part",
    "to_hf",
]

_LAZY = {
    "Selection": "convbank.export._core",
    "Format": "convbank.export._format",
    "Plan": "convbank.export._format",
    "Reader": "convbank.export._format",
    "ReadOptions": "convbank.export._format",
    "Rejected": "convbank.export._format",
    "Sniffer": "convbank.export._format",
    "Writer": "convbank.export._format",
    "part_name": "convbank.export._core",
    "per_part": "convbank.export._core",
    "FORMAT_GROUP": "convbank.export._registry",
    "formats": "convbank.export._registry",
    "export": "convbank.export._run",
    "chat_record": "convbank.export.chat",
    "to_hf": "convbank.export.hf",
    "export_source": "convbank.export.source",
}
"""Imported on first use: ``import convbank.export`` imports no pyarrow."""


def __getattr__(name: str) -> Any:
    """The names of :data:`_LAZY`, imported on first use; ``FORMATS``, every format's name
    (the registry's, plugins included, read anew each time)."""
    if name == "FORMATS":
        return tuple(importlib.import_module("convbank.export._registry").written())
    if name not in _LAZY:
        raise AttributeError(f"module 'convbank.export' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
