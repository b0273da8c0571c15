"""PEC: personas, context and the responder."""

from __future__ import annotations

from collections.abc import Iterator

from convbank.datasets import CheckList, Problem
from convbank.model import Conversation

CHECKS = CheckList("pec")


@CHECKS.check("pec.personas")
def personas(conv: Conversation) -> Iterator[Problem]:
    """Every speaker has a persona in persona.txt."""
    missing = [p.participant_id for p in conv.participants if not p.persona]
    if missing:
        yield "warning", f"no persona for {', '.join(repr(m) for m in missing)}"


@CHECKS.check("pec.context")
def context(conv: Conversation) -> Iterator[Problem]:
    """There is a context before the response, and no utterance is empty."""
    if len(conv.turns) < 2:
        yield "error", f"{len(conv.turns)} utterance(s): no context before the response"
    for t in conv.turns:
        if not t.text.strip():
            yield "error", f"turn {t.turn_index} by {t.participant_id!r} is empty"


@CHECKS.check("pec.responder")
def responder(conv: Conversation) -> Iterator[Problem]:
    """The response's speaker differs from the last context speaker."""
    if len(conv.turns) >= 2 and conv.turns[-1].participant_id == conv.turns[-2].participant_id:
        yield "warning", f"{conv.turns[-1].participant_id!r} responds to their own last utterance"
