"""Datasets: one package each, with everything convbank knows about it.

``convbank.datasets.<name>`` holds a built-in dataset's raw types (``records.py``), card and
files, reader, mapper (both ways) and source writer (``dataset.py``), its side tables, and how
the other layers present it (``present.py``, with its checks and benchmark tasks). The
built-in ones are listed in :data:`BUILTIN`; other packages add datasets through the
entry-point group ``convbank.datasets`` (see :mod:`convbank.registry` and
``docs/adding-a-dataset.md``).

This module is the interface a dataset is written against: :class:`Dataset` and what its
hooks take and return, and the helpers of the built-in ones (decoding JSON with one-line
errors, measuring and writing a JSON source's exact layout).
"""

from convbank.datasets._arrow import arrow_type
from convbank.datasets._base import (
    ConfigSpec,
    Dataset,
    Int64,
    Shard,
    SideTable,
    SourceFile,
    SourcePaths,
    Strict,
    contract_problem,
)
from convbank.datasets._checks import SEVERITIES, Check, CheckFunction, CheckList, Problem, Severity
from convbank.datasets._json import decode_json, no_records
from convbank.datasets._jsonlist import JsonListDataset
from convbank.datasets._layout import (
    LAYOUT_KEY,
    Encoder,
    Frame,
    compact,
    frame_of,
    indented,
    measure,
    spaced,
    write_framed,
)
from convbank.datasets._present import (
    ActionTable,
    Badge,
    Context,
    CrossTab,
    Distribution,
    MetaField,
    Note,
    Presentation,
    SideLookup,
    TerminalTurn,
    ViewerTurn,
    meta_distribution,
    system_lines,
)
from convbank.model import Part

BUILTIN: tuple[str, ...] = (
    "convbank.datasets.casino:Casino",
    "convbank.datasets.ccpe:Ccpe",
    "convbank.datasets.curiosity:Curiosity",
    "convbank.datasets.pec:Pec",
    "convbank.datasets.convai2:ConvAI2",
)
"""The built-in datasets, in catalog order, as ``module:attribute``: the one way convbank
finds its own datasets. The catalog imports them directly (one package for
``catalog.get(name)``, with no package scan and no :mod:`importlib.metadata`, which the
CLI's start-up cannot afford), so they load from a source checkout or a stale install alike;
they are not entry points of convbank's metadata, and a stale install that still declares
them as such is skipped. A dataset added to convbank is its package and its line here."""

__all__ = [
    "BUILTIN",
    "LAYOUT_KEY",
    "SEVERITIES",
    "ActionTable",
    "Badge",
    "Check",
    "CheckFunction",
    "CheckList",
    "ConfigSpec",
    "Context",
    "CrossTab",
    "Dataset",
    "Distribution",
    "Encoder",
    "Frame",
    "Int64",
    "JsonListDataset",
    "MetaField",
    "Note",
    "Part",
    "Presentation",
    "Problem",
    "Severity",
    "Shard",
    "SideLookup",
    "SideTable",
    "SourceFile",
    "SourcePaths",
    "Strict",
    "TerminalTurn",
    "ViewerTurn",
    "arrow_type",
    "compact",
    "contract_problem",
    "decode_json",
    "frame_of",
    "indented",
    "measure",
    "meta_distribution",
    "no_records",
    "spaced",
    "system_lines",
    "write_framed",
]
