"""``chat``: JSONL for fine-tuning chat models, one conversation seen from one participant.

Each line is ``{"messages": [{"role", "content"}...], "metadata": {...}}``. The participant
we see from (``--as``, else the dataset's :meth:`~convbank.datasets.Presentation.chat_side`)
speaks as ``assistant``, everyone else as ``user``; the system message carries what that
participant privately knew (:meth:`~convbank.datasets.Presentation.chat_system`), each turn is
written by :meth:`~convbank.datasets.Presentation.chat_content` and the metadata's ``outcome`` comes
from :meth:`~convbank.datasets.Presentation.chat_outcome`. A corpus imported from chat, seen
from the side it was read from, is written as it was read: each record's messages, then its
own keys (``id``, ``tools``...), as a ShareGPT corpus is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convbank import catalog
from convbank._keys import apart, beside
from convbank._textio import json_line
from convbank.datasets import Dataset
from convbank.errors import ExportError
from convbank.export._core import Selection, per_part, write_lines
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._read import an_id
from convbank.export._records import holds_messages, record_conversations
from convbank.model import Conversation, Participant, Turn

__all__ = [
    "ABSENT",
    "FORMAT",
    "SUFFIX",
    "as_read",
    "chat_record",
    "content_id",
    "content_text",
    "read_chat",
    "read_from_chat",
    "record_conversation",
    "side",
    "write_chat",
]

SUFFIX = ".chat.jsonl"
"""How each part's file is named: ``{dataset}_{config}_{split}.chat.jsonl``."""

ABSENT = "content_absent"
"""The turn meta key (true) of a message read with no content at all (chat's ``content``,
ShareGPT's ``value``), which :func:`as_read` writes back without one: a missing content is
neither a null nor an empty one."""

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
    what the dataset's side tables say about it (:meth:`convbank.query.Corpus.context`). A
    conversation of no participants (an imported record of no messages) is seen from nobody:
    no messages, ``as`` and ``role`` null."""
    dataset = catalog.get(conv.dataset)
    if not conv.participants and as_participant is None:
        return {
            "messages": [],
            "metadata": {
                "dataset": conv.dataset,
                "config": conv.config,
                "split": conv.split,
                "conversation_id": conv.conversation_id,
                "as": None,
                "role": None,
                "outcome": {},
            },
        }
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
        if read_from_chat(conv, record["metadata"]["as"]):
            messages = [as_read(m, t, "content") for m, t in zip(record["messages"], conv.turns, strict=True)]
            record = beside({"messages": messages}, conv.meta)
        return [json_line(_encode(record))]

    return write_lines(selection, directory, SUFFIX, lines)


def as_read(message: dict[str, Any], turn: Turn, key: str) -> dict[str, Any]:
    """``message`` as the message ``turn`` was read from: without ``key`` (its ``content``,
    ShareGPT's ``value``) where that had none (meta :data:`ABSENT`), so that a message of no
    content is written back as one, never as a null or an empty one.

    >>> turn = Turn(turn_index=0, participant_id="user", text="", meta={ABSENT: True})
    >>> as_read({"role": "user", "content": None}, turn, "content")
    {'role': 'user'}
    """
    if not turn.meta.get(ABSENT):
        return message
    return {k: v for k, v in message.items() if k != key}


def read_from_chat(conv: Conversation, me: str | None) -> bool:
    """Whether ``conv`` is written as it was read: a conversation imported from chat, seen
    from the side it was read from, whose record's own keys (``id``, ``tools``...) are its
    meta, written back beside its messages (as a ShareGPT corpus's are); what ``chat`` and
    ``sharegpt`` ask before writing a record. Example:
    ``read_from_chat(conv, chat_record(conv)["metadata"]["as"])``."""
    from convbank.datasets._imported import ImportedPresentation

    presentation = catalog.get(conv.dataset).presentation
    return (
        isinstance(presentation, ImportedPresentation)
        and presentation.read_from("chat")
        and (not conv.participants or me == presentation.chat_side(conv))
    )


def content_id(record: Any) -> str:
    """A stable id for a record that names none: the first 16 hex digits of the sha256 of its
    JSON (keys sorted), so that importing the same file again gives the same ids and an exact
    duplicate the same id.

    >>> content_id({"messages": [{"role": "user", "content": "hi"}]})
    '19e21ad5462e808b'
    """
    text = msgspec.json.encode(record, order="sorted")
    return hashlib.sha256(text).hexdigest()[:16]


def content_text(content: Any) -> str | None:
    """A message's content as its turn's text: a string as it is; typed parts, their text
    parts joined by newlines (the parts are kept whole in meta); null, empty."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "\n".join(str(p["text"]) for p in content if p.get("type") == "text" and "text" in p)
    return None


def _chat_conversation(value: Any, number: int, options: ReadOptions) -> Conversation | str:
    """One chat record as a conversation (every message a turn), or what is wrong with it."""
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return 'expected a record with a "messages" list'
    people: dict[str, Participant] = {}
    turns = []
    for i, m in enumerate(value["messages"]):
        role = m.get("role") if isinstance(m, dict) else None
        if not isinstance(role, str) or not role:
            return f'expected message {i} to be an object with a "role" string'
        content = m.get("content")
        plain = isinstance(content, str)
        text = content if plain else content_text(content)
        if text is None:
            return f"expected message {i}'s content as a string or a list of typed parts"
        name = m.get("name")
        pid = name if isinstance(name, str) and name else role
        known = people.get(pid)
        if known is None:
            known = people[pid] = Participant(participant_id=pid, role=role)
        elif known.role != role:
            return f"expected speaker {pid!r} to keep one role (message {i} is {role}, earlier {known.role})"
        meta: dict[str, Any] = {}
        if not plain:
            meta["content_parts"] = content
        if "content" not in m:  # no content key: written back without one, not as null
            meta[ABSENT] = True
        rest = apart(m, ("role", "content"))
        if rest:
            meta["message"] = rest
        turns.append(Turn(turn_index=i, participant_id=pid, text=text, meta=meta))
    return record_conversation(value, "messages", people, turns, number=number, options=options)


def record_conversation(
    value: dict[str, Any],
    key: str,
    people: dict[str, Participant],
    turns: list[Turn],
    *,
    number: int,
    options: ReadOptions,
) -> Conversation:
    """The conversation of a record whose ``key`` list became ``people`` and ``turns``: the
    record's other keys are its meta; its id is ``id`` (or convbank's own
    ``metadata.conversation_id``), else :func:`content_id`; its config and split convbank's
    ``metadata`` ones, else ``options``'."""
    meta = apart(value, (key,))
    ours: dict[str, Any] = meta["metadata"] if isinstance(meta.get("metadata"), dict) else {}
    given = value.get("id", ours.get("conversation_id"))
    return Conversation(
        dataset=options.dataset,
        config=str(ours.get("config") or options.config),
        split=str(ours.get("split") or options.split),
        conversation_id=str(given) if an_id(given) else content_id(value),
        source_index=number,
        participants=list(people.values()),
        turns=turns,
        meta=meta,
    )


def read_chat(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of chat-format files (``{"messages": [{"role", "content"}...]}``:
    OpenAI fine-tuning files, Hugging Face chat datasets, what ``export --format chat``
    writes), as JSON Lines, a JSON array, one object or a Parquet file's rows. Every message
    is a turn, the system message included; its speaker is its ``name``, else its role; a
    content given as typed parts is kept whole (meta ``content_parts``; the text is its text
    parts), and a message's other keys (``name``, ``tool_calls``, ``tool_call_id``...) in
    meta ``message``. The record's other keys (``id``, ``tools``, ``metadata``...) are the
    conversation's meta; its id is ``id`` (or convbank's ``metadata.conversation_id``), else
    made from its content (:func:`content_id`)::

        read_chat([Path("train.jsonl")], ReadOptions(dataset="my_chats"))
    """
    return record_conversations(paths, options, _chat_conversation)


def _sniff_chat(paths: Sequence[Path]) -> bool:
    """JSON files whose first record holds a ``messages`` list of objects with a ``role``."""
    return holds_messages(paths, "messages", "role")


FORMAT = Format(
    order=50,
    name="chat",
    summary="chat-format JSONL for fine-tuning",
    writes='`<dataset>_<config>_<split>.chat.jsonl`: `{"messages": [...], "metadata": {...}}`',
    read_with="fine-tuning tools",
    writer=write_chat,
    plan=per_part(SUFFIX),
    sided=True,
    reader=read_chat,
    sniff=_sniff_chat,
    loses="one side's view: speakers as `user` and `assistant` (the participant seen from and "
    "everyone else), a system message written for that side, no annotations, no participant "
    "persona or meta; of a chat corpus, nothing (every message is a turn, its keys kept)",
)
"""The ``chat`` format."""
