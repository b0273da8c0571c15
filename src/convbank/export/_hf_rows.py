"""A row of any Hugging Face dataset with a messages-like column as a conversation: what
:func:`convbank.export.hf.read_hf_dataset` makes of each row (the rows of convbank's own
export are read back by their dataset's raw record instead)."""

from __future__ import annotations

from typing import Any

import msgspec

from convbank.export._format import ReadOptions
from convbank.export._read import an_id, json_cells, non_finite
from convbank.model import Conversation, Participant, Turn

__all__ = ["MESSAGES", "generic_row"]

MESSAGES = ("messages", "conversations", "conversation", "dialog", "dialogue", "turns", "utterances")
"""The columns, in this order, taken as a row's messages."""

_SPEAKER, _TEXT = ("role", "from", "speaker", "author"), ("content", "value", "text", "utterance")


def generic_row(
    row: dict[str, Any], column: str, number: int, options: ReadOptions, unnamed: str
) -> Conversation | str:
    """A conversation from a row with a messages-like column (``{role, content}``,
    ``{from, value}`` or plain strings, said in turn by ``speaker_0`` and ``speaker_1``);
    the row's other columns are its meta, its id ``unnamed`` where it has none (``id``,
    ``conversation_id``: a non-empty text or an integer, as a chat record's; ``True`` or
    ``1.0`` is kept in meta). What is wrong with it otherwise: a messages column that is no
    list (a text, whose letters were taken as turns; None) among it."""
    odd, cells = non_finite(row), json_cells((k, k, v) for k, v in row.items())  # bytes: as table's
    if odd is not None:
        return f"expected finite numbers, not {odd!r} (JSON has no such number)"
    if isinstance(cells, str):
        return cells
    turns: list[Turn] = []
    people: dict[str, Participant] = {}
    if not isinstance(cells[column], list):  # a text's letters, a mapping's keys: never turns
        return f"expected {column!r} as a list of messages, not {type(cells[column]).__name__}"
    for i, m in enumerate(cells[column]):
        speaker: Any
        text: Any
        if isinstance(m, str):
            speaker, text, meta = f"speaker_{i % 2}", m, {}
        elif isinstance(m, dict):
            speaker = next((m[k] for k in _SPEAKER if isinstance(m.get(k), str)), None)
            text = next((m[k] for k in _TEXT if k in m), None)
            meta = {k: v for k, v in m.items() if v is not None and k not in (*_SPEAKER, *_TEXT)}
        else:
            return f"expected messages of {column!r} as objects or strings, not {type(m).__name__}"
        if speaker is None or not isinstance(text, str):
            return f"expected message {i} of {column!r} to have a speaker ({'/'.join(_SPEAKER)}) and a text"
        turns.append(Turn(turn_index=i, participant_id=speaker, text=text, meta=meta))
        people.setdefault(speaker, Participant(participant_id=speaker, role=speaker))
    meta = {k: v for k, v in cells.items() if k != column}
    cid = next((str(meta.pop(k)) for k in ("conversation_id", "id") if an_id(meta.get(k))), unnamed)
    return Conversation(
        dataset=options.dataset,
        config=options.config,
        split=options.split,
        conversation_id=cid,
        source_index=number,
        participants=list(people.values()),
        turns=turns,
        meta=msgspec.json.decode(msgspec.json.encode(meta, enc_hook=str)),
    )
