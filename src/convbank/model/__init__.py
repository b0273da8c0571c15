"""The unified conversation model and its Arrow schemas (pure: no I/O)."""

from convbank.model.schema import (
    SCHEMA_VERSION,
    UNIFIED_TABLES,
    conversations_to_tables,
    table_schemas,
    tables_to_conversations,
)
from convbank.model.types import Annotation, Conversation, Json, Part, Participant, Turn

__all__ = [
    "SCHEMA_VERSION",
    "TABLE_SCHEMAS",
    "UNIFIED_TABLES",
    "Annotation",
    "Conversation",
    "Json",
    "Part",
    "Participant",
    "Turn",
    "conversations_to_tables",
    "table_schemas",
    "tables_to_conversations",
]


def __getattr__(name: str) -> object:
    """``TABLE_SCHEMAS`` (see :mod:`convbank.model.schema`), made when first read."""
    if name == "TABLE_SCHEMAS":
        return table_schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
