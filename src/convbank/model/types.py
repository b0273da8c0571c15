"""The four kinds of rows every dataset becomes: conversations, participants, turns, annotations.

These Structs are the one declaration of the unified tables: their columns, types and
order, the conversions between tables and conversations, and every export's fields are
derived from them (:mod:`convbank.model.schema`). A field added here (with a default) is
stored, read, exported and served with no other edit; the datasets that fill it set it in
their mappers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple

import msgspec

from convbank._wording import counted
from convbank.errors import printable

Json = dict[str, Any]
"""A JSON object: the type of every ``meta`` field."""

TurnKind = Literal["message", "action"]

Int32 = Annotated[int, msgspec.Meta(ge=-(2**31), le=2**31 - 1)]
"""An ``int`` stored as a 32-bit column (a position or a count); other ints are 64-bit."""


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

    turn_index: Int32
    participant_id: str
    text: str
    kind: TurnKind = "message"
    meta: Json = msgspec.field(default_factory=dict)


class Annotation(msgspec.Struct):
    """A label on a turn: the whole turn (offsets null) or a character span ``[start_char, end_char)``."""

    turn_index: Int32
    layer: str
    label: str
    start_char: Int32 | None = None
    end_char: Int32 | None = None
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
    def num_turns(self) -> Int32:
        """The number of turns (stored as a column of the ``conversations`` table)."""
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

    def __repr__(self) -> str:
        """One line: where it is from, its id and sizes (``to_dict()`` shows everything).

        >>> convbank.load("casino")["938"]
        <Conversation casino/default/train '938': 2 participants, 13 turns, 0 annotations>
        """
        where = "/".join((self.dataset, self.config, self.split))
        return (
            f"<Conversation {where} {self.conversation_id!r}: "
            f"{counted(len(self.participants), 'participant')}, {counted(len(self.turns), 'turn')}, "
            f"{counted(len(self.annotations), 'annotation')}>"
        )

    def __str__(self) -> str:
        """A short readable summary: the one-line repr, the participants with the start of
        their persona, and the first turns (each cut to one line); a control character in
        any of them (a speaker's id holding ESC) shown as its escape."""
        lines = [repr(self)]
        for p in self.participants:
            persona = f": {_clip(' '.join(p.persona), 70)}" if p.persona else ""
            lines.append(f"  {printable(p.participant_id)} ({printable(p.role)}){persona}")
        shown = self.turns[:6]
        for t in shown:
            labels = [a.label for a in self.annotations if a.turn_index == t.turn_index and a.label]
            tags = f"  [{printable(', '.join(labels))}]" if labels else ""
            lines.append(f"  #{t.turn_index} {printable(t.participant_id)}: {_clip(t.text, 80)}{tags}")
        if len(self.turns) > len(shown):
            lines.append(f"  ... {len(self.turns) - len(shown)} more turns")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The viewer's layout of this conversation, for Jupyter (escaped, no scripts)."""
        from convbank.web.notebook import conversation_html  # upward: pyproject's ignore_imports

        return conversation_html(self)


def _clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis; control
    characters shown as their escapes."""
    flat = " ".join(text.split())
    flat = printable(flat)
    return flat if len(flat) <= width else flat[: width - 1] + "…"
