"""convbank: conversational datasets fetched, read faithfully, mapped onto one conversation
model, stored as Parquet and queried with DuckDB.

>>> import convbank
>>> corpus = convbank.load("casino", split="train")   # after `convbank build casino`
>>> corpus["938"].turns[0].text
'Hello!, how are you doing?'
"""

from convbank import catalog
from convbank.build import BuildReport, build, read_raw
from convbank.errors import (
    BuildError,
    ChecksumError,
    ConvbankError,
    ConversationNotFoundError,
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
    ServeError,
    SetupError,
    SourceError,
    UnknownDatasetError,
)
from convbank.fetch import Fetcher
from convbank.model import Annotation, Conversation, Participant, Turn
from convbank.query import Corpus, load, sql

__version__ = "0.1.0"

__all__ = [
    "Annotation",
    "BuildError",
    "BuildReport",
    "ChecksumError",
    "ConvbankError",
    "Conversation",
    "ConversationNotFoundError",
    "Corpus",
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
