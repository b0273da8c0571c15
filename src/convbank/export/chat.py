"""``chat``: JSONL for fine-tuning chat models, one conversation seen from one participant.

Each line is ``{"messages": [{"role", "content"}...], "metadata": {...}}``. The participant
we see from (``--as``, else the dataset's :meth:`~convbank.datasets.Presentation.chat_side`)
speaks as ``assistant``, everyone else as ``user``; the system message carries what that
participant privately knew (:meth:`~convbank.datasets.Presentation.chat_system`), each turn is
written by :meth:`~convbank.datasets.Presentation.chat_content` and the metadata's ``outcome`` comes
from :meth:`~convbank.datasets.Presentation.chat_outcome`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from convbank import catalog
from convbank.datasets import Dataset
from convbank.errors import ExportError
from convbank.export._core import Selection, per_part, write_lines
from convbank.export._format import Format
from convbank.model import Conversation

__all__ = ["FORMAT", "SUFFIX", "chat_record", "side", "write_chat"]

SUFFIX = ".chat.jsonl"
"""How each part's file is named: ``{dataset}_{config}_{split}.chat.jsonl``."""

_encode = msgspec.json.Encoder().encode


def side(dataset: Dataset, conv: Conversation, as_participant: str | None) -> str:
    """The participant a conversation is seen from: ``as_participant`` (checked), else the
    dataset's choice."""
    if as_participant is None:
        return dataset.presentation.chat_side(conv)
    if all(p.participant_id != as_participant for p in conv.participants):
        known = ", ".join(p.participant_id for p in conv.participants)
        raise ExportError(
            f"{conv.dataset} conversation {conv.conversation_id} has no participant "
            f"{as_participant!r} (--as); its participants: {known}"
        )
    return as_participant


def chat_record(
    conv: Conversation, as_participant: str | None = None, context: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """One conversation as a chat-format record seen from ``as_participant``; ``context`` is
    what the dataset's side tables say about it (:meth:`convbank.query.Corpus.context`)."""
    dataset = catalog.get(conv.dataset)
    me = side(dataset, conv, as_participant)
    return {
        "messages": dataset.presentation.chat_messages(conv, me, context or {}),
        "metadata": {
            "dataset": conv.dataset,
            "config": conv.config,
            "split": conv.split,
            "conversation_id": conv.conversation_id,
            "as": me,
            "role": conv.participant(me).role,
            "outcome": dataset.presentation.chat_outcome(conv, me),
        },
    }


def write_chat(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.chat.jsonl``, one record per conversation, seen from
    ``selection.as_participant``."""

    def lines(conv: Conversation) -> list[bytes]:
        record = chat_record(conv, selection.as_participant, selection.corpus.context(conv))
        return [_encode(record) + b"\n"]

    return write_lines(selection, directory, SUFFIX, lines)


FORMAT = Format(
    order=50,
    name="chat",
    summary="chat-format JSONL for fine-tuning",
    writes='`<dataset>_<config>_<split>.chat.jsonl`: `{"messages": [...], "metadata": {...}}`',
    read_with="fine-tuning tools",
    writer=write_chat,
    plan=per_part(SUFFIX),
    sided=True,
)
"""The ``chat`` format."""
