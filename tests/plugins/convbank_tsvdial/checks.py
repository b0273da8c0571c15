"""tsvdial's own check, found by ``convbank validate`` through :meth:`TsvDialPresentation.checks`."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

from convbank.datasets import CheckList, Problem
from convbank.model import Conversation

CHECKS = CheckList("tsvdial")


@CHECKS.check("tsvdial.alternation")
def alternation(conv: Conversation) -> Iterator[Problem]:
    """The customer opens and the customer and the agent take turns."""
    if conv.turns and conv.turns[0].participant_id != "customer":
        yield "error", f"the first turn is by {conv.turns[0].participant_id}, not the customer"
    for before, turn in pairwise(conv.turns):
        if before.participant_id == turn.participant_id:
            yield (
                "warning",
                f"turns {before.turn_index} and {turn.turn_index} are both by {turn.participant_id}",
            )
