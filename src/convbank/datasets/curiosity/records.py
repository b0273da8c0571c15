"""Curiosity's raw records as published, its vocabularies (dialog acts, fact sources,
ratings) and the fact database's schema."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from msgspec import UNSET, UnsetType

from convbank._lazy import lazy
from convbank.datasets import Int64, SideLookup, Strict
from convbank.model import Conversation

if TYPE_CHECKING:
    import pyarrow as pa
else:
    pa = lazy("pyarrow")


DIALOG_ACTS = (
    "request_topic",
    "request_aspect",
    "request_followup",
    "request_other",
    "inform_response",
    "inform_related",
    "inform_unrelated",
    "feedback_positive",
    "feedback_negative",
    "feedback_ask",
    "offer_topic",
    "offer_aspect",
    "offer_followup",
    "offer_other",
    "offer_accept",
    "offer_decline",
    "shift_aspect",
    "social_greeting",
    "social_goodbye",
    "social_thanking",
    "social_apology",
)
"""The 21 dialog acts of the released data. The paper (Rodriguez et al. 2020, Table 1)
describes the first sixteen; its LaTeX source lists the counts of all 21 in the data
(shift_aspect 201, social_greeting 200, social_goodbye 90, social_thanking 399,
social_apology 27): github.com/EntilZha/publications, 2020_emnlp_curiosity/sections/20-data.tex.
The Hugging Face loader keeps the acts as plain strings (no class list)."""

FACT_SOURCES = ("section", "known", "random")
FACT_DB = "wiki_sql.sqlite.db"


class Fact(Strict):
    """A fact shown to the assistant; ``fid`` is ``fact.id`` in the fact database."""

    fid: Int64
    used: bool
    source: str | UnsetType = UNSET
    """Missing on some early facts."""


class Message(Strict):
    """One message (its text can be ``""``); ``dialog_acts`` is a list, ``[]`` or null
    (the authors' reader takes null as "not annotated")."""

    message: str
    liked: bool
    sender: str
    facts: list[Fact]
    message_id: str
    dialog_acts: list[str] | None


class Dialog(Strict):
    """One dialogue as published. Types are those of the released records: ``user_id`` and
    ``assistant_id`` are numeric strings ("314"; the Hugging Face loader casts them to
    int32), ``first_aspect``/``second_aspect`` are null in pilot dialogues."""

    messages: list[Message]
    known_entities: list[str]
    focus_entity: str
    dialog_id: Int64
    inferred_steps: bool
    created_time: Int64
    aspects: list[str]
    first_aspect: str | None
    second_aspect: str | None
    shuffle_facts: bool
    related_entities: list[str]
    tag: str
    user_id: str
    assistant_id: str
    is_annotated: bool
    user_dialog_rating: Int64 | None
    user_other_agent_rating: Int64 | None
    assistant_dialog_rating: Int64 | None
    assistant_other_agent_rating: Int64 | None
    reported: bool
    annotated: bool


RATINGS = (
    "user_dialog_rating",
    "user_other_agent_rating",
    "assistant_dialog_rating",
    "assistant_other_agent_rating",
)
"""The four ratings of a dialogue (1 to 5, or null)."""

TOP_KEYS = (
    "dialogs",
    "fold",
    "source_checksum",
    "db_checksum",
    "unfolded_checksum",
    "unfolded_generated_time",
    "generated_time",
)
"""The top-level keys of a split file, in the publisher's order (``fold`` does not always
match the file name: do not rely on it)."""


@cache
def fact_schema() -> pa.Schema:
    """The Arrow schema of the fact database's ``fact`` table (``curiosity_facts``)."""
    return pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("page", pa.string()),
            pa.field("section_idx", pa.int64()),
            pa.field("section_title", pa.string()),
            pa.field("paragraph_idx", pa.int64()),
            pa.field("text", pa.string()),
            pa.field("pageviews", pa.int64()),
        ]
    )


FACTS_TABLE = "curiosity_facts"
"""The side table of the fact database (``wiki_sql.sqlite.db``), when it was built."""


def fact_texts(conversation: Conversation, side: SideLookup) -> dict[int, str]:
    """The text of every fact shown in a conversation, by ``fid``, from the fact database
    (empty when it was not built)."""
    fids = sorted({f["fid"] for t in conversation.turns for f in t.meta.get("facts", ())})
    if not fids:
        return {}
    table = side(FACTS_TABLE, columns=["id", "text"], filters=[("id", "in", fids)])
    if table is None:
        return {}
    return dict(zip(table.column("id").to_pylist(), table.column("text").to_pylist(), strict=True))
