"""The four kinds of rows every dataset becomes: conversations, participants, turns, annotations."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import msgspec

Json = dict[str, Any]
"""A JSON object: the type of every ``meta`` field."""

TurnKind = Literal["message", "action"]


class Part(NamedTuple):
    """A stored config and split of a dataset: what the bank keeps one file of per table.

    The one representation of a (config, split) pair in convbank: datasets select parts
    (:meth:`convbank.datasets.Dataset.parts`), the manifest lists them, a corpus reads them.
    """

    config: str
    split: str


class Participant(msgspec.Struct):
    """Someone who speaks in a conversation: a crowd worker, a user, a bot, a Reddit author."""

    participant_id: str
    role: str
    persona: list[str] = msgspec.field(default_factory=list)
    meta: Json = msgspec.field(default_factory=dict)


class Turn(msgspec.Struct):
    """One message or action, at position ``turn_index`` (0-based) of its conversation."""

    turn_index: int
    participant_id: str
    text: str
    kind: TurnKind = "message"
    meta: Json = msgspec.field(default_factory=dict)


class Annotation(msgspec.Struct):
    """A label on a turn: the whole turn (offsets null) or a character span ``[start_char, end_char)``."""

    turn_index: int
    layer: str
    label: str
    start_char: int | None = None
    end_char: int | None = None
    meta: Json = msgspec.field(default_factory=dict)


class Conversation(msgspec.Struct):
    """A conversation of any dataset, with its participants, turns and annotations."""

    dataset: str
    config: str
    split: str
    conversation_id: str
    source_index: int
    participants: list[Participant] = msgspec.field(default_factory=list)
    turns: list[Turn] = msgspec.field(default_factory=list)
    annotations: list[Annotation] = msgspec.field(default_factory=list)
    meta: Json = msgspec.field(default_factory=dict)

    @property
    def num_turns(self) -> int:
        """The number of turns."""
        return len(self.turns)

    def participant(self, participant_id: str) -> Participant:
        """The participant with this id (``KeyError`` if there is none)."""
        for p in self.participants:
            if p.participant_id == participant_id:
                return p
        raise KeyError(participant_id)

    def annotations_of(self, turn_index: int, layer: str | None = None) -> list[Annotation]:
        """The annotations of one turn, optionally of one layer only, in stored order."""
        return [
            a for a in self.annotations if a.turn_index == turn_index and (layer is None or a.layer == layer)
        ]

    def to_dict(self) -> Json:
        """The conversation as plain JSON-ready data (with ``num_turns``)."""
        data: Json = msgspec.to_builtins(self)
        data["num_turns"] = self.num_turns
        return data
