"""``sharegpt``: JSONL of ``{"conversations": [{"from", "value"}...]}``, the layout of ShareGPT
dumps and of the fine-tuning sets that follow it (LLaMA-Factory, Axolotl, FastChat): ``from``
is ``human``, ``gpt``, ``system``, ``function_call`` or ``observation``.

Read as a conversation per record, every message a turn whose speaker is its ``from`` (an
empty ``value`` kept as an empty turn; a null one too, kept null in meta ``content_parts`` as
chat's null content is, and so written back null; a message of no ``value`` written back
with none, as chat's of no ``content``: meta ``content_absent``), the message's other keys in the turn's
meta ``message``, the record's other keys (``id``, ``system``, ``tools``...) the conversation's
meta. Written from one side, as ``chat`` is: the participant seen from speaks as ``gpt``,
everyone else as ``human``; a corpus read from ShareGPT is written back as it was read, and
one read from chat with each message's other keys and the record's own. A key that ShareGPT
names itself (a chat message's ``from`` or ``value``, a chat record's ``conversations``) is
written under ``convbank_keys`` and read back from there under its own name
(:mod:`convbank._keys`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from convbank._keys import apart, beside
from convbank._textio import json_line
from convbank.export._core import Selection, per_part, write_lines
from convbank.export._format import Format, ReadOptions, Rejected
from convbank.export._records import holds_messages, record_conversations
from convbank.export.chat import (
    ABSENT,
    as_read,
    chat_record,
    content_text,
    read_from_chat,
    record_conversation,
)
from convbank.model import Conversation, Participant, Turn

__all__ = ["FORMAT", "ROLES", "SUFFIX", "read_sharegpt", "sharegpt_record", "write_sharegpt"]

SUFFIX = ".sharegpt.jsonl"
"""How each part's file is named: ``{dataset}_{config}_{split}.sharegpt.jsonl``."""

ROLES = {
    "human": "user",
    "gpt": "assistant",
    "system": "system",
    "function_call": "assistant",
    "observation": "tool",
}
"""The chat role of each ShareGPT speaker (any other ``from`` is its own role)."""

_SPEAKERS = f"{', '.join(ROLES)} or any other name"
"""The speakers a message's ``from`` names, as an error says them."""

_FROM = {"user": "human", "assistant": "gpt", "system": "system", "tool": "observation"}
"""The ShareGPT speaker of each chat role, for a corpus read from elsewhere."""

_encode = msgspec.json.Encoder().encode


def sharegpt_record(conv: Conversation, as_participant: str | None = None) -> dict[str, Any]:
    """One conversation as a ShareGPT record: a corpus imported from ShareGPT (or whose
    speakers are all ShareGPT's own) as it was read (its speakers' ``from``, each message's
    keys, the record's keys); any other seen from
    ``as_participant`` (by default the dataset's chat side), through its chat view."""
    if _read_from_sharegpt(conv) or (
        conv.participants and all(p.participant_id in ROLES for p in conv.participants)
    ):
        messages = [beside(as_read(_said(t), t, "value"), t.meta.get("message", {})) for t in conv.turns]
        return beside({"conversations": messages}, conv.meta)
    record = chat_record(conv, as_participant)
    if read_from_chat(conv, record["metadata"]["as"]):  # a chat corpus: its keys, as chat keeps them
        pairs = zip(record["messages"], conv.turns, strict=True)
        messages = [as_read(_from_chat(m, keep=True), t, "value") for m, t in pairs]
        return beside({"conversations": messages}, conv.meta)
    messages = [_from_chat(m, keep=False) for m in record["messages"]]
    return {"id": conv.conversation_id, "conversations": messages, "metadata": record["metadata"]}


def _said(turn: Turn) -> dict[str, Any]:
    """A turn read from ShareGPT as its message's ``from`` and ``value``."""
    return {"from": turn.participant_id, "value": _value(turn)}


def _value(turn: Turn) -> str | None:
    """A turn's text as ShareGPT's ``value``: null where the message read had a null one."""
    return None if "content_parts" in turn.meta and turn.meta["content_parts"] is None else turn.text


def _from_chat(m: dict[str, Any], *, keep: bool) -> dict[str, Any]:
    """A chat message as a ShareGPT one: its role as ``from``, its content's text as ``value``
    and, where ``keep``, its other keys (``name``, ``weight``...), as ShareGPT's are read (one
    named ``from`` or ``value`` under ``convbank_keys``: :func:`~convbank._keys.beside`)."""
    null = keep and m.get("content", "") is None  # a chat corpus's null content stays null
    value = None if null else content_text(m["content"]) or ""
    said = {"from": _FROM.get(m["role"], m["role"]), "value": value}
    return beside(said, apart(m, ("role", "content")) if keep else {})


def _read_from_sharegpt(conv: Conversation) -> bool:
    """Whether ``conv`` belongs to a corpus imported from ShareGPT files (its speakers are
    their ``from``, whatever they are: ``user``, ``tool``, ``human_2``)."""
    from convbank import catalog
    from convbank.datasets._imported import ImportedPresentation

    presentation = catalog.get(conv.dataset).presentation
    return isinstance(presentation, ImportedPresentation) and presentation.read_from("sharegpt")


def write_sharegpt(selection: Selection, directory: Path) -> list[Path]:
    """``{dataset}_{config}_{split}.sharegpt.jsonl``, one record per conversation."""
    return write_lines(
        selection,
        directory,
        SUFFIX,
        lambda conv: [json_line(_encode(sharegpt_record(conv, selection.as_participant)))],
    )


def _conversation(value: Any, number: int, options: ReadOptions) -> Conversation | str:
    if not isinstance(value, dict) or not isinstance(value.get("conversations"), list):
        return 'expected a record with a "conversations" list'
    people: dict[str, Participant] = {}
    turns = []
    for i, m in enumerate(value["conversations"]):
        if not isinstance(m, dict) or not isinstance(m.get("from"), str):
            return f'expected message {i} to be an object with a "from" string'
        if not m["from"]:  # no speaker: say so, and what a speaker is
            return f'expected message {i}\'s "from" to name its speaker ({_SPEAKERS}), not an empty one'
        text = m.get("value")
        if text is None:
            text = ""
        if not isinstance(text, str):
            return f'expected message {i}\'s "value" as a string, not {type(text).__name__}'
        who: str = m["from"]
        people.setdefault(who, Participant(participant_id=who, role=ROLES.get(who) or who))
        rest = apart(m, ("from", "value"))
        meta: dict[str, Any] = {"message": rest} if rest else {}
        if m.get("value", 0) is None:  # null, as chat's null content is kept
            meta["content_parts"] = None
        elif "value" not in m:  # none: written back without one, as chat's missing content is
            meta.update({"content_parts": None, ABSENT: True})
        turns.append(Turn(turn_index=i, participant_id=who, text=text, meta=meta))
    return record_conversation(value, "conversations", people, turns, number=number, options=options)


def read_sharegpt(paths: Sequence[Path], options: ReadOptions) -> Iterator[Conversation | Rejected]:
    """The conversations of ShareGPT files (JSON Lines, a JSON array or one object), one per
    record; its id is ``id``, else made from its content
    (:func:`convbank.export.chat.content_id`)::

        read_sharegpt([Path("sharegpt.json")], ReadOptions(dataset="my_sharegpt"))
    """
    return record_conversations(paths, options, _conversation)


def _sniff_sharegpt(paths: Sequence[Path]) -> bool:
    """JSON files whose first record holds a ``conversations`` list of objects with ``from``."""
    return holds_messages(paths, "conversations", "from")


FORMAT = Format(
    order=55,
    name="sharegpt",
    summary="ShareGPT JSONL (conversations of from/value)",
    writes='`<dataset>_<config>_<split>.sharegpt.jsonl`: `{"conversations": [{"from", "value"}...]}`',
    read_with="LLaMA-Factory, Axolotl, FastChat",
    writer=write_sharegpt,
    plan=per_part(SUFFIX),
    sided=True,
    reader=read_sharegpt,
    sniff=_sniff_sharegpt,
    loses=(
        "of a ShareGPT corpus, nothing; of a chat corpus, a content's parts but its text (each "
        "message's other keys and the record's are kept, a `from`, `value` or `conversations` "
        "under `convbank_keys`); of another, what `chat` loses (one side's view)"
    ),
)
"""The ``sharegpt`` format."""
