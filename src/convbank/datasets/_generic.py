"""Checks every dataset must pass: a conversation id, turn order, references, spans and speakers."""

from __future__ import annotations

from collections.abc import Iterator

from convbank.datasets import CheckList, Problem
from convbank.model import Conversation

__all__ = ["CHECKS"]

CHECKS = CheckList(None)
"""The checks of every dataset, run before each dataset's own."""


@CHECKS.check("conversation_id")
def conversation_id(conv: Conversation) -> Iterator[Problem]:
    """A conversation id is not empty (it names the conversation in show, the viewer, exports)."""
    if not conv.conversation_id:
        yield "error", "the conversation id is empty"


@CHECKS.check("turn_indices")
def turn_indices(conv: Conversation) -> Iterator[Problem]:
    """Turn indices are 0, 1, 2, ... in order."""
    for position, turn in enumerate(conv.turns):
        if turn.turn_index != position:
            yield "error", f"turn at position {position} has turn_index {turn.turn_index}"
            return


@CHECKS.check("annotation_turns")
def annotation_turns(conv: Conversation) -> Iterator[Problem]:
    """Every annotation refers to an existing turn."""
    for a in conv.annotations:
        if not 0 <= a.turn_index < len(conv.turns):
            yield (
                "error",
                f"{a.layer} annotation {a.label!r} refers to turn {a.turn_index}, which does not exist",
            )


@CHECKS.check("spans")
def spans(conv: Conversation) -> Iterator[Problem] | None:
    """Span offsets lie inside the turn's text and cut out the quoted text."""
    if all(a.start_char is None and a.end_char is None for a in conv.annotations):
        return None
    return _span_problems(conv)


def _span_problems(conv: Conversation) -> Iterator[Problem]:
    for a in conv.annotations:
        if a.start_char is None and a.end_char is None:
            continue
        where = f"{a.layer} {a.label!r} on turn {a.turn_index}"
        if a.start_char is None or a.end_char is None:
            yield "error", f"{where}: only one of start_char/end_char is set"
            continue
        if not 0 <= a.turn_index < len(conv.turns):
            continue  # reported by annotation_turns
        text = conv.turns[a.turn_index].text
        if not 0 <= a.start_char <= a.end_char <= len(text):
            yield (
                "error",
                f"{where}: span [{a.start_char}, {a.end_char}) is outside the text of length {len(text)}",
            )
            continue
        quoted = a.meta.get("text")
        if quoted is not None and text[a.start_char : a.end_char] != quoted:
            yield (
                "error",
                f"{where}: span [{a.start_char}, {a.end_char}) reads "
                f"{text[a.start_char : a.end_char]!r}, the annotation quotes {quoted!r}",
            )


@CHECKS.check("speakers")
def speakers(conv: Conversation) -> Iterator[Problem]:
    """Every speaker is one of the conversation's participants, each listed once."""
    ids = [p.participant_id for p in conv.participants]
    if len(set(ids)) != len(ids):
        yield "error", f"participants listed twice: {sorted({i for i in ids if ids.count(i) > 1})}"
    known = set(ids)
    for turn in conv.turns:
        if turn.participant_id not in known:
            yield "error", f"turn {turn.turn_index}: speaker {turn.participant_id!r} is not a participant"


@CHECKS.check("silent_participants")
def silent_participants(conv: Conversation) -> Iterator[Problem]:
    """Every participant speaks at least once (reported as information)."""
    spoke = {t.participant_id for t in conv.turns}
    turns = f"{len(conv.turns)} turn" + ("" if len(conv.turns) == 1 else "s")
    for p in conv.participants:
        if p.participant_id not in spoke:
            yield "info", f"{p.participant_id} ({p.role}) never speaks in {turns}"
