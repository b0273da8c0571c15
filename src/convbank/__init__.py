"""convbank: conversational datasets fetched, read faithfully, mapped onto one conversation
model, stored as Parquet and queried with DuckDB.

>>> import convbank
>>> corpus = convbank.load("casino", split="train")   # after `convbank build casino`
>>> corpus["938"].turns[0].text
'Hello!, how are you doing?'
"""

from convbank import catalog
from convbank._version import __version__
from convbank.build import BuildReport, build, read_raw
from convbank.errors import (
    BenchError,
    BuildError,
    ChecksumError,
    ConvbankError,
    ConversationNotFoundError,
    DamagedBankError,
    DownloadError,
    ExportError,
    FormatError,
    MissingExtraError,
    NotBuiltError,
    OfflineError,
    PluginError,
    QueryError,
    ScaffoldError,
    ServeError,
    SetupError,
    SourceError,
    UnknownDatasetError,
)
from convbank.fetch import Fetcher
from convbank.model import Annotation, Conversation, Participant, Turn
from convbank.model import types as _types
from convbank.query import Corpus, load, sql


def _conversation_html(conversation: Conversation) -> str:
    """A conversation in the viewer's layout, for Jupyter (the templates load when first shown)."""
    from convbank.web.notebook import conversation_html

    return conversation_html(conversation)


_types.HTML_RENDERER = _conversation_html

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
    "DamagedBankError",
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
    "ServeError",
    "SetupError",
    "SourceError",
    "Turn",
    "UnknownDatasetError",
    "__version__",
    "build",
    "catalog",
    "load",
    "read_raw",
    "sql",
]
