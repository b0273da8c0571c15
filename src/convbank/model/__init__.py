"""The unified conversation model and its Arrow schemas (pure: no I/O)."""

from convbank.model.schema import (
    SCHEMA_VERSION,
    TABLE_SCHEMAS,
    UNIFIED_TABLES,
    conversations_to_tables,
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
    "tables_to_conversations",
]
