"""convbank: conversational datasets fetched, read faithfully, mapped onto one conversation
model, stored as Parquet and queried with DuckDB.

>>> import convbank
>>> corpus = convbank.load("casino", split="train")   # after `convbank build casino`
>>> corpus["938"].turns[0].text
'Hello!, how are you doing?'
"""

# ruff: noqa: E402 (the script's signal handlers are set before anything else is imported)
from convbank import _starting

_starting.guard()  # the convbank script's signal handlers, before anything else is imported

import importlib as _importlib
import sys as _sys
import types as _types
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from convbank._version import __version__
from convbank.errors import (
    BenchError,
    BuildError,
    ChecksumError,
    ConvbankError,
    ConversationNotFoundError,
    CorpusImportError,
    DamagedBankError,
    DiskFullError,
    DownloadError,
    ExportError,
    FormatError,
    MissingExtraError,
    NotBuiltError,
    OfflineError,
    PluginError,
    QueryError,
    ScaffoldError,
    SchemaVersionError,
    ServeError,
    SetupError,
    SourceError,
    UnknownDatasetError,
    UnknownFieldError,
)

if _TYPE_CHECKING:
    from convbank import catalog
    from convbank.build import BuildReport, build, read_raw
    from convbank.examples import concatenate, mix
    from convbank.fetch import Fetcher
    from convbank.imports import import_conversations
    from convbank.model import Annotation, Conversation, Participant, Turn
    from convbank.query import Corpus, load, sql, sql_batches

_SUBMODULES = (
    "bench",
    "catalog",
    "charts",
    "cli",
    "corpus",
    "datasets",
    "engines",
    "errors",
    "examples",
    "export",
    "fetch",
    "imports",
    "model",
    "query",
    "registry",
    "report",
    "scaffold",
    "settings",
    "stats",
    "store",
    "tasks",
    "testing",
    "torch",
    "validate",
    "web",
)
"""The public submodules, each an attribute of :mod:`convbank` imported on first use
(``import convbank; convbank.registry.tasks``) with no cost to ``import convbank``.
``convbank.build`` is the function, whatever imports its module (``from convbank.build import
BuildReport`` reads the module)."""

_LAZY = {
    **{name: (f"convbank.{name}", None) for name in _SUBMODULES},
    "BuildReport": ("convbank.build", "BuildReport"),
    "build": ("convbank.build", "build"),
    "read_raw": ("convbank.build", "read_raw"),
    "Fetcher": ("convbank.fetch", "Fetcher"),
    "import_conversations": ("convbank.imports", "import_conversations"),
    "Annotation": ("convbank.model", "Annotation"),
    "Conversation": ("convbank.model", "Conversation"),
    "Participant": ("convbank.model", "Participant"),
    "Turn": ("convbank.model", "Turn"),
    "Corpus": ("convbank.query", "Corpus"),
    "load": ("convbank.query", "load"),
    "sql": ("convbank.query", "sql"),
    "sql_batches": ("convbank.query", "sql_batches"),
    "mix": ("convbank.examples", "mix"),
    "concatenate": ("convbank.examples", "concatenate"),
}
"""Names imported on first use, so that ``convbank --version`` and ``import convbank``
cost no pyarrow or DuckDB import: the submodules and the API's names."""


def __getattr__(name: str) -> _Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'convbank' has no attribute {name!r}")
    module_name, attr = _LAZY[name]
    module = _importlib.import_module(module_name)
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


class _Package(_types.ModuleType):
    """The package's class: importing the module ``convbank.build`` (as ``convbank.cli`` or
    ``convbank.bench`` do) binds ``convbank.build`` to the module; it stays the function."""

    def __setattr__(self, name: str, value: _Any) -> None:
        if name == "build" and isinstance(value, _types.ModuleType):
            value = value.build
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


__all__ = [
    "Annotation",
    "BenchError",
    "BuildError",
    "BuildReport",
    "ChecksumError",
    "ConvbankError",
    "Conversation",
    "ConversationNotFoundError",
    "Corpus",
    "CorpusImportError",
    "DamagedBankError",
    "DiskFullError",
    "DownloadError",
    "ExportError",
    "Fetcher",
    "FormatError",
    "MissingExtraError",
    "NotBuiltError",
    "OfflineError",
    "Participant",
    "PluginError",
    "QueryError",
    "ScaffoldError",
    "SchemaVersionError",
    "ServeError",
    "SetupError",
    "SourceError",
    "Turn",
    "UnknownDatasetError",
    "UnknownFieldError",
    "__version__",
    "build",
    "catalog",
    "concatenate",
    "import_conversations",
    "load",
    "mix",
    "read_raw",
    "sql",
    "sql_batches",
]
